"""An attempt's output sent home by a remote worker: from the file the attempt keeps, in chunks
by offset (the scheduler answers with the size it holds, to go on from), or its small rest
inside the attempt's end. Shared by the worker's threads: the table is read under the worker's
lock; one thread sends an attempt's chunks at a time."""

from __future__ import annotations

import base64
import threading
from typing import Any, Callable

from .link import SESSION, Link, json_doc


class OutputUploads:
    def __init__(
        self,
        link: Link,
        path_of: Callable[[str], str],
        answer: Callable[[], dict[str, Any] | None],
        lock: threading.RLock,
    ) -> None:
        self.link = link
        #: The route of an attempt's output, by its token.
        self.path_of = path_of
        #: The latest registration's answer (its session and chunk size), None before one.
        self.answer = answer
        self.lock = lock
        #: token -> {"path", "offset" (what the scheduler holds), "stopped"}
        self.table: dict[str, dict[str, Any]] = {}

    def track(self, token: str, path: str) -> None:
        """The attempt keeps its output in ``path``: it is sent from now on (under the lock)."""
        self.table.setdefault(token, {"path": path, "offset": 0, "stopped": False})

    def forget(self, token: str) -> None:
        """Sends no more of it (under the lock): it is home, or no longer this worker's."""
        self.table.pop(token, None)

    def inline_rest(self, r: dict[str, Any], most: int) -> dict[str, Any]:
        """The end with what the scheduler lacks of its output inside it (``outputRest``), when
        that is at most ``most`` bytes; the end as it is otherwise (its output is uploaded)."""
        u = self.table.get(r["token"])
        size = int(r["outputFile"]["bytes"])
        if u is None or u["stopped"] or size - u["offset"] > most:
            return r
        try:
            with open(u["path"], "rb") as f:
                f.seek(u["offset"])
                data = f.read(size - u["offset"])
        except OSError:
            return r
        if len(data) != size - u["offset"]:
            return r  # (the file is not what the end says: uploaded as it is)
        self.table.pop(r["token"], None)
        return {**r, "outputRest": {"offset": u["offset"], "data": base64.b64encode(data).decode("ascii")}}

    def pump(self) -> None:
        """Sends what the running attempts have printed since (a failure is tried again later)."""
        with self.lock:
            tokens = list(self.table)
        for t in tokens:
            try:
                self.send(t, None)
            except Exception:
                pass

    def send(self, token: str, up_to: int | None) -> None:
        """Sends the attempt's output up to ``up_to`` bytes (its final size), or what there is.
        Raises when the link is down or the scheduler refuses it (the caller tries again)."""
        with self.lock:
            u = self.table.get(token)
            answer = self.answer()
        if u is None or answer is None:
            return
        most = int(answer.get("maxOutputChunk", 262_144))
        while not u["stopped"]:
            if up_to is not None and u["offset"] >= up_to:
                break
            try:
                with open(u["path"], "rb") as f:
                    f.seek(u["offset"])
                    chunk = f.read(most if up_to is None else min(most, up_to - u["offset"]))
            except OSError:
                chunk = b""
            if not chunk:
                break
            status, raw = self.link.request(
                "PUT",
                f"{self.path_of(token)}?offset={u['offset']}",
                body=chunk,
                headers={SESSION: answer["session"], "Content-Type": "application/octet-stream"},
            )
            doc = json_doc(raw)
            if status in (200, 409) and isinstance(doc.get("bytes"), int):
                u["offset"] = doc["bytes"]
            # Past the limit, or an attempt the scheduler no longer gives this worker: no more of it.
            elif status == 413 or (status == 409 and str(doc.get("type", "")).endswith(":not_dispatched")):
                u["stopped"] = True
            else:
                raise RuntimeError(f"output of {token}: HTTP {status}")
