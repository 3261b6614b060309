"""What a python task's function is given: its interval, its attempt, its inputs, a log."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Mapping


class Cancelled(BaseException):
    """Raised in an attempt's function when the attempt is cancelled (or fenced): it may clean
    up, but the attempt fails either way, and its process is killed if it lingers. A subclass of
    ``BaseException``: an ``except Exception`` does not swallow it."""


@dataclass
class Context:
    """The attempt a function runs for. ``log(text)`` writes a line to the attempt's output, as
    ``print`` does (both are kept, streamed home, and shown by ``chronolog logs``)."""

    task: str
    logical_date: str
    data_interval_start: str | None
    data_interval_end: str | None
    attempt: int
    token: str
    params: Mapping[str, Any] = field(default_factory=dict)
    config: Mapping[str, Any] = field(default_factory=dict)
    args: Mapping[str, Any] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)
    #: When the attempt's time is up (an aware datetime, UTC): its start plus the operator's
    #: ``timeoutMs``, when the task declares one; None when it has no timeout. At the deadline the
    #: function is interrupted with ``Cancelled`` and the attempt fails (``timeout``).
    deadline: datetime | None = None
    #: When this worker received the attempt's run command (epoch seconds).
    received: float | None = None
    #: The task's secrets, resolved by this worker for the attempt (also in ``env`` and
    #: ``os.environ``, named as the secrets); masked (``***``) in its output and reports.
    secrets: Mapping[str, str] = field(default_factory=dict)
    #: Set once the attempt is cancelled (the function is also interrupted with ``Cancelled``).
    cancelled: bool = False

    def log(self, text: str) -> None:
        out = sys.stdout
        out.write(text if text.endswith("\n") else text + "\n")
        out.flush()

    def remaining(self) -> float | None:
        """Seconds left before the deadline, or None."""
        return None if self.deadline is None else max(0.0, self.deadline.timestamp() - time.time())
