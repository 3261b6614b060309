"""Chronolog from Python: a client of its HTTP API and declarations as code.

- ``chronolog.Client``: declare, tasks, why, history, trigger, wait, backfill, rerun, follow.
- ``chronolog.Workflow``, ``Task``, ``Connection`` and the operators ``shell``, ``http``,
  ``node``, ``python``, ``noop``: declarations built in Python (``to_document()``).
- ``chronolog.errors``: every refusal as a typed exception carrying its problem document.
- ``python -m chronolog declare MODULE``: publishes the workflows a module declares.

The Python worker that runs ``python`` tasks belongs in ``chronolog.worker``.
"""

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
