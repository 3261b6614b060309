"""The Python worker's output file: kept whole up to the limit; past it, the first half, a line
saying how much was cut and the last half, as the Node worker keeps it."""

from __future__ import annotations

import hashlib
import os
import tempfile
import unittest

from chronolog.worker.output import OutputFile


class OutputFileTest(unittest.TestCase):
    def setUp(self) -> None:
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        self.path = os.path.join(self.dir.name, "t.log")

    def read(self) -> bytes:
        with open(self.path, "rb") as f:
            return f.read()

    def test_under_the_limit_it_is_kept_whole(self) -> None:
        out = OutputFile(self.path, 100)
        for chunk in (b"one\n", b"two\n", b"x" * 92):
            out.write(chunk)
        info = out.close()
        data = b"one\ntwo\n" + b"x" * 92
        self.assertEqual(self.read(), data)
        self.assertEqual(info["bytes"], 100)
        self.assertEqual(info["cutBytes"], 0)
        self.assertEqual(info["sha256"], hashlib.sha256(data).hexdigest())
        self.assertNotIn("error", info)

    def test_past_the_limit_the_middle_is_cut_and_said(self) -> None:
        out = OutputFile(self.path, 10)
        data = bytes(range(48, 48 + 40))  # 40 bytes, written in uneven chunks
        for i in range(0, 40, 7):
            out.write(data[i : i + 7])
        info = out.close()
        kept = data[:5] + b"\n[... 30 bytes cut ...]\n" + data[-5:]
        self.assertEqual(self.read(), kept)
        self.assertEqual(info["cutBytes"], 30)
        self.assertEqual(info["bytes"], len(kept))
        self.assertEqual(info["sha256"], hashlib.sha256(kept).hexdigest())

    def test_the_head_is_in_the_file_while_it_runs(self) -> None:
        out = OutputFile(self.path, 8)
        out.write(b"abcdefghij")
        self.assertEqual(self.read(), b"abcd")
        out.close()
        self.assertEqual(self.read(), b"abcd\n[... 2 bytes cut ...]\nghij")

    def test_a_file_that_cannot_be_written_is_said_not_raised(self) -> None:
        out = OutputFile(os.path.join(self.dir.name, "missing", "t.log"), 100)
        out.write(b"lost")
        info = out.close()
        self.assertEqual(info["bytes"], 0)
        self.assertIn("No such file or directory", info["error"])


if __name__ == "__main__":
    unittest.main()
