"""Secrets by reference, on the worker, as the Node worker has them: resolved when an attempt
runs, on this host, never sent anywhere; and masked (``***``) in everything the attempt reports
or writes to its output file (as is, base64, URL-encoded)."""

from __future__ import annotations

import base64
import errno
import re
import signal
import subprocess
from typing import Any, Mapping
from urllib.parse import quote

#: Longest a ``command`` source may take (seconds).
COMMAND_TIMEOUT = 30.0
#: Most a source may yield.
MAX_SECRET_BYTES = 64 * 1024
#: Values shorter than this are not masked: masking ``a`` or ``42`` would mask everything.
MIN_MASKED_LENGTH = 4
MASK = b"***"


class SecretError(Exception):
    """A secret that could not be resolved: the message names the secret and its source, never a value."""


def _describe(name: str, source: Mapping[str, Any]) -> str:
    if source.get("env") is not None:
        return f"secret {name} (environment variable {source['env']})"
    if source.get("file") is not None:
        return f"secret {name} (file {source['file']})"
    return f"secret {name} (command)"


def _one_line(value: str) -> str:
    return value[:-2] if value.endswith("\r\n") else value[:-1] if value.endswith("\n") else value


def _code(error: OSError) -> str:
    return errno.errorcode.get(error.errno or 0, "unreadable")


def _run(what: str, command: str, env: Mapping[str, str]) -> str:
    """Runs a source's command; its stderr is dropped (it may hold the value)."""
    try:
        child = subprocess.Popen(
            ["/bin/sh", "-c", command],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=dict(env),
        )
    except OSError as error:
        raise SecretError(f"{what}: the command could not run ({_code(error)})") from None
    try:
        out, _ = child.communicate(timeout=COMMAND_TIMEOUT)
    except subprocess.TimeoutExpired:
        child.send_signal(signal.SIGTERM)
        out, _ = child.communicate()
    code = child.returncode
    if code < 0:
        raise SecretError(f"{what}: the command was killed by {signal.Signals(-code).name}")
    if code != 0:
        raise SecretError(f"{what}: the command exited with {code}")
    return out[: MAX_SECRET_BYTES + 2].decode("utf-8", "replace")


def _resolve_one(name: str, source: Mapping[str, Any], env: Mapping[str, str], command_env: Mapping[str, str]) -> str:
    what = _describe(name, source)
    if source.get("env") is not None:
        value = env.get(source["env"], "")
        if value == "":
            raise SecretError(f"{what}: the variable is not set on this worker")
    elif source.get("file") is not None:
        try:
            with open(source["file"], encoding="utf-8", errors="replace", newline="") as f:
                value = _one_line(f.read(MAX_SECRET_BYTES + 3))
        except OSError as error:
            raise SecretError(f"{what}: the file cannot be read ({_code(error)})") from None
    else:
        value = _one_line(_run(what, str(source.get("command") or ""), command_env))
    if value == "":
        raise SecretError(f"{what}: the value is empty")
    if len(value.encode("utf-8")) > MAX_SECRET_BYTES:
        raise SecretError(f"{what}: the value is longer than {MAX_SECRET_BYTES} bytes")
    if "\0" in value:
        raise SecretError(f"{what}: the value contains a NUL byte")
    return value


def resolve_secrets(
    secrets: Mapping[str, Mapping[str, Any]], env: Mapping[str, str], command_env: Mapping[str, str]
) -> dict[str, str]:
    """Every secret of an attempt (each source read once), by name. ``env`` is what ``{env}``
    sources read (the worker's), ``command_env`` what a ``{command}`` source runs with."""
    return {name: _resolve_one(name, source, env, command_env) for name, source in secrets.items()}


def masked_forms(value: str) -> list[str]:
    """The forms of a value that are masked: as is, base64 (standard, URL-safe, with and without
    padding), URL-encoded (as JavaScript's encodeURIComponent, with ``+`` for spaces, and encodeURI)."""
    if len(value) < MIN_MASKED_LENGTH:
        return []
    raw = value.encode("utf-8")
    b64 = base64.b64encode(raw).decode("ascii")
    b64url = base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")
    component = quote(value, safe="-_.!~*'()")
    forms = dict.fromkeys(
        [
            value,
            b64,
            b64.rstrip("="),
            b64url,
            b64url + "=" * ((4 - len(b64url) % 4) % 4),
            component,
            component.replace("%20", "+"),
            quote(value, safe=";,/?:@&=+$-_.!~*'()#"),
        ]
    )
    return [f for f in forms if len(f) >= MIN_MASKED_LENGTH]


class Masker:
    """Replaces every masked form of the given values with ``***``, on bytes (a value is found
    whatever encoding the task printed around it)."""

    def __init__(self, values: list[str]) -> None:
        forms = {f.encode("utf-8") for v in values for f in masked_forms(v)}
        ordered = sorted(forms, key=len, reverse=True)
        #: Longest form, in bytes: what a stream keeps back in case a value is cut between chunks.
        self.longest = len(ordered[0]) if ordered else 0
        self.pattern = re.compile(b"|".join(re.escape(f) for f in ordered)) if ordered else None

    @property
    def empty(self) -> bool:
        return self.pattern is None

    def mask_bytes(self, data: bytes) -> bytes:
        return data if self.pattern is None else self.pattern.sub(MASK, data)

    def mask(self, text: str) -> str:
        if self.pattern is None:
            return text
        return self.mask_bytes(text.encode("utf-8", "surrogateescape")).decode("utf-8", "replace")

    def mask_tail(self, tail: bytes, cut: bool) -> bytes:
        """A tail of a longer output: when it may have been cut (``cut``), its first ``longest - 1``
        bytes, which may be the end of a value cut off at the front, are dropped first."""
        if self.pattern is None or not tail:
            return tail
        if cut:
            start = min(len(tail), self.longest - 1)
            while start < len(tail) and tail[start] & 0xC0 == 0x80:
                start += 1
            tail = tail[start:]
        return self.mask_bytes(tail)


class MaskingStream:
    """Masks a stream of chunks: keeps back the last ``longest - 1`` bytes (the start of a value
    that may go on in the next chunk) until more comes or the stream ends."""

    def __init__(self, masker: Masker, write: Any) -> None:
        self.masker = masker
        self.sink = write
        self.held = b""

    def write(self, data: bytes) -> None:
        if self.masker.empty:
            self.sink(data)
            return
        masked = self.masker.mask_bytes(self.held + data)
        keep = min(len(masked), self.masker.longest - 1)
        out, self.held = masked[: len(masked) - keep], masked[len(masked) - keep :]
        if out:
            self.sink(out)

    def end(self) -> None:
        """Writes what is held back (masked: a value cannot go on any more)."""
        if self.held:
            self.sink(self.masker.mask_bytes(self.held))
        self.held = b""
