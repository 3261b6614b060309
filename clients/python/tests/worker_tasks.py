"""Functions the Python worker's tests declare as python tasks (test/python/python-worker.test.ts)."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
from typing import Any

from chronolog.worker import Cancelled, Context


def ok(ctx: Context, marker: str, region: str = "eu") -> str:
    entered = time.time()
    print(f"hello from ok, region {region}")
    ctx.log(f"attempt {ctx.attempt} of {ctx.logical_date}")
    with open(marker, "a", encoding="utf-8") as f:
        f.write(
            json.dumps(
                {
                    "entered": entered,
                    "pid": os.getpid(),
                    "task": ctx.task,
                    "logical_date": ctx.logical_date,
                    "data_interval_start": ctx.data_interval_start,
                    "data_interval_end": ctx.data_interval_end,
                    "attempt": ctx.attempt,
                    "token": ctx.token,
                    "params": dict(ctx.params),
                    "config": dict(ctx.config),
                    "args": dict(ctx.args),
                    "region": region,
                    "deadline": None if ctx.deadline is None else ctx.deadline.isoformat(),
                }
            )
            + "\n"
        )
    return "done"


def boom(ctx: Context) -> None:
    print("reading the orders file")
    sys.stderr.write("about to fail\n")
    _inner()


def _inner() -> None:
    raise ValueError("the orders file is empty")


def flaky(ctx: Context, marker: str) -> None:
    with open(marker, "a", encoding="utf-8") as f:
        f.write(f"{ctx.attempt}\n")
    if ctx.attempt == 1:
        raise RuntimeError("the first attempt fails")
    print("the second attempt succeeds")


def slow(ctx: Context, starts: str, ends: str, seconds: float = 30) -> None:
    """Appends its pid to ``starts``, sleeps (in a child process too, which shares its group),
    appends to ``ends``; a cancel appends to ``starts + '.cancelled'``."""
    child = subprocess.Popen(["sleep", str(seconds + 30)])
    with open(starts, "a", encoding="utf-8") as f:
        f.write(f"{os.getpid()} {child.pid} {ctx.attempt}\n")
    try:
        time.sleep(seconds)
    except Cancelled:
        with open(starts + ".cancelled", "a", encoding="utf-8") as f:
            f.write(f"{ctx.token} cancelled={ctx.cancelled}\n")
        raise
    with open(ends, "a", encoding="utf-8") as f:
        f.write(f"{ctx.attempt}\n")
    child.kill()


def noop(ctx: Context, marker: str = "") -> None:
    """The bench's task: says when it was entered, and when the worker received it (epoch
    milliseconds), in its output."""
    print(f"entered {time.time() * 1000:.3f} received {(ctx.received or 0) * 1000:.3f}")


def fail_after(ctx: Context, wait_for: str) -> None:
    """Fails once ``wait_for`` exists (a sibling has started)."""
    while not os.path.exists(wait_for):
        time.sleep(0.05)
    raise RuntimeError("a sibling's failure")


def locked(ctx: Context, lock: str, starts: str, ends: str, overlaps: str, seconds: float = 10) -> None:
    """Holds a kernel lock (flock) while it runs: an attempt that finds it held overlaps another."""
    import fcntl

    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        with open(overlaps, "a", encoding="utf-8") as f:
            f.write(f"{ctx.task} {ctx.attempt}\n")
        raise
    with open(starts, "a", encoding="utf-8") as f:
        f.write(f"{ctx.task} {ctx.attempt}\n")
    time.sleep(seconds)
    with open(ends, "a", encoding="utf-8") as f:
        f.write(f"{ctx.task}\n")


def uses_secret(ctx: Context, marker: str) -> None:
    """Reads its secret DB_PASSWORD (its environment, ``ctx.secrets``, ``ctx.env``), writes what it
    got to ``marker``, prints it (stdout), its base64 (stderr) and has a subprocess print it."""
    value = os.environ["DB_PASSWORD"]
    with open(marker, "a", encoding="utf-8") as f:
        f.write(json.dumps({"environ": value, "secrets": dict(ctx.secrets), "env": ctx.env.get("DB_PASSWORD")}) + "\n")
    print(f"connecting with {value}")
    sys.stderr.write(f"as base64 {base64.b64encode(value.encode()).decode()}\n")
    sys.stderr.flush()
    subprocess.run(["sh", "-c", 'echo "a subprocess says $DB_PASSWORD"'], check=True)
    raise RuntimeError(f"the database refused {value}")


def deadline(ctx: Context, marker: str) -> None:
    """Writes its deadline (ISO, with its offset), when it was entered and what remains."""
    with open(marker, "a", encoding="utf-8") as f:
        f.write(
            json.dumps(
                {
                    "deadline": None if ctx.deadline is None else ctx.deadline.isoformat(),
                    "aware": ctx.deadline is not None and ctx.deadline.utcoffset() is not None,
                    "entered": time.time(),
                    "remaining": ctx.remaining(),
                }
            )
            + "\n"
        )


def loud(ctx: Context, lines: int) -> None:
    """Prints ``lines`` numbered lines (more than an output limit keeps)."""
    for i in range(lines):
        print(f"line {i}")


def execs(ctx: Context, marker: str) -> None:
    """Becomes a shell (exec) that writes ``marker`` after a moment: the attempt is that program."""
    os.execv("/bin/sh", ["sh", "-c", f"sleep 0.3; echo done > {marker}"])


def reach(ctx: Context, worker: int) -> None:
    """Prints what it can reach of the worker: the token in its own environment, whether it may
    be dumped, and the worker's environment as it started (pid ``worker``)."""
    import ctypes

    print("token", os.environ.get("CHRONOLOG_TOKEN"))
    print("dumpable", ctypes.CDLL(None).prctl(3, 0, 0, 0, 0))  # PR_GET_DUMPABLE
    try:
        with open(f"/proc/{worker}/environ", "rb") as f:
            print("environ", b"CHRONOLOG_TOKEN=" in f.read())
    except OSError as error:
        print("environ", type(error).__name__)
