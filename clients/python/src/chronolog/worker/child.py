"""The process of one attempt: forked from a warm interpreter (the fork server, with the worker's
``--import`` modules already loaded), it leads a process group of its own, its stdout and stderr
(and its subprocesses') pipes the worker reads into the attempt's output, imports the function
and calls it.
What became of it is written to a result file beside the output: the worker reads it once the
process has exited (a process killed writes none: the worker reads its signal instead)."""

from __future__ import annotations

import ctypes
import importlib
import json
import os
import signal
import sys
import time
import traceback
from datetime import datetime, timezone
from typing import Any, Callable

from .context import Cancelled, Context


def resolve(ref: str) -> Callable[..., Any]:
    """``module.path:qualname`` -> the function (modules already imported are not imported again)."""
    module_name, _, qualname = ref.partition(":")
    if not module_name or not qualname:
        raise ValueError(f'a python function is "module.path:qualname", not {ref!r}')
    obj: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    if not callable(obj):
        raise TypeError(f"{ref} is not callable")
    return obj


def _die_with_parent() -> None:
    """Linux: killed when the fork server (which ends with the worker) does, so that a worker
    killed takes its attempts with it rather than leaving them running unwatched."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def _group_watchdog() -> None:
    """Starts the watchdog of this process's group: a shell blocked reading a pipe whose other end
    this process holds (see below for its subprocesses). When this process dies, even by
    SIGKILL (the worker's death takes it so, and no handler sees that), the read returns and the
    shell kills the whole group, so that no subprocess of the attempt outlives it unwatched (a
    retry may run elsewhere by then). Started while the spare waits, not when an attempt starts;
    a cancel's SIGTERM to the group leaves it be, the group's SIGKILL ends it. (Forked twice, it is
    not a child of this process: a function that waits for all its children does not wait for it.)
    The write end survives an exec (a function that becomes another program is still watched);
    `subprocess`'s children never hold it (it closes their other descriptors), a child forked
    (`multiprocessing`, `os.system`'s shell) does, and is then waited for as this process is."""
    r, w = os.pipe()
    if r == 3:
        # (dup2 of a descriptor onto itself would leave it closed on exec in the shell)
        r, old = os.dup(r), r
        os.close(old)
    try:
        pid = os.posix_spawn(
            "/bin/sh",
            ["sh", "-c", "( trap '' TERM INT; read -r _ <&3; kill -KILL 0 ) &"],
            {"PATH": os.defpath},
            file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
                (os.POSIX_SPAWN_DUP2, r, 3),
            ],
        )
    except OSError:
        os.close(w)  # (no shell to start: the attempt runs without its watchdog)
    else:
        # (Only now: the shell must not hold it.)
        os.set_inheritable(w, True)
        _WATCHDOG_PIPE.append(w)
        os.waitpid(pid, 0)
    finally:
        os.close(r)


_WATCHDOG_PIPE: list[int] = []
"""The write end of the watchdog's pipe, held open for as long as this process lives."""


def _write_result(path: str, result: dict[str, Any]) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(result, f)
    os.replace(tmp, path)


def spare(command: int, out: int, err: int, parent: int) -> None:
    """A spare process, forked ahead of need: ready (its own process group, dying with the
    worker), it waits for an attempt's spec (JSON, to the end of the pipe ``command``), then
    runs it, its stdout and stderr the write ends of the pipes ``out`` and ``err`` that the
    worker reads. Nothing comes (the worker stopped or has no use for it): it exits. ``parent``
    is the fork server's pid: gone before this process could ask to die with it, it exits now."""
    os.setsid()
    os.dup2(out, 1)
    os.dup2(err, 2)
    os.close(out)
    os.close(err)
    _die_with_parent()
    if os.getppid() != parent:
        os._exit(137)
    _group_watchdog()
    _rehearse()
    chunks = []
    try:
        while True:
            got = os.read(command, 1 << 16)
            if not got:
                break
            chunks.append(got)
    except OSError:
        os._exit(0)
    os.close(command)
    if not chunks:
        os._exit(0)
    run_attempt(json.loads(b"".join(chunks)))


def _rehearse() -> None:
    """Goes through an attempt's start with nothing of one, while no attempt waits: a process
    forked from the fork server shares its memory until it writes to a page, and the first write
    to each copies it (a huge page at a time where the kernel uses them). Here those copies are
    made ahead (measured: 9 ms p50, 20 ms p90 of an attempt's start before). Only what the start
    touches: a collection here would copy the whole heap, in every spare, and slow their forks
    down until attempts wait for one. The memory the function itself touches is its own to copy."""
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.close(devnull)
    os.environ["CHRONOLOG_REHEARSAL"] = "1"
    del os.environ["CHRONOLOG_REHEARSAL"]
    Context(
        task="",
        logical_date="",
        data_interval_start=None,
        data_interval_end=None,
        attempt=0,
        token="",
        params=json.loads("{}"),
        config=json.loads("{}"),
        deadline=datetime.fromtimestamp(0, timezone.utc),
    )
    previous = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, previous)


def run_attempt(spec: dict[str, Any]) -> None:
    """Runs the attempt in this process (a spare given its spec)."""
    entered = time.time()
    # Its stdout and stderr are already the pipes the worker reads (and masks, and keeps apart).
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    sys.stdout = open(1, "w", buffering=1, encoding="utf-8", errors="backslashreplace", closefd=False)
    sys.stderr = open(2, "w", buffering=1, encoding="utf-8", errors="backslashreplace", closefd=False)
    env = spec.get("env") or {}
    os.environ.update(env)
    ctx = Context(
        task=spec["task"],
        logical_date=spec["logical_date"],
        data_interval_start=env.get("CHRONOLOG_DATA_INTERVAL_START") or None,
        data_interval_end=env.get("CHRONOLOG_DATA_INTERVAL_END") or None,
        attempt=spec["attempt"],
        token=spec["token"],
        params=json.loads(env.get("CHRONOLOG_PARAMS") or "{}"),
        config=json.loads(env.get("CHRONOLOG_CONFIG") or "{}"),
        args=dict(spec.get("args") or {}),
        env=dict(env),
        deadline=None if spec.get("deadline") is None else datetime.fromtimestamp(spec["deadline"], timezone.utc),
        secrets=dict(spec.get("secrets") or {}),
        received=spec.get("received"),
    )

    def cancel(signum: int, frame: Any) -> None:
        if not ctx.cancelled:
            ctx.cancelled = True
            raise Cancelled("the attempt was cancelled")

    signal.signal(signal.SIGTERM, cancel)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    result: dict[str, Any]
    code = 0
    try:
        fn = resolve(spec["function"])
        result = {"ok": True, "entered": entered, "value": repr(fn(ctx, **ctx.args))[:1000]}
    except Cancelled:
        result = {"ok": False, "cancelled": True, "message": "cancelled", "entered": entered}
        code = 1
    except BaseException as error:  # the function's failure, whatever it is, is the attempt's
        # The traceback from the function on: the worker's own frame is not the task's.
        tb = error.__traceback__
        traceback.print_exception(type(error), error, tb.tb_next if tb is not None else None)
        last = traceback.format_exception_only(type(error), error)[-1].strip()
        result = {"ok": False, "message": last, "entered": entered}
        code = 1
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:
        pass
    _write_result(spec["result_path"], result)
    os._exit(code)
