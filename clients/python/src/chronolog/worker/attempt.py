"""One attempt on this worker: waits for its start permission when it must, runs its function
in a process of its own (forked from the warm forkserver), stops it when told to (its process
group: the function's own subprocesses too), and says how it ended."""

from __future__ import annotations

import hashlib
import json
import multiprocessing.process
import os
import signal
import threading
import time
from typing import Any, Callable

from .child import spare

TAIL_BYTES = 4096
_STARTING = threading.Lock()


def now_iso() -> str:
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}Z"


class Spares:
    """Processes forked ahead of need from the forkserver (where the ``--import`` modules are
    loaded), each waiting for an attempt: taking one costs a pipe write, not a fork. One is
    forked again in the background each time one is taken."""

    def __init__(self, mp: Any, keep: int) -> None:
        self.mp = mp
        self.keep = keep
        self.ready: list[tuple[Any, Any]] = []
        self.lock = threading.Lock()
        for _ in range(keep):
            self._refill()

    def _fork(self) -> tuple[Any, Any]:
        r, w = self.mp.Pipe(duplex=False)
        proc = self.mp.Process(target=spare, args=(r,), daemon=False)
        with _STARTING:
            proc.start()
            # multiprocessing's own bookkeeping polls every child at each start: from another
            # thread, that would read this one's exit status before its join does.
            multiprocessing.process._children.discard(proc)  # type: ignore[attr-defined]
        r.close()
        return proc, w

    def _refill(self) -> None:
        got = self._fork()
        with self.lock:
            self.ready.append(got)

    def take(self) -> tuple[Any, Any]:
        with self.lock:
            got = self.ready.pop(0) if self.ready else None
        threading.Thread(target=self._refill, daemon=True).start()
        while got is not None and got[0].exitcode is not None:
            # A spare that died meanwhile (killed from outside): the next, or a new one.
            with self.lock:
                got = self.ready.pop(0) if self.ready else None
        return got if got is not None else self._fork()


class Attempt:
    def __init__(
        self,
        cmd: dict[str, Any],
        worker_id: str,
        out_dir: str,
        spares: "Spares",
        push: Callable[[dict[str, Any]], None],
        done: Callable[["Attempt"], None],
    ) -> None:
        self.cmd = cmd
        self.token: str = cmd["token"]
        self.worker_id = worker_id
        self.spares = spares
        self.push = push
        self.done = done
        self.output_path = os.path.join(out_dir, f"{self.token}.log")
        self.result_path = os.path.join(out_dir, f"{self.token}.result")
        self.lease = float(cmd.get("leaseSeconds") or 30)
        self.idempotent = cmd.get("awaitProceed") is not True
        self.proceeded = threading.Event()
        self.abort: str | None = None
        self.interrupted = False
        self.proc: Any = None
        self.pid: int | None = None
        self.lock = threading.Lock()
        self.last_heartbeat = time.monotonic()
        self.started_at = time.monotonic()
        self.state = "queued"
        self.reported_start = False
        self.received = time.time()
        # When it reached this worker: its silence is counted from then at the earliest.
        self.arrived = time.monotonic()

    def base(self, kind: str) -> dict[str, Any]:
        c = self.cmd
        return {
            "kind": kind,
            "token": self.token,
            "attempt": c["attempt"],
            "instanceStream": c["instanceStream"],
            "workerId": self.worker_id,
            "at": now_iso(),
        }

    def heartbeat_due(self) -> bool:
        if self.state not in ("waiting", "running"):
            return False
        every = max(0.5, self.lease / 3)
        if time.monotonic() - self.last_heartbeat >= every:
            self.last_heartbeat = time.monotonic()
            return True
        return False

    def proceed(self) -> None:
        self.proceeded.set()

    def cancel(self, reason: str, grace: float = 2.0, interrupted: bool = False) -> None:
        """Stops it: SIGTERM to its process group (the function is interrupted with Cancelled),
        SIGKILL after ``grace`` seconds (at once with 0)."""
        with self.lock:
            if self.abort is not None:
                return
            self.abort = reason
            self.interrupted = interrupted
            pid = self.pid
        self.proceeded.set()
        if pid is None:
            return
        if grace <= 0:
            self._signal(pid, signal.SIGKILL)
            return
        self._signal(pid, signal.SIGTERM)
        t = threading.Timer(grace, lambda: self._signal(pid, signal.SIGKILL))
        t.daemon = True
        t.start()

    def _signal(self, pid: int, sig: int) -> None:
        if self.proc is not None and self.proc.exitcode is not None:
            return
        try:
            os.killpg(pid, sig)
        except OSError:
            try:
                os.kill(pid, sig)
            except OSError:
                pass

    def run(self) -> None:
        """The attempt's life, on a thread of its own."""
        self.state = "waiting"
        self.started_at = time.monotonic()
        self.last_heartbeat = time.monotonic()
        # One that must wait for its start permission says it started first; another says so
        # once its function is on its way (the start, not the report, is what waits on nothing).
        if not self.idempotent:
            self._report_started()
        report: dict[str, Any]
        try:
            report = self._run()
        except Exception as error:  # the worker's own trouble with this attempt
            report = self._failed("exception", f"the worker could not run the attempt: {error}", None)
        self.state = "done"
        for p in (self.result_path,):
            try:
                os.unlink(p)
            except OSError:
                pass
        self.push(report)
        self.done(self)

    def _report_started(self) -> None:
        if self.reported_start:
            return
        self.reported_start = True
        started = self.base("started")
        started["pid"] = os.getpid()
        started["outputPath"] = self.output_path
        self.push(started)

    def _run(self) -> dict[str, Any]:
        if not self.idempotent:
            self.proceeded.wait()
        op = self.cmd.get("operator") or {}
        if self.abort is not None or op.get("type") != "python":
            self._report_started()
        if self.abort is not None:
            return self._failed(*self._abort_error(), None)
        if op.get("type") != "python":
            with open(self.output_path, "ab") as f:
                f.write(
                    f"this Python worker runs python tasks only; a {op.get('type')} task belongs on a "
                    "queue a Node worker (chronolog worker) serves\n".encode()
                )
            return self._failed(
                "exception",
                f"a Python worker runs python tasks only, not {op.get('type')} tasks: serve queue "
                f"{self.cmd.get('queue')} with a Node worker (chronolog worker) for them",
                None,
            )
        if self.cmd.get("secrets"):
            # Secrets are resolved and masked by the Node worker only: running without them, or
            # with their values unmasked in the output, would be worse than not running.
            self._report_started()
            names = ", ".join(sorted(self.cmd["secrets"]))
            message = (
                f"this Python worker does not resolve secrets (the task declares {names}): "
                "read them in the function from where they are kept, or run the task on a Node worker"
            )
            with open(self.output_path, "ab") as f:
                f.write(f"{message}\n".encode())
            return self._failed("exception", message, None)
        spec = {
            "function": op["function"],
            "args": op.get("args") or {},
            "task": self.cmd.get("taskKey", ""),
            "logical_date": self.cmd["logicalDate"],
            "attempt": self.cmd["attempt"],
            "token": self.token,
            "env": self.cmd.get("env") or {},
            "output_path": self.output_path,
            "result_path": self.result_path,
            "deadline": None,
            "received": self.received,
        }
        with self.lock:
            if self.abort is not None:
                return self._failed(*self._abort_error(), None)
            self.state = "running"
            self.proc, conn = self.spares.take()
            self.pid = self.proc.pid
            conn.send(spec)
            conn.close()
        self._report_started()
        self.proc.join()
        code = self.proc.exitcode
        # What the function left running in its process group ends with the attempt.
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            self.proc.close()
        except Exception:
            pass
        result: dict[str, Any] | None = None
        try:
            with open(self.result_path, encoding="utf-8") as f:
                result = json.load(f)
        except (OSError, ValueError):
            result = None
        if self.abort is not None:
            return self._failed(*self._abort_error(), code)
        if result is not None and result.get("ok") and code == 0:
            return self._succeeded(code)
        if result is not None and not result.get("ok"):
            return self._failed("exception", str(result.get("message") or "failed"), code)
        if code is not None and code < 0:
            name = signal.Signals(-code).name
            return self._failed("signal", f"the attempt's process was killed by {name}", None)
        return self._failed("exit_code", f"the attempt's process exited with code {code}", code)

    def _abort_error(self) -> tuple[str, str]:
        reason = self.abort or "cancelled"
        return ("interrupted", reason) if self.interrupted else ("exception", f"cancelled: {reason}")

    def _end(self, kind: str, code: int | None) -> dict[str, Any]:
        r = self.base(kind)
        r["durationMs"] = int((time.monotonic() - self.started_at) * 1000)
        r["exitCode"] = code
        r["stdoutTail"] = ""
        r["stderrTail"] = ""
        if os.path.exists(self.output_path):
            digest = hashlib.sha256()
            size = 0
            tail = b""
            with open(self.output_path, "rb") as f:
                while True:
                    chunk = f.read(1 << 20)
                    if not chunk:
                        break
                    digest.update(chunk)
                    size += len(chunk)
                    tail = (tail + chunk)[-TAIL_BYTES:]
            r["stdoutTail"] = tail.decode("utf-8", "replace")
            r["outputFile"] = {"path": self.output_path, "bytes": size, "sha256": digest.hexdigest(), "cutBytes": 0}
        return r

    def _succeeded(self, code: int | None) -> dict[str, Any]:
        return self._end("succeeded", code)

    def _failed(self, kind: str, message: str, code: int | None) -> dict[str, Any]:
        r = self._end("failed", code)
        r["error"] = {"kind": kind, "message": message}
        return r
