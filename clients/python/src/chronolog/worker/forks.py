"""The warm interpreter attempts' processes are forked from: a process of its own, started with
the worker, that has imported ``chronolog.worker.child`` and every ``--import`` module once.
Asked over a Unix socket (with the pipes the new process is to use, passed as descriptors), it
forks; the child goes straight to waiting for its attempt (``child.spare``), with nothing of a
process start to do. The server reaps its children and writes each one's end (its exit code, or
minus the signal that killed it) to a pipe of that child's, which the worker watches.

The server ends when the worker does (its socket closes); every process it forked is killed
then (``PR_SET_PDEATHSIG``, on Linux). One fork costs a message each way, the child's
bootstrap nothing: measured against ``multiprocessing``'s forkserver, whose children unpickle
their process object and preparation data and run its bootstrap, a quarter less CPU an attempt.
"""

from __future__ import annotations

import gc
import json
import os
import selectors
import signal
import socket
import struct
import subprocess
import sys
import threading
from typing import Any

_PID = struct.Struct("q")
_STATUS = struct.Struct("i")
#: The descriptors a fork request carries: the child's command pipe (read end), its stdout and
#: stderr (write ends) and its status pipe (write end, kept by the server).
_FDS = 4


class ForkServerGone(RuntimeError):
    """The fork server is not there any more (killed from outside, or the worker stopping)."""


class Forked:
    """A process the server forked, as the worker sees it: its pid, a descriptor readable once it
    has ended (``sentinel``), and its exit code once known (minus the signal's number when a
    signal killed it)."""

    def __init__(self, pid: int, status_fd: int) -> None:
        self.pid = pid
        self.sentinel = status_fd
        self._code: int | None = None
        self._lock = threading.Lock()

    def _poll(self) -> None:
        """Reads its end if it is there to read, without waiting."""
        with self._lock:
            if self._code is not None or self.sentinel < 0:
                return
            ready = selectors.DefaultSelector()
            try:
                ready.register(self.sentinel, selectors.EVENT_READ)
                if not ready.select(0):
                    return
            finally:
                ready.close()
            data = b""
            while len(data) < _STATUS.size:
                got = os.read(self.sentinel, _STATUS.size - len(data))
                if not got:
                    break
                data += got
            # No status at all: the server itself ended, and took its children with it.
            self._code = _STATUS.unpack(data)[0] if len(data) == _STATUS.size else -signal.SIGKILL

    @property
    def exitcode(self) -> int | None:
        self._poll()
        return self._code

    def join(self) -> int:
        """Waits for its end (without holding what ``exitcode`` takes: a signal may be sent to it
        meanwhile)."""
        while self._code is None and self.sentinel >= 0:
            ready = selectors.DefaultSelector()
            try:
                ready.register(self.sentinel, selectors.EVENT_READ)
                ready.select(1.0)
            except (OSError, ValueError):
                break
            finally:
                ready.close()
            self._poll()
        return self._code if self._code is not None else -signal.SIGKILL

    def close(self) -> None:
        with self._lock:
            if self.sentinel >= 0:
                os.close(self.sentinel)
                self.sentinel = -1


def keep_from_same_user() -> bool:
    """Makes this process not dumpable (Linux's ``PR_SET_DUMPABLE`` 0), as are the children it
    forks from now on (until one runs another program, which is dumpable again): another process
    of the same user, a function of another attempt say, can no longer read its memory or its
    environment as it started, or attach to it (a debugger or a profiler cannot either); nor can
    it dump core. Its command line stays readable by anyone, as every process's is. Says whether
    it could (not on other systems)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0) == 0  # PR_SET_DUMPABLE
    except (OSError, AttributeError):
        return False


class ForkServer:
    def __init__(self, imports: list[str]) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        env = dict(os.environ)
        # The worker's token is not its functions': none of them finds it in its environment.
        env.pop("CHRONOLOG_TOKEN", None)
        # The server's interpreter finds what this one finds (the working directory and
        # PYTHONPATH the worker was started with, and what it added).
        env["PYTHONPATH"] = os.pathsep.join(p or os.getcwd() for p in sys.path)
        flags = getattr(subprocess, "_args_from_interpreter_flags", lambda: [])()
        code = "from chronolog.worker.forks import serve; serve()"
        try:
            self.proc = subprocess.Popen(
                [sys.executable, *flags, "-c", code, str(theirs.fileno()), json.dumps(imports)],
                pass_fds=[theirs.fileno()],
                env=env,
                stdin=subprocess.DEVNULL,
                close_fds=True,
            )
        finally:
            theirs.close()
        self.sock = ours
        self.lock = threading.Lock()
        ready = self._recv_exactly(1)
        if ready != b"R":
            rest = self._recv_all()
            self.proc.wait()
            raise RuntimeError(f"the warm interpreter did not start: {(ready + rest).decode('utf-8', 'replace')}")

    def _recv_exactly(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            got = self.sock.recv(n - len(data))
            if not got:
                return data
            data += got
        return data

    def _recv_all(self) -> bytes:
        chunks = []
        while True:
            got = self.sock.recv(65536)
            if not got:
                return b"".join(chunks)
            chunks.append(got)

    def fork(self, command: int, stdout: int, stderr: int) -> Forked:
        """A new process, waiting for its attempt on ``command`` (a pipe's read end) with
        ``stdout`` and ``stderr`` as its own; the caller closes its copies of the three."""
        status_r, status_w = os.pipe()
        try:
            with self.lock:
                try:
                    socket.send_fds(self.sock, [b"F"], [command, stdout, stderr, status_w])
                    raw = self._recv_exactly(_PID.size)
                except OSError as error:
                    raise ForkServerGone(f"the warm interpreter is gone: {error}") from error
        except BaseException:
            os.close(status_r)
            raise
        finally:
            os.close(status_w)
        if len(raw) != _PID.size:
            os.close(status_r)
            raise ForkServerGone(f"the warm interpreter is gone (exit code {self.proc.poll()})")
        pid = _PID.unpack(raw)[0]
        if pid <= 0:
            os.close(status_r)
            raise OSError(-pid, f"the warm interpreter could not fork: {os.strerror(-pid)}")
        return Forked(pid, status_r)

    def close(self) -> None:
        try:
            self.sock.close()
        finally:
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def serve() -> None:
    """The server's process: ``python -c '...serve()' FD IMPORTS``."""
    sock = socket.socket(fileno=int(sys.argv[1]))
    try:
        import importlib

        from . import child

        for name in json.loads(sys.argv[2]):
            importlib.import_module(name)
    except BaseException:
        import traceback

        sock.sendall(b"E" + traceback.format_exc().encode("utf-8", "replace"))
        sys.exit(1)
    # Its children, each an attempt's function with its secrets, cannot read one another.
    keep_from_same_user()
    # What the imports made stays for the server's life: kept out of the collector's sight, a
    # child's first collections do not walk it (and copy each page they touch).
    gc.collect()
    gc.freeze()
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    # A signal to the worker's process group (a terminal's ^C, a service manager's SIGTERM) is
    # the worker's to act on: it stops its attempts in its own time, and this server ends with it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    status: dict[int, int] = {}
    me = os.getpid()
    sel = selectors.DefaultSelector()
    sel.register(sock, selectors.EVENT_READ, "request")
    sel.register(wake_r, selectors.EVENT_READ, "child")
    sock.sendall(b"R")
    while True:
        for key, _ in sel.select():
            if key.data == "child":
                _reap(wake_r, status)
                continue
            try:
                msg, fds, _, _ = socket.recv_fds(sock, 16, _FDS)
            except OSError:
                msg, fds = b"", []
            if not msg:
                # The worker is gone: so is every process forked here (they die with this one).
                os._exit(0)
            if msg != b"F" or len(fds) != _FDS:
                for fd in fds:
                    os.close(fd)
                sock.sendall(_PID.pack(-22))  # EINVAL
                continue
            command, stdout, stderr, status_w = fds
            try:
                pid = os.fork()
            except OSError as error:
                for fd in fds:
                    os.close(fd)
                sock.sendall(_PID.pack(-(error.errno or 11)))
                continue
            if pid == 0:
                code = 70
                try:
                    sock.close()
                    os.close(status_w)
                    for fd in (wake_r, wake_w, *status.values()):
                        os.close(fd)
                    signal.set_wakeup_fd(-1)
                    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                    signal.signal(signal.SIGINT, signal.SIG_DFL)
                    signal.signal(signal.SIGTERM, signal.SIG_DFL)
                    child.spare(command, stdout, stderr, me)
                    code = 0
                finally:
                    os._exit(code)
            for fd in (command, stdout, stderr):
                os.close(fd)
            status[pid] = status_w
            sock.sendall(_PID.pack(pid))


def _reap(wake_r: int, status: dict[int, int]) -> None:
    try:
        while os.read(wake_r, 512):
            pass
    except BlockingIOError:
        pass
    while True:
        try:
            pid, how = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        fd = status.pop(pid, None)
        if fd is None:
            continue
        try:
            os.write(fd, _STATUS.pack(os.waitstatus_to_exitcode(how)))
        except OSError:
            pass  # (the worker stopped watching it)
        os.close(fd)
