"""Following the log's live events (``GET /events``, Server-Sent Events) across disconnects."""

from __future__ import annotations

import http.client
import json
import socket
import time
from dataclasses import dataclass, field
from typing import Any, Generator, Iterator

from .errors import ChronologError, TooManyRequestsError, TransportError
from .transport import Answer, Transport, problem_of


@dataclass(frozen=True)
class Event:
    """One event of the log: its ``position`` (its SSE id), ``type``, ``stream_id``, ``data``
    and ``metadata`` (actor, recordedAt, hash...), and the whole record as sent (``record``)."""

    position: int
    type: str
    stream_id: str
    data: dict[str, Any]
    metadata: dict[str, Any]
    record: dict[str, Any] = field(repr=False)


class Follower:
    """An iterator of live events that reconnects after a disconnect, with ``Last-Event-ID`` set
    to the last position it gave, so the stream resumes exactly after it.

    ``position`` is the last event's position given (``None`` before the first), ``reconnects``
    how many times it connected again, ``connected`` whether a stream is open now. ``close()``
    ends the iteration (from any thread)."""

    def __init__(
        self,
        transport: Transport,
        last: int | None,
        *,
        reconnect: bool,
        idle_timeout: float,
        max_backoff: float,
    ) -> None:
        self._t = transport
        self.position: int | None = last
        self.reconnects = 0
        self.connected = False
        self._reconnect = reconnect
        self._idle = idle_timeout
        self._max_backoff = max_backoff
        self._closed = False
        self._conn: http.client.HTTPConnection | None = None
        self._iterator: Generator[Event, None, None] | None = None

    def __iter__(self) -> Iterator[Event]:
        if self._iterator is None:
            self._iterator = self._events()
        return self._iterator

    def __enter__(self) -> Follower:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Ends the iteration: the connection is shut, and an iteration under way in another
        thread sees its end and stops."""
        self._closed = True
        conn = self._conn
        sock = conn.sock if conn is not None else None
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._iterator is not None:
            try:
                self._iterator.close()
            except ValueError:
                pass  # iterated by another thread right now: it stops on the shut connection

    def _events(self) -> Iterator[Event]:
        backoff = 0.1
        first = True
        while not self._closed:
            if not first:
                self.reconnects += 1
            first = False
            try:
                for event in self._stream():
                    backoff = 0.1
                    yield event
                # The server ended the stream (a restart, a `dropped` for lagging): resume.
            except (TooManyRequestsError, TransportError) as e:
                if self._closed:
                    return
                if not self._reconnect:
                    raise
                # Over the server's stream caps: as long as it says; otherwise a growing pause.
                limited = isinstance(e, TooManyRequestsError) and e.retry_after is not None
                time.sleep(e.retry_after if limited else backoff)  # type: ignore[union-attr,arg-type]
                backoff = min(backoff * 2, self._max_backoff)
                continue
            if not self._reconnect or self._closed:
                return
            time.sleep(backoff)
            backoff = min(backoff * 2, self._max_backoff)

    def _stream(self) -> Iterator[Event]:
        extra = {"accept": "text/event-stream", "cache-control": "no-cache"}
        if self.position is not None:
            extra["last-event-id"] = str(self.position)
        conn = self._t.connect(self._idle)
        self._conn = conn
        try:
            try:
                conn.request("GET", self._t.path("/events"), headers=self._t.headers(extra))
                res = conn.getresponse()
            except (OSError, http.client.HTTPException) as e:
                raise TransportError(f"GET /events: {e or type(e).__name__}") from e
            if res.status != 200:
                raise problem_of(Answer(res.status, {k.lower(): v for k, v in res.getheaders()}, res.read()))
            self.connected = True
            yield from self._read(res)
        finally:
            self.connected = False
            self._conn = None
            conn.close()

    def _read(self, res: http.client.HTTPResponse) -> Iterator[Event]:
        kind = ""
        data: list[str] = []
        ident: str | None = None
        while not self._closed:
            try:
                raw = res.readline()
            except (OSError, http.client.HTTPException, ValueError, AttributeError) as e:
                if self._closed:
                    return
                raise TransportError(f"GET /events: the stream broke ({e or type(e).__name__})") from e
            if not raw:
                if self._closed:
                    return
                raise TransportError("GET /events: the server closed the stream")
            line = raw.decode("utf-8").rstrip("\r\n")
            if line == "":
                if data or kind:
                    event = self._event(kind, "\n".join(data), ident)
                    if event is not None:
                        yield event
                kind, data, ident = "", [], None
                continue
            if line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "event":
                kind = value
            elif name == "data":
                data.append(value)
            elif name == "id":
                ident = value

    def _event(self, kind: str, text: str, ident: str | None) -> Event | None:
        if kind == "dropped":
            # Fell too far behind: the server says where to resume, the next connection does.
            raise TransportError(f"GET /events: dropped by the server ({text})")
        try:
            record = json.loads(text)
        except ValueError as e:
            raise ChronologError({"type": "urn:chronolog:problem:stream", "detail": f"an event that is not JSON: {e}"}) from e
        position = int(ident if ident is not None else record.get("position"))
        if self.position is not None and position <= self.position:
            return None
        self.position = position
        return Event(
            position=position,
            type=str(record.get("type", kind)),
            stream_id=str(record.get("streamId", "")),
            data=dict(record.get("data") or {}),
            metadata=dict(record.get("metadata") or {}),
            record=record,
        )
