"""How the Python worker delivers what it reports, against a scheduler played by this test (the
protocol's HTTP routes, answering as the scheduler does): the small rest of an attempt's output
goes inside its end (one request), a larger one is uploaded first; an attempt's start is
delivered while the ends of others are still being posted; a run its stream delivered a quarter
of its lease late runs only once its start is accepted."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable
from urllib.parse import urlsplit

PACKAGE = Path(__file__).resolve().parents[1]
INLINE_MAX = 16 * 1024


class Fake:
    """The scheduler's side: what the worker sent, commands to send it, ends to hold."""

    def __init__(self) -> None:
        self.lock = threading.Condition()
        self.posts: list[list[dict[str, Any]]] = []
        self.puts: dict[str, bytes] = {}
        self.commands: list[dict[str, Any]] = []
        #: While set, a POST carrying an end is answered only once this is cleared.
        self.hold_ends = threading.Event()
        #: Set: the post carrying a start is answered this many seconds late, later ones never.
        self.answer_start_late: float | None = None
        self.start_answered_at: float | None = None
        self.held = threading.Event()
        self.release = threading.Event()
        #: token -> how long before it is sent its batch says it was queued (ms).
        self.late_ms: dict[str, float] = {}
        #: The start of this token is answered once ``release_start`` is set.
        self.hold_start: str | None = None
        self.release_start = threading.Event()
        #: The starts of these tokens are refused (given up meanwhile, says the scheduler).
        self.refuse_starts: set[str] = set()
        #: The start permission of these tokens is not sent on its start (the test sends it).
        self.hold_proceed: set[str] = set()

    def reports(self) -> list[dict[str, Any]]:
        with self.lock:
            return [r for batch in self.posts for r in batch]

    def send(self, *messages: dict[str, Any]) -> None:
        with self.lock:
            self.commands.extend(messages)
            self.lock.notify_all()


def handler(fake: Fake) -> type[BaseHTTPRequestHandler]:
    class Scheduler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _answer(self, status: int, doc: dict[str, Any]) -> None:
            raw = json.dumps(doc).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)
            except (BrokenPipeError, ConnectionResetError):
                pass  # (a worker that stopped meanwhile: an answer held past its end)

        def _body(self) -> bytes:
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))

        def do_POST(self) -> None:  # noqa: N802
            path = urlsplit(self.path).path
            body = json.loads(self._body())
            if path == "/api/v1/workers":
                self._answer(
                    200,
                    {
                        "protocol": 1,
                        "session": "s1",
                        "actor": "token:test",
                        "adopted": [],
                        "stop": [],
                        "keepaliveMs": 5000,
                        "silenceMs": 20000,
                        "maxReportBatch": 1000,
                        "maxOutputChunk": 262144,
                        "outputMaxBytes": 1 << 20,
                        "inlineOutputMax": INLINE_MAX,
                        "now": _clock_ms(),
                    },
                )
                return
            messages = body["messages"]
            with fake.lock:
                fake.posts.append(messages)
                fake.lock.notify_all()
            for r in messages:
                # (A start permission is the answer of an attempt that waits for one: not of an
                # idempotent attempt, whose run came late, that waits for its start's answer.)
                if r["kind"] == "started" and r["token"] not in fake.late_ms and r["token"] not in fake.hold_proceed:
                    fake.send({"kind": "proceed", "token": r["token"]})
            starts = {r["token"] for r in messages if r["kind"] == "started"}
            if fake.hold_start in starts:
                fake.release_start.wait(30)
            refused = [
                {"kind": "started", "token": t, "reason": "attempt 1 of its instance already ended (abandoned)"}
                for t in sorted(starts & fake.refuse_starts)
            ]
            if refused:
                self._answer(409, {"type": "urn:chronolog:problem:report_refused", "accepted": len(messages) - len(refused), "refused": refused, "now": _clock_ms()})
                return
            if fake.answer_start_late is not None:
                if fake.start_answered_at is not None or not any(r["kind"] == "started" for r in messages):
                    fake.release.wait(60)  # (the link is cut until the test ends)
                else:
                    time.sleep(fake.answer_start_late)
                    fake.start_answered_at = time.monotonic()
            if fake.hold_ends.is_set() and any(r["kind"] in ("succeeded", "failed") for r in messages):
                fake.held.set()
                fake.release.wait(30)
            self._answer(200, {"accepted": len(messages), "refused": [], "now": _clock_ms()})

        def do_PUT(self) -> None:  # noqa: N802
            parts = urlsplit(self.path)
            token = parts.path.split("/")[-2]
            offset = int(parts.query.split("=")[1])
            chunk = self._body()
            with fake.lock:
                held = fake.puts.get(token, b"")
                fake.puts[token] = held[:offset] + chunk
                size = len(fake.puts[token])
            self._answer(200, {"bytes": size})

        def do_DELETE(self) -> None:  # noqa: N802
            self._answer(200, {})

        def do_GET(self) -> None:  # noqa: N802
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            sent = 0
            try:
                while True:
                    with fake.lock:
                        fake.lock.wait_for(lambda: len(fake.commands) > sent, timeout=1.0)
                        batch = fake.commands[sent:]
                    sent += len(batch)
                    if batch:
                        late = max((fake.late_ms.get(m.get("token", ""), 0.0) for m in batch), default=0.0)
                        data = json.dumps({"messages": batch, "at": _clock_ms() - late})
                        self.wfile.write(f"event: commands\ndata: {data}\n\n".encode())
                    else:
                        self.wfile.write(b": keepalive\n\n")
                    self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                return

        def log_message(self, *args: Any) -> None:
            pass

    return Scheduler


def run_command(token: str, function: str, args: dict[str, Any], idempotent: bool) -> dict[str, Any]:
    return {
        "kind": "run",
        "token": token,
        "attempt": 1,
        "instanceStream": f"instance-{token}",
        "taskKey": "p/a/t",
        "logicalDate": "2026-01-01T00:00:00.000Z",
        "queue": "py",
        "leaseSeconds": 30,
        "awaitProceed": not idempotent,
        "operator": {"type": "python", "function": function, "args": args},
        "env": {},
    }


def wait_for(what: str, check: Callable[[], Any], timeout: float = 30.0) -> Any:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = check()
        if got:
            return got
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


class WorkerDeliveryTest(unittest.TestCase):
    def setUp(self) -> None:
        self.fake = Fake()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler(self.fake))
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.dir = tempfile.mkdtemp(prefix="chronolog-worker-delivery-")
        env = dict(os.environ, PYTHONPATH=f"{PACKAGE / 'src'}{os.pathsep}{PACKAGE}", PYTHONDONTWRITEBYTECODE="1")
        self.worker = subprocess.Popen(
            [
                sys.executable, "-m", "chronolog.worker",
                "--connect", f"http://127.0.0.1:{self.server.server_address[1]}",
                "--token", "t", "--queue", "py", "--capacity", "4",
                "--import", "tests.worker_tasks", "--dir", self.dir,
            ],
            cwd=PACKAGE,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

    def tearDown(self) -> None:
        self.fake.release.set()
        self.worker.terminate()
        try:
            self.worker.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            self.worker.kill()
            self.worker.communicate()
        self.server.shutdown()
        self.server.server_close()

    def end_of(self, token: str) -> dict[str, Any]:
        return wait_for(
            f"the end of {token}",
            lambda: next((r for r in self.fake.reports() if r["kind"] in ("succeeded", "failed") and r["token"] == token), None),
        )

    def test_a_small_output_goes_inside_the_end_and_a_large_one_is_uploaded_first(self) -> None:
        self.fake.send(
            run_command("small", "tests.worker_tasks:loud", {"lines": 3}, idempotent=False),
            run_command("large", "tests.worker_tasks:loud", {"lines": 5000}, idempotent=True),
        )
        small = self.end_of("small")
        self.assertEqual(small["kind"], "succeeded", small)
        rest = small["outputRest"]
        self.assertEqual(rest["offset"], 0)
        self.assertEqual(base64.b64decode(rest["data"]), b"line 0\nline 1\nline 2\n")
        self.assertEqual(small["outputFile"]["bytes"], len(base64.b64decode(rest["data"])))
        self.assertNotIn("small", self.fake.puts, "a small output is not uploaded as well")

        large = self.end_of("large")
        self.assertEqual(large["kind"], "succeeded", large)
        self.assertNotIn("outputRest", large)
        expected = "".join(f"line {i}\n" for i in range(5000)).encode()
        self.assertGreater(len(expected), INLINE_MAX)
        self.assertEqual(self.fake.puts.get("large"), expected, "uploaded whole before its end")
        self.assertEqual(large["outputFile"]["bytes"], len(expected))

    def test_a_start_is_not_held_behind_the_ends_being_posted(self) -> None:
        self.fake.hold_ends.set()
        self.fake.send(run_command("first", "tests.worker_tasks:loud", {"lines": 1}, idempotent=False))
        wait_for("the first end's post, held", self.fake.held.is_set)
        self.fake.send(run_command("second", "tests.worker_tasks:loud", {"lines": 1}, idempotent=False))
        # The second attempt's start reaches the scheduler, its function runs (after the proceed
        # its start brought) and ends, all while the first one's end is still unanswered.
        wait_for(
            "the second start",
            lambda: any(r["kind"] == "started" and r["token"] == "second" for r in self.fake.reports()),
        )
        wait_for("the second attempt's output", lambda: Path(self.dir, "output", "second.log").exists())
        self.assertFalse(self.fake.release.is_set())
        self.fake.release.set()
        self.assertEqual(self.end_of("first")["kind"], "succeeded")
        self.assertEqual(self.end_of("second")["kind"], "succeeded")
        # Each attempt's reports arrive in order: its start before its end.
        order = [(r["kind"], r["token"]) for r in self.fake.reports() if r["kind"] != "heartbeat"]
        for token in ("first", "second"):
            self.assertLess(order.index(("started", token)), order.index(("succeeded", token)), order)

    def test_the_fence_counts_from_when_the_last_answered_report_was_sent(self) -> None:
        # Lease 9 s: a report not answered in 3 s is given up, and two thirds of it is 6 s. The
        # start is answered 2.8 s late (the scheduler writing it), then nothing is (a cut link).
        # The scheduler's lease ran from when it heard the start, before its answer: the attempt
        # is fenced 6 s after the send, 3.2 s after the answer, never 6 s after the answer.
        self.fake.answer_start_late = 2.8
        starts = Path(self.dir, "starts")
        command = run_command(
            "fenced",
            "tests.worker_tasks:slow",
            {"starts": str(starts), "ends": str(Path(self.dir, "ends"))},
            idempotent=True,
        )
        self.fake.send({**command, "leaseSeconds": 9})
        answered = wait_for("the start's late answer", lambda: self.fake.start_answered_at)
        lines: list[str] = []
        fenced = threading.Event()

        def read() -> None:
            assert self.worker.stdout is not None
            for line in self.worker.stdout:
                lines.append(line)
                if " fenced: " in line:
                    fenced.set()
                    return

        threading.Thread(target=read, daemon=True).start()
        self.assertTrue(fenced.wait(15), "".join(lines))
        after_answer = time.monotonic() - answered
        self.assertLess(after_answer, 5.0, f"fenced {after_answer:.1f} s after the answer")
        pid = int(wait_for("the attempt's pid", lambda: starts.exists() and starts.read_text().split()[0]))
        wait_for("the attempt's process to be gone", lambda: not _alive(pid), 10)


    def test_a_run_its_stream_delivered_a_quarter_of_its_lease_late_runs_once_its_start_is_accepted(self) -> None:
        # Lease 9 s: a run queued 4 s before it is sent (held up on a cut link, say) may have been
        # given up by now, and its retry given to another worker: it reports its start and waits,
        # unrun, for the answer. Accepted, it runs; refused, it never runs.
        for token in ("late", "given-up"):
            self.fake.late_ms[token] = 4000.0
        self.fake.hold_start = "late"
        self.fake.refuse_starts.add("given-up")
        ran = {t: Path(self.dir, f"{t}-starts") for t in ("late", "given-up")}
        lines: list[str] = []
        said = threading.Event()

        def read() -> None:
            assert self.worker.stdout is not None
            for line in self.worker.stdout:
                lines.append(line)
                if "held: the run of late came" in line:
                    said.set()

        threading.Thread(target=read, daemon=True).start()

        def send(token: str) -> None:
            args = {"starts": str(ran[token]), "ends": str(Path(self.dir, f"{token}-ends")), "seconds": 0.1}
            self.fake.send({**run_command(token, "tests.worker_tasks:slow", args, idempotent=True), "leaseSeconds": 9})

        send("given-up")
        given_up = self.end_of("given-up")
        self.assertEqual(given_up["kind"], "failed", given_up)
        self.assertIn("its start was refused", json.dumps(given_up))
        send("late")
        self.assertTrue(said.wait(15), "".join(lines))
        said_line = next(line for line in lines if "held: the run of late" in line)
        self.assertIn("a quarter of its lease or more", said_line)
        wait_for("the late start's post", lambda: any(r["kind"] == "started" and r["token"] == "late" for r in self.fake.reports()))
        time.sleep(0.3)
        self.assertFalse(ran["late"].exists(), "held until its start is answered")
        self.fake.release_start.set()
        self.assertEqual(self.end_of("late")["kind"], "succeeded")
        self.assertTrue(ran["late"].exists())
        self.assertFalse(ran["given-up"].exists(), "refused: never ran")

    def test_a_held_run_never_starts_once_the_worker_is_stopping_even_if_its_start_is_accepted(self) -> None:
        # Held for its start's answer when the worker is told to stop (30 s of grace): the start
        # accepted meanwhile, it does not run (it would only be killed when the grace ends); it is
        # reported interrupted by the shutdown, not failed.
        self.fake.late_ms["late"] = 4000.0
        self.fake.hold_start = "late"
        starts = Path(self.dir, "late-starts")
        args = {"starts": str(starts), "ends": str(Path(self.dir, "late-ends")), "seconds": 0.1}
        self.fake.send({**run_command("late", "tests.worker_tasks:slow", args, idempotent=True), "leaseSeconds": 9})
        wait_for("the late start's post", lambda: any(r["kind"] == "started" and r["token"] == "late" for r in self.fake.reports()))
        self.worker.terminate()
        time.sleep(0.3)
        self.fake.release_start.set()
        end = self.end_of("late")
        self.assertEqual(end["kind"], "failed", end)
        self.assertEqual(end["error"]["kind"], "interrupted", end)
        self.assertIn("worker shutdown", end["error"]["message"])
        self.assertNotIn("neverStarted", end)
        self.assertFalse(starts.exists(), "held, then stopping: never ran")
        self.assertEqual(self.worker.wait(20), 0)

    def test_a_start_permission_that_comes_once_the_worker_is_stopping_starts_nothing(self) -> None:
        # Not idempotent: it reports its start and waits for its permission, which comes only
        # once the worker was told to stop. It never runs, and is reported interrupted.
        self.fake.hold_proceed.add("careful")
        starts = Path(self.dir, "careful-starts")
        args = {"starts": str(starts), "ends": str(Path(self.dir, "careful-ends")), "seconds": 0.1}
        self.fake.send(run_command("careful", "tests.worker_tasks:slow", args, idempotent=False))
        wait_for("its start", lambda: any(r["kind"] == "started" and r["token"] == "careful" for r in self.fake.reports()))
        self.worker.terminate()
        time.sleep(0.3)
        self.fake.send({"kind": "proceed", "token": "careful"})
        end = self.end_of("careful")
        self.assertEqual((end["kind"], end["error"]["kind"]), ("failed", "interrupted"), end)
        time.sleep(0.3)
        self.assertFalse(starts.exists(), "told to stop first: never ran")
        self.assertEqual(self.worker.wait(20), 0)

    def test_a_run_still_queued_when_the_worker_stops_is_reported_interrupted_and_never_started(self) -> None:
        # Capacity 4: the fifth waits in the queue; stopping, it never starts, and no start of it
        # is reported (one that must wait for its start permission would otherwise be taken for
        # started, and left to an operator).
        busy = [f"busy-{i}" for i in range(4)]
        for token in busy:
            args = {"starts": str(Path(self.dir, f"{token}-starts")), "ends": str(Path(self.dir, f"{token}-ends")), "seconds": 1.0}
            self.fake.send(run_command(token, "tests.worker_tasks:slow", args, idempotent=True))
        wait_for("four running", lambda: all(Path(self.dir, f"{t}-starts").exists() for t in busy))
        args = {"starts": str(Path(self.dir, "queued-starts")), "ends": str(Path(self.dir, "queued-ends")), "seconds": 0.1}
        self.fake.send(run_command("queued", "tests.worker_tasks:slow", args, idempotent=False))
        time.sleep(0.5)
        self.worker.terminate()
        end = self.end_of("queued")
        self.assertEqual((end["kind"], end["error"]["kind"]), ("failed", "interrupted"), end)
        # Said so: no start is claimed for it (nor for those that ran, nor for one held for its
        # start's answer, below).
        self.assertIs(end.get("neverStarted"), True, end)
        self.assertFalse(any(r["kind"] == "started" and r["token"] == "queued" for r in self.fake.reports()))
        self.assertFalse(Path(self.dir, "queued-starts").exists())
        for token in busy:
            self.assertEqual(self.end_of(token)["kind"], "succeeded")
            self.assertNotIn("neverStarted", self.end_of(token))
        self.assertEqual(self.worker.wait(20), 0)


def _clock_ms() -> float:
    """The scheduler's clock, as its answers and command batches carry it (epoch ms)."""
    return time.time() * 1000.0


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] not in "ZX"


if __name__ == "__main__":
    unittest.main()


class EndsBehindUploadsTest(unittest.TestCase):
    """The main lane's batches, on the worker's own (no process, no link): reports arriving all
    the time hold an end waiting on its upload back once, never for good."""

    def test_an_end_put_back_once_for_what_needs_no_upload_goes_in_the_next_batch(self) -> None:
        sys.path.insert(0, str(PACKAGE / "src"))
        from chronolog.worker.remote import Worker

        worker = Worker(None, "w", "h", ["py"], 0, "test", tempfile.mkdtemp(), None, lambda _m: None)  # type: ignore[arg-type]
        worker.answer = {"session": "s", "maxReportBatch": 100, "inlineOutputMax": 0}
        beat = iter(range(1_000_000))
        heartbeat = lambda: {"kind": "heartbeat", "token": f"busy-{next(beat)}"}  # noqa: E731
        end = {"kind": "succeeded", "token": "big", "outputFile": {"path": "x", "bytes": 10_000}}
        worker.pending = [end, heartbeat()]
        posts: list[list[str]] = []
        uploaded: list[str] = []

        def post(batch: list[dict[str, Any]], answer: dict[str, Any]) -> tuple[int, dict[str, Any]]:
            posts.append([r["token"] for r in batch])
            # Another attempt's heartbeat comes while each of the first five batches is on its way.
            if len(posts) <= 5:
                worker.pending.append(heartbeat())
            return 200, {"accepted": len(batch), "refused": []}

        worker._post = post  # type: ignore[method-assign]
        worker.uploads.send = lambda token, up_to: uploaded.append(token)  # type: ignore[method-assign]
        worker._log_answer = lambda status, doc: None  # type: ignore[method-assign]
        self.assertTrue(worker.deliver())
        self.assertEqual(posts[0], ["busy-0"])
        self.assertEqual(posts[1], ["big", "busy-1"])
        self.assertEqual(uploaded, ["big"])
