"""Secrets on the Python worker, as the Node worker has them: resolved by the worker that runs the
attempt (its environment, a file on its host, a command), a failure naming the secret and its
source but never a value, every value masked in what the attempt writes and reports."""

from __future__ import annotations

import base64
import os
import tempfile
import unittest
from typing import Any

from chronolog.worker.attempt import Attempt
from chronolog.worker.secrets import Masker, MaskingStream, SecretError, masked_forms, resolve_secrets


class NoSpares:
    def take(self) -> Any:
        raise AssertionError("an attempt whose secrets cannot be resolved must not start a process")


class ResolveTest(unittest.TestCase):
    def test_env_file_and_command_sources(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "db_password")
            with open(path, "w", encoding="utf-8") as f:
                f.write("from-a-file\n")
            got = resolve_secrets(
                {
                    "A": {"env": "SOME_VAR"},
                    "B": {"file": path},
                    "C": {"command": "echo from-a-command; echo noise >&2"},
                    "D": {"command": 'printf %s "$TASK_ONLY"'},
                },
                {"SOME_VAR": "from-the-env"},
                {"TASK_ONLY": "the-command-env", "PATH": os.environ.get("PATH", "")},
            )
        self.assertEqual(
            got, {"A": "from-the-env", "B": "from-a-file", "C": "from-a-command", "D": "the-command-env"}
        )

    def test_failures_name_the_secret_and_its_source_never_a_value(self) -> None:
        cases = [
            ({"env": "NOT_SET"}, "secret S (environment variable NOT_SET): the variable is not set on this worker"),
            ({"env": "EMPTY"}, "secret S (environment variable EMPTY): the variable is not set on this worker"),
            ({"file": "/no/such/file"}, "secret S (file /no/such/file): the file cannot be read (ENOENT)"),
            ({"file": "/"}, "secret S (file /): the file cannot be read (EISDIR)"),
            ({"command": "echo hunter22; exit 3"}, "secret S (command): the command exited with 3"),
            ({"command": "kill -9 $$"}, "secret S (command): the command was killed by SIGKILL"),
            ({"command": "true"}, "secret S (command): the value is empty"),
        ]
        for source, message in cases:
            with self.subTest(source=source):
                with self.assertRaises(SecretError) as caught:
                    resolve_secrets({"S": source}, {"EMPTY": ""}, {"PATH": os.environ.get("PATH", "")})
                self.assertEqual(str(caught.exception), message)
                self.assertNotIn("hunter22", str(caught.exception))


class MaskTest(unittest.TestCase):
    def test_forms_as_is_base64_and_url_encoded_short_values_not(self) -> None:
        forms = masked_forms("hello world?&=#")
        self.assertIn("hello world?&=#", forms)
        self.assertIn(base64.b64encode(b"hello world?&=#").decode(), forms)
        self.assertIn("aGVsbG8gd29ybGQ_Jj0j", forms)
        self.assertIn("hello%20world%3F%26%3D%23", forms)
        self.assertIn("hello+world%3F%26%3D%23", forms)
        self.assertEqual(masked_forms("abc"), [])

    def test_a_stream_masks_a_value_split_between_writes(self) -> None:
        out: list[bytes] = []
        s = MaskingStream(Masker(["s3cr3t-value"]), out.append)
        for chunk in (b"token=s3cr", b"3t-va", b"lue and ", base64.b64encode(b"s3cr3t-value") + b"\n"):
            s.write(chunk)
        s.end()
        self.assertEqual(b"".join(out), b"token=*** and ***\n")

    def test_a_cut_tail_drops_what_may_be_the_end_of_a_value(self) -> None:
        m = Masker(["s3cr3t-value"])
        # Its longest form is 16 bytes (base64, padded): a cut tail loses its first 15.
        self.assertEqual(m.mask_tail(b"3t-value" + b" " * 7 + b"then s3cr3t-value", True), b"then ***")
        self.assertEqual(m.mask_tail(b"3t-value then s3cr3t-value", False), b"3t-value then ***")
        self.assertEqual(m.mask("why: s3cr3t-value"), "why: ***")


class AttemptTest(unittest.TestCase):
    def test_a_secret_that_cannot_be_resolved_fails_the_attempt_unrun(self) -> None:
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
            "secrets": {"DB_PASSWORD": {"env": "CHRONOLOG_TEST_NO_SUCH_VARIABLE"}},
        }
        os.environ.pop("CHRONOLOG_TEST_NO_SUCH_VARIABLE", None)
        with tempfile.TemporaryDirectory() as out:
            a = Attempt(cmd, "w1-1", out, NoSpares(), reports.append, ended.append)  # type: ignore[arg-type]
            a.run()
        self.assertEqual([r["kind"] for r in reports], ["started", "failed"])
        self.assertEqual(
            reports[-1]["error"],
            {
                "kind": "exception",
                "message": "secret DB_PASSWORD (environment variable CHRONOLOG_TEST_NO_SUCH_VARIABLE): "
                "the variable is not set on this worker",
            },
        )
        self.assertEqual(ended, [a])


if __name__ == "__main__":
    unittest.main()
