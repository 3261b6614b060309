"""Chronolog from Python: a client of its HTTP API and declarations as code.

- ``chronolog.Client``: declare, tasks, why, history, trigger, wait, backfill, rerun, follow.
- ``chronolog.Workflow``, ``Task``, ``Connection`` and the operators ``shell``, ``http``,
  ``node``, ``python``, ``noop``: declarations built in Python (``to_document()``).
- ``chronolog.errors``: every refusal as a typed exception carrying its problem document.
- ``python -m chronolog declare MODULE``: publishes the workflows a module declares.

The Python worker that runs ``python`` tasks belongs in ``chronolog.worker``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .client import Client, run_status
    from .declarations import (
        Connection,
        Retry,
        Task,
        Workflow,
        function_ref,
        http,
        node,
        noop,
        python,
        shell,
        to_document,
    )
    from .errors import (
        AuthenticationError,
        ChronologError,
        ConflictError,
        NotFoundError,
        PayloadTooLargeError,
        PermissionDeniedError,
        RunFailedError,
        ServerError,
        StateError,
        TooManyRequestsError,
        TransportError,
        UnavailableError,
        UnsupportedMediaTypeError,
        ValidationError,
        WaitTimeoutError,
    )
    from .events import Event, Follower

#: Where each name is defined, loaded on first use: a process that needs none of them (the Python
#: worker's warm interpreter, which every attempt's process is forked from) does not carry the
#: HTTP client, TLS and the rest in memory it copies at each fork.
_WHERE = {
    **dict.fromkeys(("Client", "run_status"), "client"),
    **dict.fromkeys(
        (
            "Connection",
            "Retry",
            "Task",
            "Workflow",
            "function_ref",
            "http",
            "node",
            "noop",
            "python",
            "shell",
            "to_document",
        ),
        "declarations",
    ),
    **dict.fromkeys(
        (
            "AuthenticationError",
            "ChronologError",
            "ConflictError",
            "NotFoundError",
            "PayloadTooLargeError",
            "PermissionDeniedError",
            "RunFailedError",
            "ServerError",
            "StateError",
            "TooManyRequestsError",
            "TransportError",
            "UnavailableError",
            "UnsupportedMediaTypeError",
            "ValidationError",
            "WaitTimeoutError",
        ),
        "errors",
    ),
    **dict.fromkeys(("Event", "Follower"), "events"),
}


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{where}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__version__ = "0.1.0"

__all__ = [
    "AuthenticationError",
    "ChronologError",
    "Client",
    "ConflictError",
    "Connection",
    "Event",
    "Follower",
    "NotFoundError",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "Retry",
    "RunFailedError",
    "ServerError",
    "StateError",
    "Task",
    "TooManyRequestsError",
    "TransportError",
    "UnavailableError",
    "UnsupportedMediaTypeError",
    "ValidationError",
    "WaitTimeoutError",
    "Workflow",
    "function_ref",
    "http",
    "node",
    "noop",
    "python",
    "run_status",
    "shell",
    "to_document",
]
