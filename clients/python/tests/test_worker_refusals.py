"""The Python worker's refusals: bad input said at once (exit 2), and a scheduler that refuses
it (another protocol version) ending it with the scheduler's reason (exit 2)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

PACKAGE = Path(__file__).resolve().parents[1]


def worker(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(PACKAGE / "src"), PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run(
        [sys.executable, "-m", "chronolog.worker", *args],
        cwd=PACKAGE,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


class Scheduler(BaseHTTPRequestHandler):
    """Answers a registration as a scheduler of another protocol version would."""

    answer: tuple[int, dict[str, Any]] = (200, {})
    seen: list[dict[str, Any]] = []

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        Scheduler.seen.append(body)
        status, doc = Scheduler.answer
        raw = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/problem+json" if status >= 400 else "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: Any) -> None:
        pass


class WorkerRefusalTest(unittest.TestCase):
    def test_bad_input_is_refused_at_once(self) -> None:
        r = worker("--connect", "http://127.0.0.1:9", "--token", "t", "--queue", "py", "--id", "w12-3")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("not of the form w<pid>-<n>", r.stderr)
        r = worker("--connect", "http://10.1.2.3:8080", "--token", "t", "--queue", "py")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("plain http to a host that is not loopback", r.stderr)
        r = worker("--connect", "http://127.0.0.1:9", "--token", "t", "--queue", "py", "--import", "tests.no_such_module")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--import tests.no_such_module failed", r.stderr)
        self.assertIn("ModuleNotFoundError", r.stderr)
        r = worker("--connect", "http://127.0.0.1:9", "--queue", "py")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--token", r.stderr)

    def test_a_scheduler_of_another_protocol_version_ends_it_with_its_reason(self) -> None:
        server = ThreadingHTTPServer(("127.0.0.1", 0), Scheduler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{server.server_address[1]}"
        try:
            Scheduler.seen = []
            Scheduler.answer = (
                400,
                {
                    "type": "urn:chronolog:problem:protocol_version",
                    "title": "protocol version",
                    "detail": "this scheduler speaks worker protocol 2, the worker speaks 1",
                },
            )
            r = worker("--connect", url, "--token", "t", "--queue", "py", "--queue", "py2", "--id", "pv-1")
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn("the scheduler refused this worker (HTTP 400)", r.stderr)
            self.assertIn("this scheduler speaks worker protocol 2, the worker speaks 1", r.stderr)
            self.assertEqual(len(Scheduler.seen), 1)
            self.assertEqual(Scheduler.seen[0]["protocol"], 1)
            self.assertEqual(Scheduler.seen[0]["queues"], ["py", "py2"])
            self.assertEqual(Scheduler.seen[0]["id"], "pv-1")
            # An answer in another version is refused by the worker itself.
            Scheduler.answer = (200, {"protocol": 2, "session": "s"})
            r = worker("--connect", url, "--token", "t", "--queue", "py", "--id", "pv-2")
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn("the scheduler speaks worker protocol 2, this worker speaks 1", r.stderr)
        finally:
            server.shutdown()
            server.server_close()


if __name__ == "__main__":
    unittest.main()
