"""A pipeline the server refuses: a python function that is not module.path:qualname."""

from __future__ import annotations

from chronolog import Task, Workflow, python

broken = Workflow("py_broken", project="pysales", account="acme", cron="0 2 * * *", start_date="2030-01-01T00:00:00Z")
broken.add(Task("broken", python("not a function reference")))
