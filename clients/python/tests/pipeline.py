"""A pipeline declared in Python, the twin of pipeline.yaml beside it."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from chronolog import Connection, Retry, Task, Workflow, noop

warehouse = Connection("pyt_warehouse", operators=["shell", "python", "noop"], max_parallelism=4)

orders_raw = Task(
    "orders_raw",
    noop(),
    project="pyingest",
    account="acme",
    cron="0 * * * *",
    start_date=datetime(2026, 11, 1, tzinfo=timezone.utc),
)

orders = Workflow(
    "py_orders_daily",
    project="pysales",
    account="acme",
    cron="0 2 * * *",
    timezone="Europe/Berlin",
    start_date="2026-11-01T00:00:00Z",
    catchup=False,
    connection="pyt_warehouse",
    config={"region": "eu"},
    params={"mode": "full"},
)


@orders.task(
    parents=["pyingest/acme/orders_raw"],
    queue="py",
    args={"region": "{{ config.region }}", "day": "{{ ds }}"},
    retry=Retry(3, initial_delay_ms=1000),
    idempotent=True,
)
def load(ctx: Any, region: str, day: str) -> None:
    """Loads a day of orders (run by a Python worker serving the queue py)."""


orders.shell("report", "echo report {{ ds }} {{ params.mode }}", parents=["load"])
