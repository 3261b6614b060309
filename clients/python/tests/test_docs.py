"""The ten lines of docs/python.md run as written, against a real ``chronolog up``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import unittest
from pathlib import Path

from tests.server import ROOT, Chronolog

PAGE = ROOT / "docs" / "python.md"
PACKAGE = Path(__file__).resolve().parents[1]


def first_python_block(text: str) -> str:
    m = re.search(r"```python\n(.*?)```", text, re.S)
    if m is None:
        raise AssertionError(f"{PAGE} has no python block")
    return m.group(1)


class DocsTest(unittest.TestCase):
    def test_the_ten_line_example_runs_as_written(self) -> None:
        code = first_python_block(PAGE.read_text())
        self.assertLessEqual(len([line for line in code.splitlines() if line.strip()]), 10)
        server = Chronolog("docs")
        try:
            token = server.token("me", "admin")
            url = server.start()
            env = dict(os.environ, CHRONOLOG_URL=url, CHRONOLOG_TOKEN=token, PYTHONPATH=str(PACKAGE / "src"))
            r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout.strip(), "success")
        finally:
            server.stop()


if __name__ == "__main__":
    unittest.main()
