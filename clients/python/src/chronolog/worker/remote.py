"""A Python worker speaking the remote worker protocol, version 1, to a scheduler's API: it
registers (announcing what it still runs), reads its commands from a Server-Sent Events stream,
runs each attempt in a process of its own, posts its reports in batches (an attempt's start on a
connection of its own, never behind the reports and uploads of attempts that ended) and its
attempts' output in chunks by offset, or the small rest of it inside the attempt's end. When the
link breaks it reconnects with backoff; when it cannot deliver a report for two thirds of an
attempt's lease it fences itself: it kills its idempotent attempts before the scheduler may run
them again elsewhere."""

from __future__ import annotations

import json
import os
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable
from urllib.parse import quote

from .attempt import Attempt, Spares
from .clock import SchedulerClock, late_run
from .forks import ForkServer
from .link import SESSION, Link, LinkDown, json_doc
from .output import DEFAULT_OUTPUT_MAX_BYTES
from .uploads import OutputUploads

PROTOCOL = 1
MAX_BACKOFF = 10.0
MAX_PENDING = 100_000
MAX_BATCH_BYTES = 512 * 1024
#: Attempts' outputs sent at once.
UPLOADERS = 4


class FatalRefusal(Exception):
    """The scheduler refuses this worker for good (its version, token or queues)."""


class Worker:
    def __init__(
        self,
        link: Link,
        worker_id: str,
        host: str,
        queues: list[str],
        capacity: int,
        version: str,
        out_dir: str,
        server: ForkServer,
        log: Callable[[str], None],
    ) -> None:
        self.link = link
        self.id = worker_id
        self.host = host
        self.queues = queues
        self.capacity = capacity
        self.version = version
        self.out_dir = out_dir
        # Twice the capacity: a burst of attempts ending at once (and as many starting) finds
        # spares ready while the ones taken are forked again.
        self.spares = Spares(server, min(2 * capacity, 32))
        self.log = log
        self.lock = threading.RLock()
        self.wake = threading.Condition(self.lock)
        self.answer: dict[str, Any] | None = None
        self.attempts: dict[str, Attempt] = {}
        self.queued: list[Attempt] = []
        self.running = 0
        self.finished: list[str] = []  # recent tokens, not to run twice
        self.pending: list[dict[str, Any]] = []
        self.sending: list[dict[str, Any]] = []
        # Starts go on a lane of their own: an attempt awaiting its start permission waits on its
        # start's delivery, which must not queue behind ends and their output.
        self.start_pending: list[dict[str, Any]] = []
        self.starting: list[dict[str, Any]] = []
        #: Attempts whose start is not delivered yet: their other reports wait for it.
        self.unacked_starts: set[str] = set()
        self.start_wake = threading.Condition(self.lock)
        self.stopped: set[str] = set()
        self.asked: dict[str, list[str]] = {}
        self.uploads = OutputUploads(
            link, lambda token: self.path(f"/attempts/{quote(token, safe='')}/output"), lambda: self.answer, self.lock
        )
        self.last_delivered = time.monotonic()
        #: The scheduler's clock, from its answers: how late its commands come.
        self.clock = SchedulerClock()
        #: Attempts whose run came late, waiting for the answer to their start.
        self.late_starts: set[str] = set()
        self.stopping = False
        self.backoff = 0.25
        self.uploaders = ThreadPoolExecutor(max_workers=UPLOADERS, thread_name_prefix="upload")

    # --- the paths -----------------------------------------------------------------------
    def path(self, rest: str = "") -> str:
        return f"/api/v1/workers/{quote(self.id, safe='')}{rest}"

    def headers(self) -> dict[str, str]:
        return {SESSION: (self.answer or {}).get("session", "")}

    # --- running -------------------------------------------------------------------------
    def run(self) -> None:
        """Until ``stop``; raises FatalRefusal when the scheduler refuses the worker for good."""
        for target in (self._deliver_loop, self._start_loop, self._tick_loop):
            threading.Thread(target=target, daemon=True).start()
        while not self.stopping:
            try:
                self.register()
                self.backoff = 0.25
                self.listen()
            except FatalRefusal:
                raise
            except Exception as error:
                if self.stopping:
                    break
                self.log(f"link to {self.link.origin}: {error}; trying again")
            if self.stopping:
                break
            time.sleep(self.backoff + random.random() * self.backoff * 0.5)
            self.backoff = min(MAX_BACKOFF, self.backoff * 2)

    def register(self) -> None:
        with self.lock:
            running = list(self.attempts)
            for r in self._unsent():
                if r["kind"] in ("succeeded", "failed", "started", "heartbeat") and r["token"] not in running:
                    running.append(r["token"])
        body = {
            "protocol": PROTOCOL,
            "id": self.id,
            "host": self.host,
            "queues": self.queues,
            "capacity": self.capacity,
            "version": self.version,
            "running": running,
        }
        # The scheduler renews the leases of the attempts it adopts when it hears this: from
        # then, at the latest, are they silent (see _tick_loop).
        sent_at = time.monotonic()
        status, raw = self.link.request("POST", "/api/v1/workers", json_body=body)
        doc = json_doc(raw)
        if status == 200:
            # (Perhaps another process than the one heard before: its reading replaces the kept one.)
            self.clock.registered(doc.get("now"))
        if status != 200:
            detail = doc.get("detail") if isinstance(doc, dict) and isinstance(doc.get("detail"), str) else raw[:500].decode("utf-8", "replace")
            if status in (400, 401, 403):
                raise FatalRefusal(f"the scheduler refused this worker (HTTP {status}): {detail}")
            raise RuntimeError(f"registration answered HTTP {status}: {detail}")
        if doc.get("protocol") != PROTOCOL:
            raise FatalRefusal(
                f"the scheduler speaks worker protocol {doc.get('protocol')}, this worker speaks {PROTOCOL}: "
                "run a worker of the scheduler's version"
            )
        with self.lock:
            self.answer = doc
            for t in doc.get("stop", []):
                self.stopped.add(t)
                self.uploads.forget(t)
                a = self.attempts.get(t)
                if a is not None:
                    a.cancel("the scheduler says the attempt is no longer current", 0)
            self.pending = [r for r in self.pending if r.get("token") not in self.stopped]
            self.start_pending = [r for r in self.start_pending if r.get("token") not in self.stopped]
            self.unacked_starts.intersection_update(r["token"] for r in self.start_pending + self.starting)
            self.last_delivered = max(self.last_delivered, sent_at)
            self.wake.notify_all()
        extra = f"; {len(doc.get('adopted', []))} running attempts adopted, {len(doc.get('stop', []))} stopped" if running else ""
        self.log(
            f"connected to {self.link.origin} as {doc.get('actor')}: queues {', '.join(self.queues)}, "
            f"capacity {self.capacity}{extra}"
        )

    def listen(self) -> None:
        answer = self.answer or {}
        closed: list[str] = []

        def on_event(event: str, data: str) -> None:
            if event == "commands":
                batch = json.loads(data)
                self.commands(batch.get("messages", []), self.clock.since(batch.get("at")))
            elif event == "closed":
                closed.append(str(json.loads(data).get("reason", "")))

        self.link.stream(self.path("/commands"), self.headers(), on_event, answer.get("silenceMs", 20_000) / 1000)
        raise RuntimeError(
            f"the scheduler closed the command stream: {closed[0]}" if closed else "the command stream ended"
        )

    def commands(self, messages: list[dict[str, Any]], late_ms: float = 0.0) -> None:
        """The commands of one batch of the stream, ``late_ms`` at the least after the scheduler
        queued them (see SchedulerClock)."""
        for m in messages:
            kind = m.get("kind")
            with self.lock:
                if kind == "run":
                    token = m["token"]
                    if self.stopping or token in self.attempts or token in self.finished:
                        continue
                    limit = (self.answer or {}).get("outputMaxBytes", DEFAULT_OUTPUT_MAX_BYTES)
                    a = Attempt(m, self.id, self.out_dir, self.spares, self.push, self._attempt_done, int(limit))
                    if late_run(m, late_ms):
                        # Its start reported, it waits for the scheduler's answer (see deliver_starts).
                        a.awaits_start = True
                        self.late_starts.add(token)
                        self.log(
                            f"held: the run of {token} came {late_ms / 1000:.1f} s after the scheduler sent it, "
                            "a quarter of its lease or more (it may have been given up and run elsewhere since): "
                            "it starts once the scheduler accepts its start"
                        )
                    self.attempts[token] = a
                    self.queued.append(a)
                    self.pump()
                elif kind == "proceed":
                    a = self.attempts.get(m["token"])
                    if a is not None and self.stopping:
                        self._never_starts(a)
                    elif a is not None:
                        a.proceed()
                elif kind == "cancel":
                    self.cancel(m["token"], m.get("reason", "cancelled"))
                elif kind == "query":
                    tokens = m.get("tokens") or []
                    known = list(self.attempts) if not tokens else [t for t in tokens if t in self.attempts]
                    finished = [
                        r["token"]
                        for r in self.sending + self.pending
                        if r["kind"] in ("succeeded", "failed") and (not tokens or r["token"] in tokens)
                    ]
                    self.push(
                        {
                            "kind": "known",
                            "requestId": m["requestId"],
                            "workerId": self.id,
                            "running": list(dict.fromkeys(known + finished)),
                        }
                    )
                # shutdown: a scheduler's shutdown is not this worker's; it reconnects.

    def cancel(self, token: str, reason: str, grace: float = 2.0) -> None:
        with self.lock:
            a = self.attempts.get(token)
            if a is None:
                return
            if a in self.queued:
                # Never started: reported at once.
                self.queued.remove(a)
                a.cancel(reason)
                threading.Thread(target=a.run, daemon=True).start()
                self.running += 1
                return
        a.cancel(reason, grace)

    def pump(self) -> None:
        with self.lock:
            while self.queued and self.running < self.capacity and not self.stopping:
                a = self.queued.pop(0)
                self.running += 1
                threading.Thread(target=a.run, daemon=True).start()

    def _attempt_done(self, a: Attempt) -> None:
        with self.lock:
            self.attempts.pop(a.token, None)
            self.late_starts.discard(a.token)
            self.running -= 1
            self.finished.append(a.token)
            if len(self.finished) > 10_000:
                del self.finished[:1000]
            self.pump()
            self.wake.notify_all()

    def push(self, report: dict[str, Any]) -> None:
        with self.lock:
            if "token" in report and report["token"] in self.stopped:
                return
            if report["kind"] == "started":
                if report.get("outputPath"):
                    self.uploads.track(report["token"], report["outputPath"])
                self.start_pending.append(report)
                self.unacked_starts.add(report["token"])
                self.start_wake.notify_all()
                return
            self.pending.append(report)
            if len(self.pending) > MAX_PENDING:
                self.pending = [r for r in self.pending if r["kind"] != "heartbeat"]
            self.wake.notify_all()

    # --- delivery ------------------------------------------------------------------------
    def _deliver_loop(self) -> None:
        last_pump = time.monotonic()
        while True:
            with self.lock:
                if not self._sendable():
                    self.wake.wait(0.5)
                answer = self.answer
                due = answer is not None and (
                    self._sendable()
                    or time.monotonic() - self.last_delivered >= answer.get("keepaliveMs", 5000) / 1000
                )
            if time.monotonic() - last_pump >= 1.0:
                last_pump = time.monotonic()
                self.uploads.pump()
            if due:
                if not self.deliver():
                    time.sleep(0.5)

    def _sendable(self) -> bool:
        """Whether a report waits that the main lane may send (not one behind its start)."""
        return any(r.get("token") not in self.unacked_starts for r in self.pending)

    def _unsent(self) -> list[dict[str, Any]]:
        """Every report not yet delivered, starts first."""
        return self.starting + self.start_pending + self.sending + self.pending

    def _start_loop(self) -> None:
        while True:
            with self.lock:
                while not self.start_pending or self.answer is None:
                    self.start_wake.wait(0.5)
            if not self.deliver_starts():
                time.sleep(0.25)

    def deliver_starts(self) -> bool:
        """Posts the starts waiting, on this lane's own connection. False when it could not."""
        while True:
            with self.lock:
                answer = self.answer
                if answer is None:
                    return False
                if not self.start_pending:
                    return True
                batch = self.start_pending[: int(answer.get("maxReportBatch", 1000))]
                del self.start_pending[: len(batch)]
                self.starting = batch
            try:
                sent_at = time.monotonic()
                status, doc = self._post(batch, answer)
            except Exception as error:
                with self.lock:
                    self.start_pending[:0] = batch
                    self.starting = []
                if not isinstance(error, LinkDown):
                    self.log(f"could not deliver reports: {error}")
                return False
            with self.lock:
                self.starting = []
                if _not_registered(status, doc):
                    self.start_pending[:0] = batch
                    self._forget_session(answer)
                    return False
                if _heard(status, doc):
                    self.last_delivered = max(self.last_delivered, sent_at)
                    self.clock.heard(doc.get("now"))
                    self._starts_answered(batch, doc.get("refused") or [])
                else:
                    self._starts_answered(batch, None)
                for r in batch:
                    self.unacked_starts.discard(r["token"])
                self.wake.notify_all()
            self._log_answer(status, doc)

    def _starts_answered(self, batch: list[dict[str, Any]], refused: list[dict[str, Any]] | None) -> None:
        """The answer to a batch of starts (under the lock): the attempts whose run came late run
        if the scheduler accepted their start (current, their lease renewed), else never.
        ``refused`` None: the batch itself was refused, and dropped (their starts go unheard)."""
        for r in batch:
            token = r.get("token", "")
            if r.get("kind") != "started" or token not in self.late_starts:
                continue
            self.late_starts.discard(token)
            a = self.attempts.get(token)
            if a is None:
                continue
            # Any refusal of the start stops it, whatever it says (or fails to say) why.
            refusal = None if refused is None else next(
                (x for x in refused if isinstance(x, dict) and x.get("kind") == "started" and x.get("token") == token), None
            )
            if refused is None:
                why: str | None = "the report was not delivered"
            elif refusal is None:
                why = None
            else:
                reason = refusal.get("reason")
                why = reason if isinstance(reason, str) and reason else "refused"
            if self.stopping:
                self._never_starts(a)
            elif why is None:
                a.proceed()
            else:
                threading.Thread(target=self.cancel, args=(token, f"its start was refused: {why}", 0), daemon=True).start()

    def _never_starts(self, a: Attempt) -> None:
        """The worker stopping, an attempt let go to start (its permission, or its start's
        answer, come meanwhile) ends unrun instead, interrupted by the shutdown (see stop)."""
        threading.Thread(target=a.cancel, args=("worker shutdown", 0, True), daemon=True).start()

    def deliver(self) -> bool:
        """Posts what is pending (an empty batch as a keepalive). False when it could not."""
        ends_waited = False
        while True:
            with self.lock:
                answer = self.answer
                if answer is None:
                    return False
                batch = self._next_batch(int(answer.get("maxReportBatch", 1000)))
                ends = [r for r in batch if _uploads_first(r)]
                # (A start goes on a lane of its own: nothing here waits on its answer.)
                if ends and len(ends) < len(batch) and not ends_waited:
                    # What needs no upload goes first, not behind the output of attempts that
                    # ended. The ends follow in the next batch, in their order, whatever comes
                    # behind them meanwhile (put back once: reports arriving all the time never
                    # hold them back for good).
                    self.pending[:0] = ends
                    batch = [r for r in batch if not _uploads_first(r)]
                    ends = []
                    ends_waited = True
                else:
                    ends_waited = False
                self.sending = batch
            try:
                # An attempt's output is all home before its end is reported: each attempt's at
                # once, on connections of their own.
                if len(ends) == 1:
                    self.uploads.send(ends[0]["token"], ends[0]["outputFile"]["bytes"])
                elif ends:
                    futures = [
                        self.uploaders.submit(self.uploads.send, r["token"], r["outputFile"]["bytes"]) for r in ends
                    ]
                    # (Every one waited for: none still sending when the batch is tried again.)
                    errors = [e for e in (f.exception() for f in futures) if e is not None]
                    if errors:
                        raise errors[0]
                # Answered, the request renewed the leases of this worker's attempts when the
                # scheduler heard it, which was after this: the fence counts from here, never from
                # the answer (which waits for the reports to be written).
                sent_at = time.monotonic()
                status, doc = self._post(batch, answer)
            except Exception as error:
                with self.lock:
                    self.pending[:0] = [r for r in batch if r["kind"] != "heartbeat"]
                    self.sending = []
                if not isinstance(error, LinkDown):
                    self.log(f"could not deliver reports: {error}")
                return False
            with self.lock:
                self.sending = []
                if _not_registered(status, doc):
                    self.pending[:0] = batch
                    if self._forget_session(answer):
                        return False
                    continue
                if _heard(status, doc):
                    self.last_delivered = max(self.last_delivered, sent_at)
                    self.clock.heard(doc.get("now"))
                for r in batch:
                    if r["kind"] in ("succeeded", "failed"):
                        self.uploads.forget(r["token"])
                more = self._sendable()
            self._log_answer(status, doc)
            if not more:
                return True

    def _post(self, batch: list[dict[str, Any]], answer: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """Posts a batch of reports in the session of ``answer``: (status, the answer's document).
        A request a cut link left hanging is given up in a third of the shortest lease held, so
        that the next heartbeat goes on a fresh connection well before the fence."""
        status, raw = self.link.request(
            "POST",
            self.path("/reports"),
            json_body={"messages": batch},
            headers={SESSION: answer["session"]},
            timeout=self._report_timeout(),
        )
        doc = json_doc(raw)
        if status >= 500 or status in (408, 429):
            # Not heard, or not yet (a proxy's 502, 503, 504, a timeout's 408, a limit's 429):
            # kept for later, as after a broken link.
            raise RuntimeError(f"reports answered HTTP {status}: {doc.get('detail', '') if isinstance(doc, dict) else ''}")
        return status, doc

    def _forget_session(self, answer: dict[str, Any]) -> bool:
        """The scheduler does not know the session of ``answer`` (it restarted): unless that was
        seen already and the worker registered again meanwhile, the stream is ended and the
        worker registers again. True when it was still the current session. (Under the lock.)"""
        if self.answer is not answer:
            return False
        self.answer = None
        self.link.abort_stream()
        return True

    def _log_answer(self, status: int, doc: dict[str, Any]) -> None:
        """Says what the scheduler refused of a batch, or that it answered otherwise than 200."""
        if status == 409:
            for r in doc.get("refused", []):
                self.log(f"report refused: {r.get('kind')} {r.get('token')}: {r.get('reason')}")
        elif status != 200:
            self.log(f"reports answered HTTP {status}: {doc.get('detail', '')}")

    def _report_timeout(self) -> float:
        """A third of the shortest lease of the attempts held here (at most 15 s, at least 1 s)."""
        with self.lock:
            shortest = min((a.lease for a in self.attempts.values()), default=45.0)
        return max(1.0, min(45.0, shortest) / 3)

    def _next_batch(self, most: int) -> list[dict[str, Any]]:
        """The next reports to post, in their order, but those of attempts whose start is not
        delivered yet (left pending, in theirs); a small rest of an end's output goes inside it."""
        out: list[dict[str, Any]] = []
        left: list[dict[str, Any]] = []
        size = 0
        inline_max = int((self.answer or {}).get("inlineOutputMax", 0) or 0)
        for i, r in enumerate(self.pending):
            if len(out) >= most:
                left.extend(self.pending[i:])
                break
            if r.get("token") in self.unacked_starts:
                left.append(r)
                continue
            if inline_max > 0 and _uploads_first(r) and "outputRest" not in r:
                r = self.uploads.inline_rest(r, inline_max)
            n = len(json.dumps(r))
            if out and size + n > MAX_BATCH_BYTES:
                left.extend(self.pending[i:])
                break
            out.append(r)
            size += n
        self.pending = left
        return out

    # --- heartbeats and fencing ----------------------------------------------------------
    def _tick_loop(self) -> None:
        while True:
            time.sleep(0.1)
            with self.lock:
                attempts = list(self.attempts.values())
                last_delivered = self.last_delivered
            for a in attempts:
                if a.heartbeat_due():
                    self.push(a.base("heartbeat"))
                # Fenced: no report delivered for two thirds of its lease. An attempt that came
                # after the last delivery (a retry given once a cut link is back, its reports still
                # behind a request the cut left hanging) is silent since it came.
                silent = time.monotonic() - max(last_delivered, a.arrived)
                # (One waiting for a free slot too: started later, it would run past its lease.)
                if (
                    a.idempotent
                    and a.abort is None
                    and a.state in ("queued", "waiting", "running")
                    and silent >= a.lease * 2 / 3
                ):
                    self.log(
                        f"fenced: no report delivered for {round(silent)} s, two thirds of the lease of "
                        f"{a.token}: killing it before the scheduler may run it again"
                    )
                    self.cancel(a.token, f"fenced: no report reached the scheduler for {round(silent)} s", 0)

    # --- stopping ------------------------------------------------------------------------
    def stop(self, grace: float) -> None:
        """Running attempts get ``grace`` seconds, their reports go home, then goodbye. What has
        not started (queued, or waiting for its start permission or its start's answer) never
        does: it ends at once. Each attempt stopped is reported interrupted by the shutdown, which
        is not its task's failure (see the scheduler's retry rules)."""
        with self.lock:
            self.stopping = True
            queued = list(self.queued)
            self.queued.clear()
            # Those that wait for their start permission or their start's answer (not one let go).
            waiting = [a for a in self.attempts.values() if a.awaits_start and not a.proceeded.is_set() and a not in queued]
        for a in queued:
            a.cancel("worker shutdown", interrupted=True)
            with self.lock:
                self.running += 1
            threading.Thread(target=a.run, daemon=True).start()
        for a in waiting:
            a.cancel("worker shutdown", 0, interrupted=True)
        end = time.monotonic() + grace
        while time.monotonic() < end and self.attempts:
            time.sleep(0.1)
        for a in list(self.attempts.values()):
            a.cancel(f"worker shutdown (grace of {round(grace * 1000)} ms elapsed)", 0, interrupted=True)
        end = time.monotonic() + 5
        while time.monotonic() < end and self.attempts:
            time.sleep(0.05)
        # What is left to report goes home on the two lanes (an end waits for its start's
        # answer): for as long as one of their requests is on its way (an upload of a large
        # output over a slow link included), and five seconds more of tries while none is (what a
        # scheduler out of reach did not hear is its reconcile loop's to settle).
        idle_until = time.monotonic() + 5
        with self.lock:
            while self._unsent():
                if self.starting or self.sending:
                    idle_until = time.monotonic() + 5
                elif time.monotonic() >= idle_until:
                    break
                self.wake.notify_all()
                self.start_wake.notify_all()
                self.wake.wait(0.05)
        if self.answer is not None:
            try:
                self.link.request("DELETE", self.path(), headers=self.headers(), timeout=5)
            except LinkDown:
                pass
        self.link.abort_stream()


def _uploads_first(r: dict[str, Any]) -> bool:
    """An attempt's end whose output must be sent before it is reported (not inside it)."""
    return r["kind"] in ("succeeded", "failed") and bool(r.get("outputFile")) and "outputRest" not in r


def _heard(status: int, doc: dict[str, Any]) -> bool:
    """Whether the scheduler itself answered a batch (and so renewed the leases): 200, or 409
    refusing reports; a refusal of the request itself (400, 401, 413) is no sign of it."""
    return status == 200 or (status == 409 and isinstance(doc.get("refused"), list))


def _not_registered(status: int, doc: dict[str, Any]) -> bool:
    """The scheduler answered that it does not know the worker's session."""
    return status == 409 and str(doc.get("type", "")).endswith(":not_registered")
