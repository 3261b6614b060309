"""Typed errors: every refusal of the API is raised as one, carrying its problem document.

The API answers an error with an RFC 9457 problem document (``application/problem+json``):
``type`` (``urn:chronolog:problem:KIND``), ``title``, ``status``, ``detail`` and the typed
error's own fields (each declaration issue with its file, path and message; the stream and both
revisions of a conflict; the scope a token lacks). The class raised is chosen by status, and
every field stays reachable: as a property where it has a name here, and in ``problem``.
"""

from __future__ import annotations

from typing import Any, Mapping

PROBLEM_PREFIX = "urn:chronolog:problem:"


class ChronologError(Exception):
    """An error of the Chronolog API (or of reaching it), with its problem document."""

    def __init__(self, problem: Mapping[str, Any], status: int | None = None) -> None:
        self.problem: dict[str, Any] = dict(problem)
        self.status: int | None = status if status is not None else _int(problem.get("status"))
        super().__init__(self.detail)

    @property
    def type(self) -> str:
        """The problem's type, ``urn:chronolog:problem:validation`` and the like."""
        return str(self.problem.get("type", ""))

    @property
    def kind(self) -> str:
        """The type's last part: ``validation``, ``forbidden``, ``wrong_expected_revision``..."""
        t = self.type
        return t[len(PROBLEM_PREFIX) :] if t.startswith(PROBLEM_PREFIX) else t

    @property
    def title(self) -> str:
        return str(self.problem.get("title", ""))

    @property
    def detail(self) -> str:
        return str(self.problem.get("detail", self.problem.get("title", "")))

    @property
    def fields(self) -> dict[str, Any]:
        """The typed error's own fields: everything but type, title, status and detail."""
        return {k: v for k, v in self.problem.items() if k not in ("type", "title", "status", "detail")}

    def __str__(self) -> str:
        where = f"{self.status} " if self.status is not None else ""
        return f"{where}{self.kind or 'error'}: {self.detail}"


class TransportError(ChronologError):
    """The server could not be reached, or answered with something that is not HTTP/JSON."""

    def __init__(self, detail: str) -> None:
        super().__init__({"type": f"{PROBLEM_PREFIX}transport", "title": "Unreachable", "detail": detail})


class ValidationError(ChronologError):
    """400: input that does not fit (a declaration's issues, a bad date, malformed JSON)."""

    @property
    def issues(self) -> list[dict[str, Any]]:
        """Each issue as the server sent it, ``path`` and ``message``, plus ``file`` and
        ``field`` where the path names both (a declaration's: ``<request>:
        workflows[0].tasks[1].operator.function``); ``field`` is the path alone otherwise."""
        raw = self.problem.get("issues")
        out: list[dict[str, Any]] = []
        for i in raw if isinstance(raw, list) else []:
            if not isinstance(i, Mapping):
                continue
            issue = dict(i)
            path = str(issue.get("path", ""))
            file, sep, field = path.partition(": ")
            if sep and "file" not in issue:
                issue["file"], issue["field"] = file, field
            else:
                issue.setdefault("field", path)
            out.append(issue)
        return out

    @property
    def paths(self) -> list[str]:
        """The field path of each issue (without its file)."""
        return [str(i["field"]) for i in self.issues]


class AuthenticationError(ChronologError):
    """401: no token, an unknown one or a revoked one."""


class PermissionDeniedError(ChronologError):
    """403: the token's scope or projects do not allow it (``scope``, ``needs``, ``outside``)."""

    @property
    def scope(self) -> str | None:
        return _str(self.problem.get("scope"))

    @property
    def needs(self) -> str | None:
        return _str(self.problem.get("needs"))

    @property
    def outside(self) -> list[str]:
        raw = self.problem.get("outside")
        return [str(p) for p in raw] if isinstance(raw, list) else []


class NotFoundError(ChronologError):
    """404: no such task, run, workflow or backfill."""


class ConflictError(ChronologError):
    """409: a compare-and-set lost to another writer; nothing was written.

    ``stream_id`` names the stream, ``expected`` the revision this write was decided on and
    ``actual`` the one another writer left it at (a revision, or ``no_stream``), as the server
    says them; for a command that kept losing, those of its last conflict (``last``)."""

    def _field(self, name: str) -> str | None:
        if name in self.problem:
            return _str(self.problem[name])
        last = self.problem.get("last")
        return _str(last.get(name)) if isinstance(last, Mapping) else None

    @property
    def stream_id(self) -> str | None:
        return self._field("streamId")

    @property
    def expected(self) -> str | None:
        return self._field("expected")

    @property
    def actual(self) -> str | None:
        return self._field("actual")


class PayloadTooLargeError(ChronologError):
    """413: a body over the server's ``--body-limit`` (``limitBytes``)."""


class UnsupportedMediaTypeError(ChronologError):
    """415: a body of a media type the route does not take."""


class StateError(ChronologError):
    """422: refused for where its subject stands (pausing a paused task, rerunning a running run)."""


class TooManyRequestsError(ChronologError):
    """429: a stream over its caps; ``retry_after`` seconds."""

    @property
    def retry_after(self) -> float | None:
        return _float(self.problem.get("retryAfter"))


class UnavailableError(ChronologError):
    """503: the log unavailable or too many views as of a position under way."""

    @property
    def retry_after(self) -> float | None:
        return _float(self.problem.get("retryAfter"))


class ServerError(ChronologError):
    """500 and any other status: an internal error of the server."""


class RunFailedError(ChronologError):
    """A run waited for finished in a state other than succeeded (``run`` holds it)."""

    def __init__(self, run: Mapping[str, Any]) -> None:
        self.run: dict[str, Any] = dict(run)
        inner = run.get("run") if isinstance(run.get("run"), Mapping) else run
        status = str(inner.get("status", "?")) if isinstance(inner, Mapping) else "?"
        run_id = str(inner.get("id", inner.get("runId", "?"))) if isinstance(inner, Mapping) else "?"
        super().__init__(
            {"type": f"{PROBLEM_PREFIX}run_{status}", "title": "Run did not succeed", "detail": f"run {run_id} {status}"}
        )


class WaitTimeoutError(ChronologError):
    """A wait for a run ran out of time before the run finished (``run`` holds it as last seen)."""

    def __init__(self, run_id: str, seconds: float, run: Mapping[str, Any] | None) -> None:
        self.run: dict[str, Any] | None = dict(run) if run is not None else None
        super().__init__(
            {
                "type": f"{PROBLEM_PREFIX}wait_timeout",
                "title": "Wait timed out",
                "detail": f"run {run_id} had not finished after {seconds:g} s",
            }
        )


_BY_STATUS: dict[int, type[ChronologError]] = {
    400: ValidationError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    413: PayloadTooLargeError,
    415: UnsupportedMediaTypeError,
    422: StateError,
    429: TooManyRequestsError,
    503: UnavailableError,
}


def error_for(status: int, problem: Mapping[str, Any], retry_after: str | None = None) -> ChronologError:
    """The typed error for an answer's status and problem document."""
    doc = dict(problem)
    doc.setdefault("status", status)
    doc.setdefault("title", f"HTTP {status}")
    doc.setdefault("detail", doc["title"])
    if retry_after is not None and "retryAfter" not in doc:
        doc["retryAfter"] = retry_after
    cls = _BY_STATUS.get(status, ServerError)
    return cls(doc, status)


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _str(v: Any) -> str | None:
    return None if v is None else str(v)


def _float(v: Any) -> float | None:
    try:
        return None if v is None else float(v)
    except (TypeError, ValueError):
        return None
