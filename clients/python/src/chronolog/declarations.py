"""Declarations as code: workflows, tasks and connections built in Python.

A builder produces the same declaration document a YAML file holds (``to_document()``), and the
server stays the one validator: nothing here checks what ``declare`` checks, beyond what Python
itself needs (a function a worker can import). Fields are written in Python's snake case and
sent in the document's camel case (``start_date`` -> ``startDate``).

    wf = Workflow("orders_daily", project="sales", account="acme", cron="0 2 * * *")

    @wf.task(parents=["ingest/acme/orders_raw"], queue="py")
    def load(ctx, region: str = "eu") -> None: ...

    wf.shell("report", command="make-report --day {{ ds }}", parents=["load"])
"""

from __future__ import annotations

import sys
from datetime import date, datetime, timezone
from typing import Any, Callable, Mapping, Sequence, TypeVar, Union

F = TypeVar("F", bound=Callable[..., Any])

#: A parent: a full key ``project/account/name[/partition]``, a sibling's bare name, a Task.
Parent = Union[str, "Task", Mapping[str, str]]

_CAMEL = {
    "start_date": "startDate",
    "end_date": "endDate",
    "lease_seconds": "leaseSeconds",
    "cache_key": "cacheKey",
    "max_active_runs": "maxActiveRuns",
    "max_active_tasks": "maxActiveTasks",
    "failure_policy": "failurePolicy",
    "max_parallelism": "maxParallelism",
    "sort_order": "sortOrder",
    "timeout_ms": "timeoutMs",
    "publish_to": "publishTo",
    "expect_status": "expectStatus",
    "max_attempts": "maxAttempts",
    "initial_delay_ms": "initialDelayMs",
    "max_delay_ms": "maxDelayMs",
}


def _camel(name: str) -> str:
    return _CAMEL.get(name, name)


def _value(v: Any) -> Any:
    """A value as the document writes it: instants as ISO text, builders as their dicts."""
    if isinstance(v, datetime):
        if v.tzinfo is None:
            raise ValueError(f"{v.isoformat()} has no time zone: give a datetime with tzinfo (timezone.utc, say)")
        if v.utcoffset() == timezone.utc.utcoffset(None):
            return v.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")
        return v.isoformat()
    if isinstance(v, date):
        return f"{v.isoformat()}T00:00:00Z"
    if isinstance(v, Retry):
        return v.to_dict()
    if isinstance(v, Mapping):
        return {str(k): _value(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_value(x) for x in v]
    return v


def _fields(values: Mapping[str, Any]) -> dict[str, Any]:
    """The fields given (None left out), camel-cased, values made document values."""
    return {_camel(k): _value(v) for k, v in values.items() if v is not None}


class Retry:
    """A retry policy: ``Retry(max_attempts=3, initial_delay_ms=1000)``; fields left out are
    the workflow's or the default."""

    def __init__(
        self,
        max_attempts: int | None = None,
        *,
        initial_delay_ms: int | None = None,
        factor: float | None = None,
        max_delay_ms: int | None = None,
        jitter: float | None = None,
    ) -> None:
        self.values = _fields(
            {
                "max_attempts": max_attempts,
                "initial_delay_ms": initial_delay_ms,
                "factor": factor,
                "max_delay_ms": max_delay_ms,
                "jitter": jitter,
            }
        )

    def to_dict(self) -> dict[str, Any]:
        return dict(self.values)


# -- operators ------------------------------------------------------------------------------------


def shell(
    command: str,
    *,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    timeout_ms: int | None = None,
    publish_to: str | None = None,
    config: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A shell operator: ``command`` run by ``/bin/sh`` (templates: ``{{ ds }}``...)."""
    return {"type": "shell", **_fields(locals() | {"command": command})}


def http(
    url: str,
    *,
    method: str | None = None,
    headers: Mapping[str, str] | None = None,
    body: str | None = None,
    timeout_ms: int | None = None,
    expect_status: Sequence[int] | None = None,
    config: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """An http operator: one request; success is a 2xx or ``expect_status``."""
    return {"type": "http", **_fields(locals() | {"url": url})}


def node(
    module: str,
    *,
    export: str | None = None,
    args: Mapping[str, Any] | None = None,
    timeout_ms: int | None = None,
    publish_to: str | None = None,
    config: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A node operator: an exported function of a JavaScript module."""
    return {"type": "node", **_fields(locals() | {"module": module})}


def python(
    function: str | Callable[..., Any],
    *,
    args: Mapping[str, Any] | None = None,
    timeout_ms: int | None = None,
) -> dict[str, Any]:
    """A python operator: a function (or its reference ``module.path:qualname``) that a Python
    worker serving the task's queue imports and calls with ``args``; with ``timeout_ms``, the
    attempt's time (the function sees its end as ``ctx.deadline``)."""
    ref = function if isinstance(function, str) else function_ref(function)
    out: dict[str, Any] = {"type": "python", "function": ref}
    if args is not None:
        out["args"] = _value(args)
    if timeout_ms is not None:
        out["timeoutMs"] = timeout_ms
    return out


def noop() -> dict[str, Any]:
    """A noop operator: succeeds at once (a marker, a join)."""
    return {"type": "noop"}


def function_ref(fn: Callable[..., Any]) -> str:
    """``module.path:qualname`` of a function a worker can import: defined at the top level of
    a module (or in a class), not inside another function nor in a script run as ``__main__``."""
    module = getattr(fn, "__module__", None)
    qualname = getattr(fn, "__qualname__", None)
    if not module or not qualname:
        raise ValueError(f"{fn!r} has no module and name a worker could import it by")
    if "<locals>" in qualname or "<lambda>" in qualname:
        raise ValueError(
            f"{module}.{qualname} is defined inside a function (or is a lambda): a worker cannot "
            "import it; define it at the top level of a module"
        )
    if module == "__main__":
        spec = getattr(sys.modules.get("__main__"), "__spec__", None)
        if spec is None or not spec.name or spec.name == "__main__":
            raise ValueError(
                f"{qualname} is defined in a script run as __main__: a worker cannot import it by "
                "that name; put it in a module and import that (or run the script with python -m)"
            )
        module = spec.name
    return f"{module}:{qualname}"


# -- tasks, workflows, connections ----------------------------------------------------------------


class Task:
    """One task. In a workflow it takes the workflow's project, account and schedule unless it
    gives its own; outside one (standalone) it needs ``project``, ``account``, ``cron`` and
    ``start_date`` of its own. ``operator`` is a dict (``shell(...)``, ``python(...)``...).
    ``extra`` adds document fields this builder does not name, as they are written."""

    def __init__(
        self,
        name: str,
        operator: Mapping[str, Any],
        *,
        project: str | None = None,
        account: str | None = None,
        partition: str | None = None,
        parents: Sequence[Parent] | None = None,
        cron: str | None = None,
        timezone: str | None = None,
        start_date: str | datetime | date | None = None,
        end_date: str | datetime | date | None = None,
        catchup: bool | None = None,
        connection: str | None = None,
        queue: str | None = None,
        retry: Retry | Mapping[str, Any] | None = None,
        idempotent: bool | None = None,
        lease_seconds: int | None = None,
        config: Mapping[str, Any] | None = None,
        cache_key: str | None = None,
        alerts: Sequence[Mapping[str, Any]] | None = None,
        secrets: Mapping[str, Mapping[str, str]] | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        self.name = name
        self.operator = dict(operator)
        self.workflow: Workflow | None = None
        self.fields: dict[str, Any] = {
            "project": project,
            "account": account,
            "partition": partition,
            "cron": cron,
            "timezone": timezone,
            "start_date": start_date,
            "end_date": end_date,
            "catchup": catchup,
            "connection": connection,
            "queue": queue,
            "retry": retry,
            "idempotent": idempotent,
            "lease_seconds": lease_seconds,
            "config": config,
            "cache_key": cache_key,
            "alerts": alerts,
            "secrets": secrets,
        }
        self.parents: list[Parent] = list(parents or [])
        self.extra = dict(extra or {})

    @property
    def key(self) -> str:
        """The task's key, ``project/account/name/partition``."""
        wf = self.workflow
        project = self.fields["project"] or (wf.project if wf else None)
        account = self.fields["account"] or (wf.account if wf else None)
        return f"{project}/{account}/{self.name}/{self.fields['partition'] or 'ALL'}"

    def to_dict(self) -> dict[str, Any]:
        """The task as a document writes it (in a workflow's ``tasks`` or the top ``tasks``)."""
        f = _fields(self.fields)
        out: dict[str, Any] = {}
        for k in ("project", "account"):
            if k in f:
                out[k] = f.pop(k)
        out["name"] = self.name
        if "partition" in f:
            out["partition"] = f.pop("partition")
        out.update(f)
        if self.parents:
            out["parents"] = [self._parent(p) for p in self.parents]
        out["operator"] = _value(self.operator)
        out.update(_value(self.extra))
        return out

    def _parent(self, p: Parent) -> Any:
        if isinstance(p, Task):
            # A sibling by its bare name; a task elsewhere by its key.
            return p.name if p.workflow is not None and p.workflow is self.workflow else p.key
        return _value(p)

    def to_document(self) -> dict[str, Any]:
        """A document declaring this task (standalone)."""
        return to_document(self)


class Workflow:
    """A workflow: its tasks share its project, account, schedule and defaults, and run
    together as one run per interval (or per trigger). Add tasks with the ``task`` decorator
    (python functions), ``shell``, ``http``, ``noop``, ``node`` or ``add(Task(...))``."""

    def __init__(
        self,
        name: str,
        *,
        project: str,
        account: str,
        cron: str | None = None,
        timezone: str | None = None,
        start_date: str | datetime | date | None = None,
        end_date: str | datetime | date | None = None,
        catchup: bool | None = None,
        connection: str | None = None,
        queue: str | None = None,
        retry: Retry | Mapping[str, Any] | None = None,
        idempotent: bool | None = None,
        lease_seconds: int | None = None,
        secrets: Mapping[str, Mapping[str, str]] | None = None,
        max_active_runs: int | None = None,
        max_active_tasks: int | None = None,
        failure_policy: str | None = None,
        config: Mapping[str, Any] | None = None,
        params: Mapping[str, str] | None = None,
        alerts: Sequence[Mapping[str, Any]] | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        self.name = name
        self.project = project
        self.account = account
        self.fields: dict[str, Any] = {
            "cron": cron,
            "timezone": timezone,
            "start_date": start_date,
            "end_date": end_date,
            "catchup": catchup,
            "connection": connection,
            "queue": queue,
            "retry": retry,
            "idempotent": idempotent,
            "lease_seconds": lease_seconds,
            "secrets": secrets,
            "max_active_runs": max_active_runs,
            "max_active_tasks": max_active_tasks,
            "failure_policy": failure_policy,
            "config": config,
            "params": params,
            "alerts": alerts,
        }
        self.extra = dict(extra or {})
        self.tasks: list[Task] = []

    def add(self, task: Task) -> Task:
        """Adds a task (a name used twice is the server's to refuse, as in YAML)."""
        if task.workflow is not None and task.workflow is not self:
            raise ValueError(f"task {task.name} is already in workflow {task.workflow.name}")
        task.workflow = self
        self.tasks.append(task)
        return task

    def task(
        self,
        name: str | None = None,
        *,
        args: Mapping[str, Any] | None = None,
        timeout_ms: int | None = None,
        **fields: Any,
    ) -> Callable[[F], F]:
        """Decorates a function as a python task of this workflow: ``operator: {type: python,
        function: "module:qualname", args, timeoutMs}``, named after the function unless ``name`` says
        otherwise; ``fields`` are Task's (``parents``, ``queue``, ``retry``...). The function is
        returned as it is (a worker imports and calls it); its task is ``fn.chronolog_task``."""

        def decorate(fn: F) -> F:
            task = self.add(Task(name or fn.__name__, python(fn, args=args, timeout_ms=timeout_ms), **fields))
            try:
                fn.chronolog_task = task  # type: ignore[attr-defined]
            except (AttributeError, TypeError):
                pass
            return fn

        return decorate

    def shell(self, name: str, command: str, *, env: Mapping[str, str] | None = None, **fields: Any) -> Task:
        """A shell task of this workflow."""
        return self.add(Task(name, shell(command, env=env), **fields))

    def http(self, name: str, url: str, *, method: str | None = None, **fields: Any) -> Task:
        """An http task of this workflow."""
        return self.add(Task(name, http(url, method=method), **fields))

    def noop(self, name: str, **fields: Any) -> Task:
        """A noop task of this workflow."""
        return self.add(Task(name, noop(), **fields))

    def node(self, name: str, module: str, *, export: str | None = None, args: Mapping[str, Any] | None = None, **fields: Any) -> Task:
        """A node task of this workflow."""
        return self.add(Task(name, node(module, export=export, args=args), **fields))

    def to_dict(self) -> dict[str, Any]:
        """The workflow as a document's ``workflows`` writes it, its tasks included."""
        out: dict[str, Any] = {"name": self.name, "project": self.project, "account": self.account}
        out.update(_fields(self.fields))
        out.update(_value(self.extra))
        out["tasks"] = [t.to_dict() for t in self.tasks]
        return out

    def to_document(self) -> dict[str, Any]:
        """A document declaring this workflow."""
        return to_document(self)


class Connection:
    """A connection: a limit on how many attempts use it at once, shared config and secrets."""

    def __init__(
        self,
        name: str,
        *,
        operators: Sequence[str] | None = None,
        max_parallelism: int | None = None,
        sort_order: str | None = None,
        config: Mapping[str, Any] | None = None,
        secrets: Mapping[str, Mapping[str, str]] | None = None,
    ) -> None:
        self.name = name
        self.fields: dict[str, Any] = {
            "operators": list(operators) if operators is not None else None,
            "max_parallelism": max_parallelism,
            "sort_order": sort_order,
            "config": config,
            "secrets": secrets,
        }

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, **_fields(self.fields)}

    def to_document(self) -> dict[str, Any]:
        return to_document(self)


Declarable = Union[Workflow, Task, Connection]


def to_document(*items: Declarable | Mapping[str, Any]) -> dict[str, Any]:
    """One declaration document of builders and documents: their connections, workflows and
    (standalone) tasks, in the order given. Empty lists are left out."""
    doc: dict[str, list[Any]] = {"connections": [], "workflows": [], "tasks": []}
    for item in items:
        if isinstance(item, Workflow):
            doc["workflows"].append(item.to_dict())
        elif isinstance(item, Connection):
            doc["connections"].append(item.to_dict())
        elif isinstance(item, Task):
            if item.workflow is not None:
                raise ValueError(f"task {item.name} belongs to workflow {item.workflow.name}: declare the workflow")
            doc["tasks"].append(item.to_dict())
        elif isinstance(item, Mapping):
            for part in ("connections", "workflows", "tasks"):
                doc[part].extend(item.get(part) or [])
            unknown = set(item) - {"connections", "workflows", "tasks", "version"}
            if unknown:
                raise ValueError(f"a declaration document has connections, workflows and tasks, not {sorted(unknown)}")
        else:
            raise TypeError(f"cannot declare a {type(item).__name__}: give a Workflow, Task, Connection or dict")
    return {k: v for k, v in doc.items() if v}
