"""``Client``: the Chronolog HTTP API from Python, with the standard library only."""

from __future__ import annotations

import json
import time
from typing import Any, Iterable, Iterator, Mapping, Sequence, Union

from .declarations import Declarable, to_document
from .errors import RunFailedError, ValidationError, WaitTimeoutError
from .events import Follower
from .transport import Transport, segment

#: What ``declare`` takes: a document (a dict), JSON or YAML text, builders, or a list of them.
Source = Union[Mapping[str, Any], str, Declarable, Sequence[Union[Mapping[str, Any], Declarable]]]

#: The longest a single ``GET /runs/{id}?wait=`` holds the request (the server's own cap is 120 s).
WAIT_STEP_SECONDS = 30.0


class Client:
    """A client of one Chronolog API server.

    ``url`` is the server's origin (``http://127.0.0.1:8080``; a trailing ``/api/v1`` is allowed),
    ``token`` an access token (``chronolog token create``), ``ca_file`` the CA bundle an
    ``https://`` server's certificate is checked against (default: the system's), ``timeout`` the
    seconds one request may take. Every refusal is raised as a ``ChronologError`` subclass.
    """

    def __init__(
        self,
        url: str,
        token: str | None = None,
        *,
        ca_file: str | None = None,
        timeout: float = 60.0,
    ) -> None:
        self._t = Transport(url, token, ca_file, timeout)

    @property
    def url(self) -> str:
        return self._t.origin

    # -- declaring ------------------------------------------------------------------------------

    def declare(
        self,
        source: Source,
        *,
        dry_run: bool = False,
        revive: bool = False,
        format: str | None = None,
    ) -> dict[str, Any]:
        """Declares tasks, workflows and connections, whole or not at all.

        ``source`` is a declaration document (a dict), a list of them (merged into one), builders
        (``Workflow``, ``Task``, ``Connection``), or text: JSON, or YAML with ``format="yaml"``.
        ``dry_run=True`` checks it and answers what would change, writing nothing. Answers the
        server's outcome: ``tasks``, ``workflows`` and ``connections``, each with its ``outcome``
        (``declared``, ``changed``, ``unchanged``...) and ``changes``; and ``warnings``.
        """
        if isinstance(source, str):
            fmt = (format or "json").lower()
            if fmt not in ("json", "yaml"):
                raise ValueError(f'format is "json" or "yaml", not {format!r}')
            body: Any = source
            content_type = "application/yaml" if fmt == "yaml" else "application/json"
        else:
            if format not in (None, "json"):
                raise ValueError("format names the format of text; a document is sent as JSON")
            body = _json_body(_document(source))
            content_type = "application/json"
        query = {"dryRun": True if dry_run else None, "revive": True if revive else None}
        return self._t.json("POST", "/declarations", query=query, body=body, content_type=content_type)

    def workflows(self) -> list[dict[str, Any]]:
        """Every declared workflow (those the token may read)."""
        return self._t.json("GET", "/workflows")

    def connections(self) -> list[dict[str, Any]]:
        """Every declared connection."""
        return self._t.json("GET", "/connections")

    # -- tasks ----------------------------------------------------------------------------------

    def tasks_page(
        self,
        *,
        project: str | None = None,
        status: str | None = None,
        condition: str | None = None,
        limit: int = 100,
        cursor: str | None = None,
        at: int | str | None = None,
    ) -> dict[str, Any]:
        """One page of tasks in key order: ``{"items": [...], "next": cursor or None}``."""
        query = {
            "project": project,
            "status": status,
            "condition": condition,
            "limit": limit,
            "cursor": cursor,
            "at": at,
        }
        return self._t.json("GET", "/tasks", query=query)

    def tasks(
        self,
        *,
        project: str | None = None,
        status: str | None = None,
        condition: str | None = None,
        page_size: int = 100,
        at: int | str | None = None,
    ) -> Iterator[dict[str, Any]]:
        """Every task (filtered as asked), in key order, a page at a time as the API pages."""
        cursor: str | None = None
        while True:
            page = self.tasks_page(
                project=project, status=status, condition=condition, limit=page_size, cursor=cursor, at=at
            )
            yield from page.get("items", [])
            cursor = page.get("next")
            if not cursor:
                return

    def task(self, key: str, *, at: int | str | None = None) -> dict[str, Any]:
        """One task: ``task`` (its declaration and state), ``condition``, ``reasons``,
        ``decision``, ``nextSteps`` and ``instance``."""
        return self._t.json("GET", f"/tasks/{segment(key)}", query={"at": at})

    def why(self, key: str, *, at: int | str | None = None) -> dict[str, Any]:
        """Why a task stands where it does: its ``condition``, the ``reasons``, the scheduler's
        ``decision`` and the ``nextSteps`` an operator may take (as ``chronolog why``)."""
        t = self.task(key, at=at)
        return {k: t.get(k) for k in ("condition", "reasons", "decision", "nextSteps")} | {"task": key}

    def history(self, key: str, *, at: int | str | None = None) -> list[dict[str, Any]]:
        """The task's events and its attempts', in log order, each with its position and actor."""
        return self._t.json("GET", f"/tasks/{segment(key)}/history", query={"at": at})

    def attempts(self, key: str) -> list[dict[str, Any]]:
        """Every attempt of the task: token, worker, state, times, why it ended."""
        return self._t.json("GET", f"/tasks/{segment(key)}/attempts")

    def output(self, token: str) -> str:
        """An attempt's whole output."""
        return self._t.request("GET", f"/attempts/{segment(token)}/output").body.decode("utf-8", "replace")

    def pause(self, key: str, reason: str | None = None) -> dict[str, Any]:
        return self._write(f"/tasks/{segment(key)}/pause", {"reason": reason})

    def resume(self, key: str) -> dict[str, Any]:
        return self._write(f"/tasks/{segment(key)}/resume", {})

    # -- runs -----------------------------------------------------------------------------------

    def trigger(
        self,
        workflow: str,
        *,
        logical_date: str | None = None,
        params: Mapping[str, str] | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Starts exactly one run of a workflow outside its schedule, with ``params`` over its
        declared defaults. ``logical_date`` takes a day or an instant (default: now). Answers
        ``runId``, ``logicalDate``, ``try`` and ``tasks``; ``dry_run=True`` only plans it."""
        body: dict[str, Any] = {"logicalDate": logical_date, "params": dict(params) if params else None}
        if dry_run:
            body["dryRun"] = True
        return self._write(f"/workflows/{segment(workflow)}/runs", body)

    def runs(self, workflow: str | None = None) -> list[dict[str, Any]]:
        """Runs, newest logical date first, each with its summary and next steps."""
        return self._t.json("GET", "/runs", query={"workflow": workflow})

    def run(self, run_id: str, *, try_: int | None = None, wait: float | None = None) -> dict[str, Any]:
        """One run with its tries and instances; ``wait`` seconds holds the request (at most
        120) until it finishes."""
        query = {"try": try_, "wait": f"{wait:g}s" if wait else None}
        timeout = self._t.timeout + (wait or 0)
        return self._t.json("GET", f"/runs/{segment(run_id)}", query=query, timeout=timeout)

    def wait(self, run_id: str, *, timeout: float | None = None, check: bool = True) -> dict[str, Any]:
        """Waits until a run finishes and answers it (as ``run``), holding one request at a time
        open on the server (``?wait=``) rather than polling. Raises ``WaitTimeoutError`` past
        ``timeout`` seconds, and, with ``check``, ``RunFailedError`` when it ended in a state other
        than ``success`` (``failed``, ``partial``)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        view: dict[str, Any] | None = None
        while True:
            step = WAIT_STEP_SECONDS
            if deadline is not None:
                step = min(step, deadline - time.monotonic())
                if step <= 0:
                    raise WaitTimeoutError(run_id, timeout or 0, view)
            view = self.run(run_id, wait=max(step, 0.001))
            status = run_status(view)
            if status not in (None, "running"):
                if check and status != "success":
                    raise RunFailedError(view)
                return view

    def rerun(self, run_id: str, *, failed_only: bool = False, dry_run: bool = False) -> dict[str, Any]:
        """Runs a finished run again as a new try: all of it, or what did not succeed and below."""
        body: dict[str, Any] = {"failedOnly": True} if failed_only else {}
        if dry_run:
            body["dryRun"] = True
        return self._write(f"/runs/{segment(run_id)}/rerun", body)

    def backfill(
        self,
        task: str,
        start: str,
        end: str,
        *,
        downstream: bool = False,
        force: bool = False,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Runs a range of a task's intervals again (``downstream``: and its subtree), from
        ``start`` to ``end`` (each a day or an instant). Answers the plan: ``backfillId``
        (none in a dry run, which starts no backfill), every task reset (``targets``) or
        ``skipped``."""
        body: dict[str, Any] = {"task": task, "from": start, "to": end}
        for name, on in (("downstream", downstream), ("force", force), ("dryRun", dry_run)):
            if on:
                body[name] = True
        return self._write("/backfills", body)

    def backfill_status(self, backfill_id: str) -> dict[str, Any]:
        """A backfill's ranges and how far each has come (``progress``)."""
        return self._t.json("GET", f"/backfills/{segment(backfill_id)}")

    # -- the log --------------------------------------------------------------------------------

    def head(self) -> dict[str, Any]:
        """The log's head: its ``position`` and ``hash``."""
        return self._t.json("GET", "/log/head")

    def log(self, start: int = 1, limit: int = 1000) -> Iterator[dict[str, Any]]:
        """The log's events from position ``start`` on, in order, a page at a time."""
        nxt: Any = start
        while nxt is not None:
            page = self._t.json("GET", "/log", query={"from": nxt, "limit": limit})
            yield from page.get("events", [])
            nxt = page.get("next")

    def follow(
        self,
        *,
        after: int | None = None,
        start: int | None = None,
        reconnect: bool = True,
        idle_timeout: float = 60.0,
        max_backoff: float = 5.0,
    ) -> Follower:
        """Live events (Server-Sent Events), from the next event on, or those after position
        ``after``, or from position ``start``. A follower that loses its connection (or is
        dropped for falling behind) connects again and resumes exactly after the last event it
        gave: nothing lost, nothing twice. Iterate it; ``position`` is the last one given;
        ``close()`` ends it."""
        if after is not None and start is not None:
            raise ValueError("after or start, not both")
        last = after if after is not None else (start - 1 if start is not None else None)
        return Follower(self._t, last, reconnect=reconnect, idle_timeout=idle_timeout, max_backoff=max_backoff)

    def _write(self, route: str, body: Mapping[str, Any]) -> dict[str, Any]:
        clean = {k: v for k, v in body.items() if v is not None}
        return self._t.json("POST", route, body=clean)


def run_status(view: Mapping[str, Any]) -> str | None:
    """A run's status (``running``, ``success``, ``failed``, ``partial``) from ``GET /runs/{id}``."""
    run = view.get("run")
    if isinstance(run, Mapping) and isinstance(run.get("status"), str):
        return str(run["status"])
    return None


def _document(source: Any) -> dict[str, Any]:
    if isinstance(source, Mapping):
        return dict(source)
    if isinstance(source, Iterable) and not isinstance(source, (str, bytes)):
        return to_document(*source)
    return to_document(source)


def _json_body(document: Any) -> str:
    """The document as JSON, or a ValidationError naming what JSON cannot carry (a set, an
    object, a number that is not finite), before anything is sent."""
    try:
        return json.dumps(document, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise ValidationError(
            {
                "type": "urn:chronolog:problem:validation",
                "title": "invalid input",
                "status": 400,
                "detail": f"the declaration holds a value JSON cannot carry: {e}",
            }
        ) from None
