"""What a function can reach of the Python worker that runs it, as the same user: not the
worker's token (in no environment it inherits), not the worker's memory or ``/proc`` entries (the
worker and the fork server are not dumpable, so neither are the functions' processes)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]

# Played by a process of its own, as the worker's process would: its token in its environment
# from its start, kept from its functions as `python -m chronolog.worker` keeps itself (unless
# told "exposed"), a function run through the fork server, told the "worker's" pid; what that
# function printed is printed.
WORKER = r"""
import json, os, sys, tempfile, time
from chronolog.worker import main as worker_main
from chronolog.worker.attempt import Spares
from chronolog.worker.forks import ForkServer, keep_from_same_user
if sys.argv[1] == "kept":
    # What main() does first (it stops at the capacity, before it connects).
    assert worker_main.main(["--connect", "http://127.0.0.1:9", "--queue", "q", "--capacity", "0"]) == 2
    assert "CHRONOLOG_TOKEN" not in os.environ
    os.environ["CHRONOLOG_TOKEN"] = "chl.w.the-worker-secret"  # what the fork server must drop
server = ForkServer(["tests.worker_tasks"])
spare = Spares(server, 1).take()
d = tempfile.mkdtemp()
spare.give({"function": "tests.worker_tasks:reach", "args": {"worker": os.getpid()}, "task": "p/a/t",
            "logical_date": "2026-01-01T00:00:00Z", "attempt": 1, "token": "t1", "env": {}, "secrets": {},
            "result_path": os.path.join(d, "result"), "deadline": None, "received": time.time()})
out = b""
while True:
    got = os.read(spare.out, 65536)
    if not got:
        break
    out += got
spare.proc.join()
sys.stdout.write(out.decode())
server.close()
"""


def as_another_user() -> list[str]:
    """The command that runs Python as nobody when this runs as root (root may read any
    process's memory): the system's interpreter, which nobody may run (this one may be a root's
    own), else this one."""
    if os.geteuid() != 0:
        return [sys.executable]
    python = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable
    return ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", python]


@unittest.skipUnless(sys.platform.startswith("linux"), "PR_SET_DUMPABLE is Linux's")
@unittest.skipIf(os.geteuid() == 0 and shutil.which("setpriv") is None, "root, and no setpriv to be another user")
class FunctionReach(unittest.TestCase):
    def run_worker(self, mode: str) -> str:
        with tempfile.TemporaryDirectory() as home:
            os.chmod(home, 0o777)
            ran = subprocess.run(
                [*as_another_user(), "-c", WORKER, mode],
                capture_output=True,
                text=True,
                timeout=60,
                cwd=PACKAGE,
                env={
                    "PATH": os.environ.get("PATH", ""),
                    "PYTHONPATH": f"{PACKAGE / 'src'}:{PACKAGE}",
                    "HOME": home,
                    "CHRONOLOG_TOKEN": "chl.w.the-worker-secret",
                },
            )
        self.assertEqual(ran.returncode, 0, ran.stderr)
        return ran.stdout

    def test_a_function_reaches_neither_the_token_nor_the_workers_memory(self) -> None:
        self.assertEqual(self.run_worker("kept"), "token None\ndumpable 0\nenviron PermissionError\n")

    def test_without_it_a_process_of_the_same_user_could(self) -> None:
        # The same run with the worker left dumpable (the fork server still drops the token from
        # what it passes on): the worker's environment, as it started, is read whole.
        self.assertEqual(self.run_worker("exposed"), "token None\ndumpable 0\nenviron True\n")


if __name__ == "__main__":
    unittest.main()
