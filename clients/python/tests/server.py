"""A real Chronolog for the tests: the built CLI's ``up`` (scheduler, workers and HTTP API) on
an ephemeral loopback port, with a data directory of its own and tokens made by the CLI."""

from __future__ import annotations

import getpass
import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable, Sequence, TypeVar

T = TypeVar("T")

ROOT = Path(__file__).resolve().parents[3]
CLI = ROOT / "services" / "cli" / "bin" / "chronolog.mjs"
NODE = os.environ.get("CHRONOLOG_NODE", shutil.which("node") or "node")


def cli_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("CHRONOLOG_RUN_AS", getpass.getuser())
    env["CHRONOLOG_LOG_FORMAT"] = "json"
    env["CHRONOLOG_LOG_LEVEL"] = "info"
    env.pop("CHRONOLOG_HTTP", None)
    return env


class Chronolog:
    """A data directory, and the ``chronolog`` process serving it (once started)."""

    def __init__(self, label: str) -> None:
        if not (ROOT / "services" / "cli" / "dist" / "main.js").exists():
            raise RuntimeError(f"the CLI is not built ({CLI}): run `npx tsc -b` at the repository's root")
        self.dir = tempfile.mkdtemp(prefix=f"chronolog-py-{label}-")
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""
        self.lines: list[str] = []

    def run(self, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
        """The CLI run to completion on this data directory."""
        return subprocess.run(
            [NODE, str(CLI), "--data-dir", self.dir, *args],
            input=input,
            capture_output=True,
            text=True,
            env=cli_env(),
            timeout=120,
        )

    def token(self, name: str, scope: str, *projects: str) -> str:
        extra = [a for p in projects for a in ("--project", p)]
        r = self.run("token", "create", name, "--scope", scope, *extra)
        if r.returncode != 0:
            raise RuntimeError(f"token create {name}: {r.returncode} {r.stderr}")
        return r.stdout.strip()

    def start(self, args: Sequence[str] = ("up", "--workers", "1", "--reconcile-ms", "200", "--grace", "0")) -> str:
        """Starts the server and answers its URL, once its log says where the API listens."""
        self.proc = subprocess.Popen(
            [NODE, str(CLI), "--data-dir", self.dir, *args, "--http", "127.0.0.1:0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=cli_env(),
        )
        found = threading.Event()

        def read() -> None:
            assert self.proc is not None and self.proc.stdout is not None
            for raw in self.proc.stdout:
                line = raw.decode("utf-8", "replace").rstrip("\n")
                self.lines.append(line)
                if '"api listening"' in line and not found.is_set():
                    try:
                        self.url = json.loads(line)["url"]
                        found.set()
                    except (ValueError, KeyError):
                        pass

        threading.Thread(target=read, daemon=True).start()
        deadline = time.monotonic() + 120
        while not found.wait(0.2):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("chronolog did not listen:\n" + "\n".join(self.lines[-40:]))
        return self.url

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(30)
        if self.proc is not None and self.proc.stdout is not None:
            self.proc.stdout.close()
        self.proc = None
        shutil.rmtree(self.dir, ignore_errors=True)


class Proxy:
    """A TCP proxy on a loopback port in front of the server, whose links the tests cut:
    ``cut()`` closes every open connection and refuses new ones until ``restore()``. Its port
    is known at once (the server must allow it as a Host: ``--allow-host 127.0.0.1:PORT``);
    ``target`` is set once the server listens."""

    def __init__(self) -> None:
        self.target: tuple[str, int] | None = None
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.server.getsockname()[1]
        self.open: list[socket.socket] = []
        self.lock = threading.Lock()
        self.refusing = False
        self.accepted = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            with self.lock:
                if self.refusing or self.target is None:
                    client.close()
                    continue
                self.accepted += 1
                try:
                    upstream = socket.create_connection(self.target)
                except OSError:
                    client.close()
                    continue
                self.open += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def cut(self) -> None:
        with self.lock:
            self.refusing = True
            for s in self.open:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()
            self.open = []

    def restore(self) -> None:
        with self.lock:
            self.refusing = False

    def close(self) -> None:
        self.cut()
        self.server.close()


def wait_for(what: str, check: Callable[[], T], timeout: float = 60.0, every: float = 0.1) -> T:
    """Polls ``check()`` until it answers something true, and answers that."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(every)
