"""The Python worker: ``python -m chronolog.worker --connect URL --token T --queue py --import
mypipeline`` runs the ``python`` tasks of its queues, each attempt in a process of its own forked
from a warm interpreter, speaking the remote worker protocol (version 1) to the scheduler.

A task's function is called as ``fn(ctx, **args)`` with a ``Context``; its return means the
attempt succeeded, an exception that it failed (the traceback's last line is the error)."""

from .context import Cancelled, Context

__all__ = ["Cancelled", "Context"]
