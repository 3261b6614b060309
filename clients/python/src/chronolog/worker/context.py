"""What a python task's function is given: its interval, its attempt, its inputs, a log."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
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
    #: When the worker stops waiting for the function (epoch seconds), or None: no deadline.
    deadline: float | None = None
    #: When this worker received the attempt's run command (epoch seconds).
    received: float | None = None
    #: Set once the attempt is cancelled (the function is also interrupted with ``Cancelled``).
    cancelled: bool = False

    def log(self, text: str) -> None:
        out = sys.stdout
        out.write(text if text.endswith("\n") else text + "\n")
        out.flush()

    def remaining(self) -> float | None:
        """Seconds left before the deadline, or None."""
        return None if self.deadline is None else max(0.0, self.deadline - time.time())
