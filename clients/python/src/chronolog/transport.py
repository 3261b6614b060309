"""One HTTP exchange with the API over ``http.client``: the request, the answer, the errors."""

from __future__ import annotations

import http.client
import json
import ssl
from dataclasses import dataclass
from typing import Any, Mapping
from urllib.parse import SplitResult, quote, urlencode, urlsplit

from .errors import ChronologError, TransportError, error_for

API = "/api/v1"
USER_AGENT = "chronolog-python"


@dataclass(frozen=True)
class Answer:
    status: int
    headers: Mapping[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body.decode("utf-8")) if self.body else None


class Transport:
    """Where the API is and how to reach it: its origin, the token, TLS and the timeout."""

    def __init__(self, url: str, token: str | None, ca_file: str | None, timeout: float) -> None:
        parts = urlsplit(url.rstrip("/"))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"the API's URL is http://HOST:PORT or https://HOST:PORT, not {url!r}")
        path = parts.path.rstrip("/")
        if path.endswith(API):
            path = path[: -len(API)]
        self.parts: SplitResult = parts
        self.prefix = path
        self.token = token
        self.timeout = timeout
        self.context: ssl.SSLContext | None = None
        if parts.scheme == "https":
            self.context = ssl.create_default_context(cafile=ca_file)
        elif ca_file is not None:
            raise ValueError("ca_file is for an https:// URL")

    @property
    def origin(self) -> str:
        return f"{self.parts.scheme}://{self.parts.netloc}{self.prefix}"

    def connect(self, timeout: float | None = None) -> http.client.HTTPConnection:
        host = self.parts.hostname or ""
        port = self.parts.port
        t = self.timeout if timeout is None else timeout
        if self.context is not None:
            return http.client.HTTPSConnection(host, port, timeout=t, context=self.context)
        return http.client.HTTPConnection(host, port, timeout=t)

    def path(self, route: str, query: Mapping[str, Any] | None = None) -> str:
        q = {k: _query_value(v) for k, v in (query or {}).items() if v is not None}
        return f"{self.prefix}{API}{route}" + (f"?{urlencode(q)}" if q else "")

    def headers(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        h = {"accept": "application/json", "user-agent": USER_AGENT}
        if self.token:
            h["authorization"] = f"Bearer {self.token}"
        h.update(extra or {})
        return h

    def request(
        self,
        method: str,
        route: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float | None = None,
    ) -> Answer:
        """Sends one request; a 2xx answer is returned, anything else raised as its typed error."""
        data: bytes | None = None
        extra: dict[str, str] = {}
        if body is not None:
            data = body.encode("utf-8") if isinstance(body, str) else json.dumps(body).encode("utf-8")
            extra["content-type"] = content_type
        conn = self.connect(timeout)
        try:
            conn.request(method, self.path(route, query), body=data, headers=self.headers(extra))
            res = conn.getresponse()
            answer = Answer(res.status, {k.lower(): v for k, v in res.getheaders()}, res.read())
        except (OSError, http.client.HTTPException) as e:
            raise TransportError(f"{method} {self.origin}{API}{route}: {e or type(e).__name__}") from e
        finally:
            conn.close()
        if 200 <= answer.status < 300:
            return answer
        raise problem_of(answer)

    def json(self, method: str, route: str, **kw: Any) -> Any:
        answer = self.request(method, route, **kw)
        try:
            return answer.json()
        except ValueError as e:
            raise TransportError(f"{method} {route}: the answer is not JSON ({e})") from e


def problem_of(answer: Answer) -> ChronologError:
    """The typed error of a refusal: its problem document, or what stands in for one."""
    try:
        doc = answer.json()
    except ValueError:
        doc = None
    if not isinstance(doc, dict):
        text = answer.body.decode("utf-8", "replace").strip()
        doc = {"type": "about:blank", "title": f"HTTP {answer.status}", "detail": text or f"HTTP {answer.status}"}
    return error_for(answer.status, doc, answer.headers.get("retry-after"))


def segment(text: str) -> str:
    """A task key or run id as one path segment (slashes and colons encoded)."""
    return quote(text, safe="")


def _query_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)
