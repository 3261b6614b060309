"""An attempt's output kept in a file, up to the scheduler's limit, as the Node worker keeps it."""

from __future__ import annotations

import hashlib
import os
from typing import Any

#: What an attempt may keep of its output when the scheduler does not say: 1 MiB.
DEFAULT_OUTPUT_MAX_BYTES = 1024 * 1024


def cut_marker(cut: int) -> bytes:
    """The line that stands where output was dropped."""
    return f"\n[... {cut} bytes cut ...]\n".encode()


class OutputFile:
    """One attempt's output (stdout and stderr interleaved, as they arrive) in a file, up to
    ``max_bytes``. The first half of the budget is written as it comes, so that it can be
    followed (and sent home) while the attempt runs; past it, only the last half is kept, in
    memory, and written after a ``[... N bytes cut ...]`` line when the attempt ends. Its
    SHA-256 is computed on the way in. A write that fails (a full disk) ends the file there and
    is said in ``error``; it never fails the attempt."""

    def __init__(self, path: str, max_bytes: int) -> None:
        self.path = path
        self.head_limit = max_bytes // 2
        self.tail_limit = max_bytes - self.head_limit
        self.tail = bytearray()
        self.written = 0
        self.seen = 0
        self.digest = hashlib.sha256()
        self.error: str | None = None
        self.fd: int | None = None
        try:
            self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        except OSError as error:
            self.error = str(error)

    def write(self, data: bytes) -> None:
        self.seen += len(data)
        room = self.head_limit - self.written
        if room > 0:
            head = data if len(data) <= room else data[:room]
            self._append(head)
            data = data[len(head) :]
        if data:
            self.tail += data
            if len(self.tail) > self.tail_limit:
                del self.tail[: len(self.tail) - self.tail_limit]

    def close(self) -> dict[str, Any]:
        """Writes what was kept of the end, closes the file and says what it holds."""
        tail = bytes(self.tail)
        self.tail = bytearray()
        cut = self.seen - self.written - len(tail)
        if cut > 0:
            self._append(cut_marker(cut))
        self._append(tail)
        if self.fd is not None:
            try:
                os.close(self.fd)
            except OSError:
                pass
            self.fd = None
        info: dict[str, Any] = {
            "path": self.path,
            "bytes": self.written,
            "sha256": self.digest.hexdigest(),
            "cutBytes": max(0, cut),
        }
        if self.error is not None:
            info["error"] = self.error
        return info

    def _append(self, data: bytes) -> None:
        if self.fd is None or not data:
            return
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self.fd, view) :]
            self.digest.update(data)
            self.written += len(data)
        except OSError as error:
            self.error = str(error)
            try:
                os.close(self.fd)
            except OSError:
                pass
            self.fd = None
