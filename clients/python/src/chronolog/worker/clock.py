"""The scheduler's clock as a remote worker knows it (see SchedulerClock)."""

from __future__ import annotations

import math
import time
from typing import Any, Callable

#: How long an answer's reading of the scheduler's clock is kept against lower ones (ms).
KEEP_MS = 60_000.0


def monotonic_ms() -> float:
    return time.monotonic() * 1000.0


class SchedulerClock:
    """At least what the scheduler's latest answers said its clock read (their ``now``, epoch
    ms), advanced by the worker's monotonic clock since each was read. An answer was stamped
    before it was read, so this is never ahead of the scheduler's clock. The highest reading is
    kept (the one that travelled fastest), and replaced by a newer one, however low, once it is a
    minute old: the two clocks' rates differ a little, and a reading kept for hours could run
    ahead of the scheduler's.

    With it the worker knows how long, at the least, a command took to reach it (a command batch
    carries the scheduler's clock as it was queued: ``at``): a stream that a cut link held up
    delivers what it held when the link is back, and by then the scheduler may have given an
    attempt up and its retry to another worker."""

    def __init__(self, local_ms: Callable[[], float] = monotonic_ms) -> None:
        self._local_ms = local_ms
        self._offset: float | None = None
        self._read_at = 0.0

    def heard(self, scheduler_now: Any) -> None:
        """An answer of the scheduler, stamped ``scheduler_now`` (epoch ms), was just read."""
        if not _finite(scheduler_now):
            return
        local = self._local_ms()
        offset = float(scheduler_now) - local
        if self._offset is None or offset >= self._offset or local - self._read_at > KEEP_MS:
            self._offset = offset
            self._read_at = local

    def registered(self, scheduler_now: Any) -> None:
        """A registration's answer was just read: the scheduler may be another process than the
        one heard before (restarted, its clock counting from another origin), so its reading
        replaces whatever was kept."""
        self._offset = None
        self.heard(scheduler_now)

    def since(self, at: Any) -> float:
        """How long ago the scheduler's clock read ``at`` (ms), at the least: 0 when unknown (no
        answer yet, or a scheduler that does not stamp its commands)."""
        if self._offset is None or not _finite(at):
            return 0.0
        return max(0.0, self._offset + self._local_ms() - float(at))


def late_run(command: dict[str, Any], late_ms: float) -> bool:
    """Whether a run came too late to be started on its own: an idempotent attempt (one that
    waits for no start permission) whose command took a quarter of its lease or more to come.
    The fence kills an attempt two thirds of its lease after the last report the scheduler heard
    (or after its command came), so that it ends before the scheduler, a lease after giving it,
    may take it for lost and give its retry out; that holds only for a command that came within
    the lease's other third, less the time between two looks of the fence and the kill: a
    quarter keeps that margin. A late one reports its start and waits, unrun, for the answer:
    accepted, the attempt is current and its lease runs from then; refused, or not delivered, it
    never runs. One that waits for its start permission anyway is safe however late."""
    lease = command.get("leaseSeconds")
    lease_ms = (float(lease) if _finite(lease) and lease > 0 else 30.0) * 1000.0
    return command.get("awaitProceed") is not True and late_ms * 4 >= lease_ms


def _finite(value: Any) -> bool:
    """A number (not a bool), and finite."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
