"""The launcher's output side: one writer to stdout and bounded line splitting of the ranks' pipes."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, BinaryIO

from .protocol import PREFIX_BYTES, encode

LINE_CAP = 8 * 1024
# Telemetry lines may be longer than program lines (a step with many metrics) but are still bounded so
# a program that prints "@@fl " followed by an endless stream cannot make the launcher buffer it all.
TELEMETRY_CAP = 64 * 1024
TRUNCATED_SUFFIX = "…[line truncated]"


class Emitter:
    """The launcher's only writer to stdout; one lock keeps every line whole."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._lock = threading.Lock()
        self._broken = False
        self._closed = False
        self.t0 = time.monotonic()

    def now(self) -> float:
        return round(time.monotonic() - self.t0, 3)

    def write_line(self, text: str) -> None:
        data = (text + "\n").encode("utf-8", errors="replace")
        with self._lock:
            if self._broken or self._closed:
                return
            try:
                self._stream.write(data)
                self._stream.flush()
            except (OSError, ValueError):
                # Nobody is listening any more; keep supervising the ranks so they still get cleaned up.
                self._broken = True

    def event(self, kind: str, **fields: Any) -> dict[str, Any]:
        payload: dict[str, Any] = {"kind": kind, "t": self.now()}
        payload.update(fields)
        self.write_line(encode(payload))
        return payload

    def close(self) -> None:
        # After "end" nothing else may appear: consumers treat it as the last line of a run.
        with self._lock:
            self._closed = True


def split_utf8(data: bytes, limit: int) -> bytes:
    """At most ``limit`` bytes of ``data`` without cutting a UTF-8 sequence in half."""
    if len(data) <= limit:
        return data
    cut = limit
    # Step back over continuation bytes (10xxxxxx) so the kept prefix ends on a character boundary.
    while cut > limit - 4 and cut > 0 and (data[cut] & 0xC0) == 0x80:
        cut -= 1
    return data[:cut]


class LineSplitter:
    """Turns a byte stream into bounded lines. A line longer than its cap is emitted once, cut, with a
    marker, and the rest of it is dropped up to the next newline."""

    def __init__(self, on_line: Callable[[bytes, bool], None], allow_telemetry: bool) -> None:
        self._on_line = on_line
        self._allow_telemetry = allow_telemetry
        self._buf = bytearray()
        self._discarding = False

    def _cap_for(self, head: bytes) -> int:
        if self._allow_telemetry and PREFIX_BYTES.startswith(head[: len(PREFIX_BYTES)]):
            return TELEMETRY_CAP
        return LINE_CAP

    def feed(self, chunk: bytes) -> None:
        buf = self._buf
        buf += chunk
        start = 0
        while True:
            newline = buf.find(b"\n", start)
            if newline < 0:
                break
            if self._discarding:
                self._discarding = False
            else:
                self._on_line(bytes(buf[start:newline]), False)
            start = newline + 1
        del buf[:start]
        if self._discarding:
            buf.clear()
        elif len(buf) > self._cap_for(bytes(buf[: len(PREFIX_BYTES)])):
            self._on_line(bytes(buf), True)
            buf.clear()
            self._discarding = True

    def close(self) -> None:
        if self._buf and not self._discarding:
            self._on_line(bytes(self._buf), False)
        self._buf.clear()
