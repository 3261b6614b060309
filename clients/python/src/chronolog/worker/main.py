"""The command line of the Python worker."""

from __future__ import annotations

import argparse
import importlib
import os
import re
import signal
import socket
import sys
import threading
import time
import traceback
from typing import Any

from .forks import ForkServer, keep_from_same_user
from .link import Link
from .remote import FatalRefusal, Worker

VERSION = "chronolog-python 0.1.0"


def _log(text: str) -> None:
    sys.stderr.write(f"{time.strftime('%H:%M:%S')} chronolog.worker: {text}\n")
    sys.stderr.flush()


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m chronolog.worker",
        description="Runs the python tasks of the queues it serves, for a scheduler it connects to.",
    )
    p.add_argument("--connect", required=True, metavar="URL", help="the scheduler's API (https://HOST:PORT)")
    p.add_argument("--token", default=os.environ.get("CHRONOLOG_TOKEN"), help="a work token ($CHRONOLOG_TOKEN)")
    p.add_argument("--queue", action="append", required=True, metavar="NAME", help="a queue to serve (repeatable)")
    p.add_argument("--import", dest="imports", action="append", default=[], metavar="MODULE",
                   help="a module to load in the warm interpreter attempts start from (repeatable)")
    p.add_argument("--capacity", type=int, default=8, help="attempts at once (default 8)")
    p.add_argument("--id", default=socket.gethostname(), help="the worker's id (default: the host name)")
    p.add_argument("--ca", metavar="FILE", help="the CA that signed the scheduler's certificate")
    p.add_argument("--insecure", action="store_true", help="allow plain http to a host that is not loopback")
    p.add_argument("--dir", default="./.chronolog-worker", help="where attempts' output is kept")
    p.add_argument("--grace", type=float, default=30.0, help="on SIGTERM, how long attempts may finish (s)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    # The token is the worker's alone: not in the environment of the fork server, of the
    # functions, or of the commands that resolve their secrets; and the process is kept from the
    # functions (they run as its user), which could otherwise read it from its memory.
    os.environ.pop("CHRONOLOG_TOKEN", None)
    if not keep_from_same_user() and sys.platform.startswith("linux"):
        _log("warning: could not keep this process from the functions it runs (prctl PR_SET_DUMPABLE)")
    # Functions run as this process's user, unlike `chronolog worker`'s tasks (see --run-as there).
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        _log(
            "warning: running as root, so every function it runs does, with its files and environment "
            "(its token included): run it as a user of its own"
        )
    if not args.token:
        _log("--token (or $CHRONOLOG_TOKEN) is required: a work token for the queues it serves")
        return 2
    if not re.fullmatch(r"[A-Za-z0-9_.:-]{1,128}", args.id) or re.fullmatch(r"w\d+-\d+", args.id):
        _log(f"--id {args.id!r}: letters, digits, _ . : - (at most 128), not of the form w<pid>-<n>")
        return 2
    if args.capacity < 1:
        _log("--capacity is at least 1")
        return 2
    try:
        link = Link(args.connect, args.token, args.ca, args.insecure)
    except (ValueError, OSError) as error:
        _log(str(error))
        return 2
    # Loaded here first: a module that does not import is said now, not at each attempt.
    sys.path.insert(0, os.getcwd())
    for name in args.imports:
        try:
            importlib.import_module(name)
        except Exception:
            _log(f"--import {name} failed:\n{traceback.format_exc()}")
            return 2
    out_dir = os.path.abspath(os.path.join(args.dir, "output"))
    os.makedirs(out_dir, exist_ok=True)
    # The warm interpreter every attempt's process is forked from, with the modules it needs
    # loaded (started now, not at the first attempt).
    try:
        server = ForkServer(args.imports)
    except (OSError, RuntimeError) as error:
        _log(str(error))
        return 2
    worker = Worker(link, args.id, socket.gethostname(), args.queue, args.capacity, VERSION, out_dir, server, _log)
    signals = [0]

    def on_signal(signum: int, frame: Any) -> None:
        signals[0] += 1
        grace = args.grace if signals[0] == 1 else 0
        _log(f"stopping ({signal.Signals(signum).name}): running attempts may finish within {grace:g} s")
        threading.Thread(target=lambda: (worker.stop(grace), os._exit(0)), daemon=True).start()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        worker.run()
    except FatalRefusal as error:
        _log(str(error))
        return 2
    while True:
        time.sleep(1)
