"""One attempt on this worker: waits for its start permission when it must, runs its function
in a process of its own (forked from the warm fork server), stops it when told to (its process
group: the function's own subprocesses too), and says how it ended."""

from __future__ import annotations

import hashlib
import json
import os
import selectors
import signal
import threading
import time
from typing import Any, Callable

from .forks import Forked, ForkServer
from .output import DEFAULT_OUTPUT_MAX_BYTES, OutputFile
from .secrets import Masker, MaskingStream, SecretError, resolve_secrets

TAIL_BYTES = 4096
#: How long the output of a process that has exited is still read (a straggler holding its pipes).
DRAIN_SECONDS = 1.0


def now_iso() -> str:
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}Z"


class Spare:
    """A process forked ahead of need: the write end of the pipe its attempt's spec goes to, and
    the read ends of its stdout and stderr pipes."""

    def __init__(self, proc: Forked, command: int, out: int, err: int) -> None:
        self.proc = proc
        self.command = command
        self.out = out
        self.err = err

    def give(self, spec: dict[str, Any]) -> None:
        """Hands it its attempt (the spec, then the end of the pipe)."""
        data = json.dumps(spec).encode("utf-8")
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self.command, view) :]
        finally:
            self._close_command()

    def _close_command(self) -> None:
        if self.command >= 0:
            try:
                os.close(self.command)
            except OSError:
                pass
            self.command = -1

    def discard(self) -> None:
        """Lets it go: with nothing on its pipe, it exits."""
        for fd in (self.out, self.err):
            try:
                os.close(fd)
            except OSError:
                pass
        self.out = self.err = -1
        self._close_command()

    def drop(self) -> None:
        """Lets go of a spare no attempt was given to (it exits), and of its end."""
        self.discard()
        self.proc.close()


class Spares:
    """Processes forked ahead of need from the fork server (where the ``--import`` modules are
    loaded), each waiting for an attempt: taking one costs a pipe write, not a fork. One thread
    forks them again in the background, one for each taken (no thread started per attempt)."""

    def __init__(self, server: ForkServer, keep: int) -> None:
        self.server = server
        self.keep = keep
        self.ready: list[Spare] = []
        self.lock = threading.Lock()
        self.wanted = threading.Condition(self.lock)
        self.error: Exception | None = None
        # Half ready before the worker connects, the rest forked in the background.
        self.missing = keep - (keep + 1) // 2
        for _ in range((keep + 1) // 2):
            self.ready.append(self._fork())
        threading.Thread(target=self._refill, daemon=True, name="spares").start()

    def _fork(self) -> Spare:
        command_r, command_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        try:
            proc = self.server.fork(command_r, out_w, err_w)
        except BaseException:
            for fd in (command_w, out_r, err_r):
                os.close(fd)
            raise
        finally:
            for fd in (command_r, out_w, err_w):
                os.close(fd)
        return Spare(proc, command_w, out_r, err_r)

    def _refill(self) -> None:
        while True:
            with self.lock:
                while self.missing == 0:
                    self.wanted.wait()
                self.missing -= 1
                if len(self.ready) >= self.keep:
                    continue
            try:
                got = self._fork()
            except Exception as error:
                # (The fork server gone, killed from outside or the worker stopping: an attempt
                # waiting for a spare fails saying so, rather than wait for ever.)
                with self.lock:
                    self.error = error
                    self.missing += 1
                    self.wanted.notify_all()
                time.sleep(1)
                continue
            with self.lock:
                self.error = None
                self.ready.append(got)
                self.wanted.notify_all()

    def take(self) -> Spare:
        """A spare; ``replace`` it once it has its attempt. None ready (more attempts started
        than spares could be forked meanwhile): the next one the thread forks, which is sooner
        than a fork of its own queued behind it."""
        while True:
            with self.lock:
                if not self.ready:
                    self.missing += 1
                    self.wanted.notify_all()
                    while not self.ready:
                        if self.error is not None:
                            raise RuntimeError(f"no process to run it in: {self.error}")
                        self.wanted.wait()
                got = self.ready.pop(0)
            if got.proc.exitcode is None:
                return got
            # A spare that died meanwhile (killed from outside): the next, and one more forked.
            got.drop()
            self.replace()

    def replace(self) -> None:
        """Forks one more in the background (after the hand-off: the fork waits, not the attempt)."""
        with self.lock:
            self.missing += 1
            self.wanted.notify_all()


class Attempt:
    def __init__(
        self,
        cmd: dict[str, Any],
        worker_id: str,
        out_dir: str,
        spares: "Spares",
        push: Callable[[dict[str, Any]], None],
        done: Callable[["Attempt"], None],
        output_max_bytes: int = DEFAULT_OUTPUT_MAX_BYTES,
    ) -> None:
        self.cmd = cmd
        #: What its output file may hold (the scheduler's limit); past it, the middle is cut.
        self.output_max_bytes = output_max_bytes
        #: What its output file holds, once the function's process has ended.
        self.output_info: dict[str, Any] | None = None
        self.token: str = cmd["token"]
        self.worker_id = worker_id
        self.spares = spares
        self.push = push
        self.done = done
        self.output_path = os.path.join(out_dir, f"{self.token}.log")
        self.result_path = os.path.join(out_dir, f"{self.token}.result")
        self.lease = float(cmd.get("leaseSeconds") or 30)
        self.idempotent = cmd.get("awaitProceed") is not True
        #: It waits, unrun, for its start permission: it is not idempotent, or its run came late
        #: (see clock.late_run), and it runs once the scheduler accepts its start.
        self.awaits_start = not self.idempotent
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
        self.env: dict[str, str] = dict(cmd.get("env") or {})
        #: Masks its secrets' values in its output, tails and error (None: it has no secrets).
        self.masker: Masker | None = None
        self.tails = {"stdout": b"", "stderr": b""}
        self.timeout_ms: int | None = None
        self.deadline: float | None = None
        self.timed_out = False

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
        self._stop(pid, grace)

    def _stop(self, pid: int, grace: float) -> None:
        """SIGTERM to its process group, SIGKILL after ``grace`` seconds (at once with 0)."""
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
        # (Not one stopped before it left the queue: it never started.)
        if self.awaits_start and self.abort is None:
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
        if self.awaits_start:
            self.proceeded.wait()
        op = self.cmd.get("operator") or {}
        if self.abort is not None:
            r = self._failed(*self._abort_error(), None)
            if not self.reported_start:
                # Stopped before it left the queue: never begun, so no start is claimed for it.
                r["neverStarted"] = True
            return r
        if op.get("type") != "python":
            self._report_started()
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
        values: dict[str, str] = {}
        if self.cmd.get("secrets"):
            # Resolved here, on this worker's host, once the attempt may run; masked in all it
            # reports and writes from now on.
            try:
                values = resolve_secrets(self.cmd["secrets"], os.environ, {**os.environ, **self.env})
            except SecretError as error:
                self._report_started()
                return self._failed("exception", str(error), None)
            self.masker = Masker(list(values.values()))
        timeout_ms = op.get("timeoutMs")
        spec = {
            "function": op["function"],
            "args": op.get("args") or {},
            "task": self.cmd.get("taskKey", ""),
            "logical_date": self.cmd["logicalDate"],
            "attempt": self.cmd["attempt"],
            "token": self.token,
            "env": {**self.env, **values},
            "secrets": values,
            "result_path": self.result_path,
            "deadline": None,
            "received": self.received,
        }
        # Taken before the lock (it may wait for the next spare forked): a cancel meanwhile is not
        # held up.
        got = self.spares.take()
        with self.lock:
            if self.abort is not None:
                got.drop()  # (it exits, its attempt never given)
                self.spares.replace()
                return self._failed(*self._abort_error(), None)
            self.state = "running"
            self.proc = got.proc
            self.pid = self.proc.pid
            if isinstance(timeout_ms, (int, float)) and timeout_ms > 0:
                self.timeout_ms = int(timeout_ms)
                self.deadline = time.time() + timeout_ms / 1000
                spec["deadline"] = self.deadline
            got.give(spec)
        self.spares.replace()
        self._report_started()
        self._follow(got)
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
        if self.timed_out:
            return self._failed("timeout", f"timed out after {self.timeout_ms} ms", code)
        if result is not None and result.get("ok") and code == 0:
            return self._succeeded(code)
        if result is not None and not result.get("ok"):
            return self._failed("exception", str(result.get("message") or "failed"), code)
        if code is not None and code < 0:
            name = signal.Signals(-code).name
            return self._failed("signal", f"the attempt's process was killed by {name}", None)
        return self._failed("exit_code", f"the attempt's process exited with code {code}", code)

    def _follow(self, got: "Spare") -> None:
        """Reads the process's stdout and stderr as they come, into the output file (interleaved,
        secrets masked, written by the worker: the task cannot rewrite it) and a tail of each,
        until the process has exited and its pipes are drained (what its process group left
        running is killed at its exit: a straggler elsewhere holding a pipe is waited for a
        second at most). Interrupts the function at its deadline."""
        output = OutputFile(self.output_path, self.output_max_bytes) if self.output_max_bytes > 0 else None
        write = output.write if output is not None else (lambda data: None)
        sink: Any = MaskingStream(self.masker, write) if self.masker is not None else None
        sel = selectors.DefaultSelector()
        sel.register(got.out, selectors.EVENT_READ, "stdout")
        sel.register(got.err, selectors.EVENT_READ, "stderr")
        sel.register(self.proc.sentinel, selectors.EVENT_READ, None)
        pipes = 2
        exited: float | None = None
        try:
            while pipes > 0 and (exited is None or time.monotonic() < exited + DRAIN_SECONDS):
                wait: float | None = None if exited is None else max(0.0, exited + DRAIN_SECONDS - time.monotonic())
                if self.deadline is not None and not self.timed_out and exited is None:
                    left = max(0.0, self.deadline - time.time())
                    if left <= 0:
                        self.timed_out = True
                        self._stop(self.pid, 2.0)
                    else:
                        wait = left
                for key, _ in sel.select(wait):
                    if key.data is None:
                        sel.unregister(key.fileobj)
                        exited = time.monotonic()
                        try:
                            os.killpg(self.pid, signal.SIGKILL)
                        except OSError:
                            pass
                        continue
                    data = os.read(key.fd, 1 << 16)
                    if not data:
                        sel.unregister(key.fileobj)
                        pipes -= 1
                        continue
                    self.tails[key.data] = (self.tails[key.data] + data)[-TAIL_BYTES:]
                    if sink is not None:
                        sink.write(data)
                    else:
                        write(data)
            if sink is not None:
                sink.end()
        finally:
            sel.close()
            if output is not None:
                self.output_info = output.close()
            got.discard()
        self.proc.join()

    def _abort_error(self) -> tuple[str, str]:
        reason = self.abort or "cancelled"
        return ("interrupted", reason) if self.interrupted else ("exception", f"cancelled: {reason}")

    def _end(self, kind: str, code: int | None) -> dict[str, Any]:
        r = self.base(kind)
        r["durationMs"] = int((time.monotonic() - self.started_at) * 1000)
        r["exitCode"] = code
        cut = lambda tail: len(tail) >= TAIL_BYTES - 3  # noqa: E731 (a tail that fills its buffer may start inside a value)
        for name in ("stdout", "stderr"):
            tail = self.tails[name]
            if self.masker is not None:
                tail = self.masker.mask_tail(tail, cut(tail))
            r[f"{name}Tail"] = tail.decode("utf-8", "replace")
        if self.output_info is not None:
            r["outputFile"] = self.output_info
        elif os.path.exists(self.output_path):
            digest = hashlib.sha256()
            size = 0
            with open(self.output_path, "rb") as f:
                while True:
                    chunk = f.read(1 << 20)
                    if not chunk:
                        break
                    digest.update(chunk)
                    size += len(chunk)
            r["outputFile"] = {"path": self.output_path, "bytes": size, "sha256": digest.hexdigest(), "cutBytes": 0}
        return r

    def _succeeded(self, code: int | None) -> dict[str, Any]:
        return self._end("succeeded", code)

    def _failed(self, kind: str, message: str, code: int | None) -> dict[str, Any]:
        r = self._end("failed", code)
        r["error"] = {"kind": kind, "message": message if self.masker is None else self.masker.mask(message)}
        return r
