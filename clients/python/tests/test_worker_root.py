"""The Python worker says so when it runs as root: its functions run as root too."""

from __future__ import annotations

import io
import unittest
from contextlib import redirect_stderr
from unittest import mock

from chronolog.worker import main as worker_main

# Refused for its capacity, after what it says at its start and before it connects.
ARGS = ["--connect", "http://127.0.0.1:9", "--token", "t", "--queue", "q", "--capacity", "0"]


def run_as(uid: int) -> tuple[int, str]:
    err = io.StringIO()
    with mock.patch("os.geteuid", return_value=uid), redirect_stderr(err):
        code = worker_main.main(ARGS)
    return code, err.getvalue()


class RootWarning(unittest.TestCase):
    def test_warns_as_root(self) -> None:
        code, err = run_as(0)
        self.assertEqual(code, 2)
        self.assertIn("warning: running as root, so every function it runs does", err)

    def test_says_nothing_as_another_user(self) -> None:
        code, err = run_as(1000)
        self.assertEqual(code, 2)
        self.assertNotIn("running as root", err)
        self.assertIn("--capacity is at least 1", err)


if __name__ == "__main__":
    unittest.main()
