"""A python task that declares secrets: this worker does not resolve them, so the attempt fails
at once saying so (never runs without them, never prints their values unmasked)."""

from __future__ import annotations

import tempfile
import unittest
from typing import Any

from chronolog.worker.attempt import Attempt


class NoSpares:
    def take(self) -> Any:
        raise AssertionError("an attempt with secrets must not start a process")


class SecretsRefusedTest(unittest.TestCase):
    def test_an_attempt_with_secrets_fails_naming_them(self) -> None:
        reports: list[dict[str, Any]] = []
        ended: list[Attempt] = []
        cmd = {
            "kind": "run",
            "token": "tok-secrets-1",
            "attempt": 1,
            "instanceStream": "instance-p/a/t/ALL@2026-12-01T00:00:00.000Z",
            "taskKey": "p/a/t/ALL",
            "logicalDate": "2026-12-01T00:00:00.000Z",
            "leaseSeconds": 30,
            "operator": {"type": "python", "function": "tests.no_such:fn", "args": {}},
            "secrets": {"DB_PASSWORD": {"env": "DB_PASSWORD"}, "API_KEY": {"file": "/run/key"}},
        }
        with tempfile.TemporaryDirectory() as out:
            a = Attempt(cmd, "w1-1", out, NoSpares(), reports.append, ended.append)  # type: ignore[arg-type]
            a.run()
            with open(a.output_path, encoding="utf-8") as f:
                output = f.read()
        kinds = [r["kind"] for r in reports]
        self.assertEqual(kinds, ["started", "failed"])
        failed = reports[-1]
        self.assertEqual(failed["error"]["kind"], "exception")
        self.assertIn("does not resolve secrets (the task declares API_KEY, DB_PASSWORD)", failed["error"]["message"])
        self.assertIn("does not resolve secrets", output)
        self.assertEqual(ended, [a])


if __name__ == "__main__":
    unittest.main()
