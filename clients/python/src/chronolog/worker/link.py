"""HTTP/1.1 to the scheduler's API for a worker: requests over a keep-alive connection per
thread, and the long-lived Server-Sent Events stream of its commands."""

from __future__ import annotations

import http.client
import json
import re
import socket
import ssl
import threading
from typing import Any, Callable
from urllib.parse import urlsplit

#: The header that carries a worker's session (its registration's) on each request after it.
SESSION = "Chronolog-Session"


class LinkDown(Exception):
    """No answer at all: the link could not be made, or broke."""


def is_loopback(host: str) -> bool:
    h = host.strip("[]")
    return h in ("localhost", "::1") or re.fullmatch(r"127\.\d+\.\d+\.\d+", h) is not None


class Link:
    def __init__(self, url: str, token: str, ca_file: str | None = None, insecure: bool = False) -> None:
        parts = urlsplit(url.rstrip("/"))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"--connect takes the scheduler's URL (https://HOST:PORT), not {url!r}")
        if parts.scheme == "http" and not is_loopback(parts.hostname) and not insecure:
            raise ValueError(
                f"--connect {url} is plain http to a host that is not loopback: the token would travel "
                "in the clear; use https (with --ca FILE for a private CA), or --insecure on a network you trust"
            )
        self.origin = f"{parts.scheme}://{parts.netloc}"
        self.host = parts.hostname
        self.port = parts.port
        self.token = token
        self.context: ssl.SSLContext | None = None
        if parts.scheme == "https":
            self.context = ssl.create_default_context(cafile=ca_file)
        self._local = threading.local()
        self._stream: http.client.HTTPConnection | None = None
        self._stream_lock = threading.Lock()

    def _connect(self, timeout: float) -> http.client.HTTPConnection:
        if self.context is not None:
            return http.client.HTTPSConnection(self.host, self.port, timeout=timeout, context=self.context)
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def request(
        self,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
        timeout: float = 15.0,
    ) -> tuple[int, bytes]:
        """One exchange on this thread's connection: (status, body). Raises LinkDown."""
        h = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        if json_body is not None:
            body = json.dumps(json_body, separators=(",", ":")).encode("utf-8")
            h["Content-Type"] = "application/json"
        h.update(headers or {})
        for fresh in (False, True):
            conn: http.client.HTTPConnection | None = getattr(self._local, "conn", None)
            reused = conn is not None and not fresh
            if conn is None or fresh:
                if conn is not None:
                    conn.close()
                conn = self._connect(timeout)
                self._local.conn = conn
            try:
                conn.timeout = timeout
                if conn.sock is not None:
                    conn.sock.settimeout(timeout)
                conn.request(method, path, body=body, headers=h)
                res = conn.getresponse()
                data = res.read()
                if res.will_close:
                    conn.close()
                    self._local.conn = None
                return res.status, data
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as error:
                conn.close()
                self._local.conn = None
                # A kept-alive connection the server had closed meanwhile: once more on a new one.
                if reused:
                    continue
                raise LinkDown(str(error) or type(error).__name__) from error
            except (OSError, http.client.HTTPException) as error:
                conn.close()
                self._local.conn = None
                raise LinkDown(str(error) or type(error).__name__) from error
        raise LinkDown("no answer")

    def stream(
        self,
        path: str,
        headers: dict[str, str],
        on_event: Callable[[str, str], None],
        silence: float,
    ) -> None:
        """Reads a Server-Sent Events stream, handing each event to ``on_event``, until it ends,
        breaks, stays silent ``silence`` seconds (socket.timeout), or ``abort_stream`` is called.
        Raises RuntimeError with the status and body when the server refuses it."""
        conn = self._connect(silence)
        with self._stream_lock:
            self._stream = conn
        try:
            h = {"Authorization": f"Bearer {self.token}", "Accept": "text/event-stream"}
            h.update(headers)
            try:
                conn.request("GET", path, headers=h)
                res = conn.getresponse()
            except (OSError, http.client.HTTPException) as error:
                raise LinkDown(str(error) or type(error).__name__) from error
            if res.status != 200:
                raise RuntimeError(f"HTTP {res.status}: {res.read()[:2000].decode('utf-8', 'replace')}")
            event, data = "message", []
            while True:
                try:
                    raw = res.readline()
                except socket.timeout as error:
                    raise TimeoutError(f"nothing heard for {int(silence * 1000)} ms") from error
                except (OSError, http.client.HTTPException, ValueError):
                    return
                if not raw:
                    return
                line = raw.decode("utf-8").rstrip("\r\n")
                if line == "":
                    if data:
                        on_event(event, "\n".join(data))
                    event, data = "message", []
                    continue
                if line.startswith(":"):
                    continue
                field, _, value = line.partition(":")
                if value.startswith(" "):
                    value = value[1:]
                if field == "event":
                    event = value
                elif field == "data":
                    data.append(value)
        finally:
            with self._stream_lock:
                self._stream = None
            conn.close()

    def abort_stream(self) -> None:
        """Ends the stream being read (from another thread)."""
        with self._stream_lock:
            conn = self._stream
        if conn is not None and conn.sock is not None:
            try:
                conn.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def json_doc(raw: bytes) -> Any:
    """An answer's JSON object; {} for an empty body, one not JSON, or JSON not an object."""
    try:
        doc = json.loads(raw.decode("utf-8")) if raw else {}
    except ValueError:
        return {}
    return doc if isinstance(doc, dict) else {}
