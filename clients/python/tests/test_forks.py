"""The fork server attempts' processes come from: each one's end as the worker sees it (its exit
code, or minus the signal that killed it), a spare let go exiting, the server's end taking its
children with it, and a module it cannot import said at once."""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import time
import unittest
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(PACKAGE / "src"), str(PACKAGE)]

from chronolog.worker.attempt import Spares  # noqa: E402
from chronolog.worker.forks import ForkServer  # noqa: E402


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def read_all(fd: int) -> bytes:
    chunks = []
    while True:
        got = os.read(fd, 65536)
        if not got:
            return b"".join(chunks)
        chunks.append(got)


class ForkServerTest(unittest.TestCase):
    def setUp(self) -> None:
        self.server = ForkServer(["tests.worker_tasks"])
        self.spares = Spares(self.server, 2)
        self.dir = tempfile.mkdtemp(prefix="chronolog-forks-")

    def tearDown(self) -> None:
        self.server.close()

    def spec(self, function: str, **args: object) -> dict[str, object]:
        return {
            "function": function,
            "args": args,
            "task": "p/a/t",
            "logical_date": "2026-01-01T00:00:00Z",
            "attempt": 1,
            "token": "t1",
            "env": {},
            "secrets": {},
            "result_path": os.path.join(self.dir, "result"),
            "deadline": None,
            "received": time.time(),
        }

    def test_a_function_runs_and_its_end_is_its_exit_code(self) -> None:
        got = self.spares.take()
        got.give(self.spec("tests.worker_tasks:loud", lines=2))
        self.assertEqual(read_all(got.out), b"line 0\nline 1\n")
        self.assertEqual(got.proc.join(), 0)
        self.assertEqual(got.proc.exitcode, 0)
        self.assertTrue(json.loads(Path(self.dir, "result").read_text())["ok"])
        got.discard()
        got.proc.close()

        failed = self.spares.take()
        failed.give(self.spec("tests.worker_tasks:boom"))
        self.assertIn(b"Traceback", read_all(failed.err))
        self.assertEqual(failed.proc.join(), 1)
        failed.discard()
        failed.proc.close()

    def test_a_process_killed_ends_with_minus_its_signal(self) -> None:
        got = self.spares.take()
        self.assertIsNone(got.proc.exitcode)
        os.kill(got.proc.pid, signal.SIGKILL)
        self.assertEqual(got.proc.join(), -signal.SIGKILL)
        got.drop()

    def test_a_spare_let_go_exits(self) -> None:
        got = self.spares.take()
        got.discard()
        self.assertEqual(got.proc.join(), 0)
        got.proc.close()

    def test_an_attempt_that_execs_another_program_runs_to_its_end(self) -> None:
        marker = Path(self.dir, "exec-done")
        got = self.spares.take()
        got.give(self.spec("tests.worker_tasks:execs", marker=str(marker)))
        self.assertEqual(got.proc.join(), 0)
        self.assertEqual(marker.read_text(), "done\n")
        got.discard()
        got.proc.close()

    def test_the_servers_end_takes_an_attempts_subprocesses_with_it(self) -> None:
        # The worker killed (SIGKILL) takes the server, which takes the attempt's process; the
        # subprocess the attempt started (in its group) goes too, by the group's watchdog.
        starts = Path(self.dir, "starts")
        got = self.spares.take()
        got.give(self.spec("tests.worker_tasks:slow", starts=str(starts), ends=str(Path(self.dir, "ends"))))
        deadline = time.monotonic() + 10
        while not (starts.exists() and starts.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.02)
        attempt_pid, sub_pid = (int(x) for x in starts.read_text().split()[:2])
        self.assertTrue(alive(sub_pid))
        os.kill(self.server.proc.pid, signal.SIGKILL)
        self.assertEqual(got.proc.join(), -signal.SIGKILL)
        deadline = time.monotonic() + 10
        while (alive(attempt_pid) or alive(sub_pid)) and time.monotonic() < deadline:
            time.sleep(0.02)
        self.assertFalse(alive(attempt_pid), "the attempt outlived the server")
        self.assertFalse(alive(sub_pid), "the attempt's subprocess outlived it")

    def test_the_servers_end_takes_its_processes_with_it(self) -> None:
        got = self.spares.take()
        pid = got.proc.pid
        self.assertTrue(alive(pid))
        os.kill(self.server.proc.pid, signal.SIGKILL)
        self.assertEqual(got.proc.join(), -signal.SIGKILL)
        deadline = time.monotonic() + 10
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        self.assertFalse(alive(pid), "a spare outlived its server")
        r, w = os.pipe()
        try:
            with self.assertRaisesRegex(Exception, "warm interpreter is gone"):
                self.server.fork(r, w, w)
        finally:
            os.close(r)
            os.close(w)


class ForkServerStartTest(unittest.TestCase):
    def test_a_module_it_cannot_import_is_said(self) -> None:
        with self.assertRaisesRegex(RuntimeError, "No module named 'tests.no_such_module'"):
            ForkServer(["tests.no_such_module"])


if __name__ == "__main__":
    unittest.main()
