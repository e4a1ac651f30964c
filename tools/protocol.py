"""Frames between the controller and a worker: an 8-byte length, then JSON or raw bytes.

Nothing a worker sends is unpickled or evaluated: headers are JSON, arrays are raw bytes whose
dtype and shape the controller already knows, and every frame's size is capped.
"""

from __future__ import annotations

import json
import os
import selectors
import struct
import time
from collections.abc import Sequence
from typing import Any

MAX_FRAME_BYTES = 4 << 30
_os_write = os.write  # bound at import: a candidate rebinding os.write later does not reach it


class ProtocolError(Exception):
    """The peer broke the protocol: closed early, sent garbage or an oversized frame."""


class FrameTimeout(Exception):
    """No complete frame arrived before the deadline."""


def write_frame(fd: int, payload: bytes | memoryview) -> None:
    view = memoryview(payload).cast("B")
    _write_all(fd, memoryview(struct.pack(">Q", view.nbytes)))
    _write_all(fd, view)


def _write_all(fd: int, data: memoryview) -> None:
    while data:
        n = _os_write(fd, data)
        data = data[n:]


def write_message(
    fd: int, header: dict[str, Any], arrays: Sequence[bytes | memoryview] = ()
) -> None:
    header = {**header, "arrays": [memoryview(a).nbytes for a in arrays]}
    write_frame(fd, json.dumps(header).encode())
    for a in arrays:
        write_frame(fd, a)


# A frame at least this large is read straight into its own buffer, not through `buf`.
DIRECT_BYTES = 1 << 20
# The watchdog runs at most this often while frames arrive (and at every idle poll).
POLL_S = 0.05

Frame = bytes | memoryview  # large frames arrive as a view of their own buffer, uncopied


class FrameReader:
    """Reads frames from a pipe with deadlines; a watchdog may run between polls."""

    def __init__(self, fd: int, max_frame: int = MAX_FRAME_BYTES) -> None:
        self.fd = fd
        self.max_frame = max_frame
        self.buf = bytearray()
        self.closed = False
        self.selector = selectors.DefaultSelector()
        self.selector.register(fd, selectors.EVENT_READ)
        self._polled = 0.0

    def _wait(self, deadline: float, poll: Any) -> bool:
        """Whether the pipe has data, within the deadline; runs the watchdog now and then."""
        if self.closed:
            raise ProtocolError("worker closed the channel")
        now = time.monotonic()
        left = deadline - now
        if left <= 0:
            raise FrameTimeout()
        ready = bool(self.selector.select(timeout=min(left, 0.1)))
        if poll is not None and (not ready or now - self._polled >= POLL_S):
            self._polled = now
            poll()
        return ready

    def _fill(self, need: int, deadline: float, poll: Any = None) -> None:
        while len(self.buf) < need:
            if self._wait(deadline, poll):
                chunk = os.read(self.fd, max(1 << 16, need - len(self.buf)))
                if not chunk:
                    self.closed = True
                self.buf += chunk

    def read_frame(self, deadline: float, poll: Any = None) -> Frame:
        self._fill(8, deadline, poll)
        (size,) = struct.unpack(">Q", self.buf[:8])
        if size > self.max_frame:
            raise ProtocolError(f"frame of {size} bytes exceeds the limit")
        if size < DIRECT_BYTES or len(self.buf) >= 8 + size:
            self._fill(8 + size, deadline, poll)
            frame = bytes(self.buf[8 : 8 + size])
            del self.buf[: 8 + size]
            return frame
        # Large: one buffer of the frame's size (untouched until written), filled by the
        # kernel's reads, with exactly the frame's bytes asked for. A 256 MB output through
        # `buf` was copied three times over and cost about a second.
        import numpy as np

        out = memoryview(np.empty(size, dtype=np.uint8).data).cast("B")
        have = len(self.buf) - 8
        out[:have] = self.buf[8:]
        self.buf.clear()
        rest = out[have:]
        while rest:
            if self._wait(deadline, poll):
                n = os.readv(self.fd, [rest])
                if n == 0:
                    self.closed = True
                rest = rest[n:]
        return out

    def read_message(self, deadline: float, poll: Any = None) -> tuple[dict[str, Any], list[Frame]]:
        raw = self.read_frame(deadline, poll)
        try:
            header = json.loads(bytes(raw))
        except ValueError:
            raise ProtocolError("header is not JSON") from None
        if not isinstance(header, dict) or not isinstance(header.get("arrays", []), list):
            raise ProtocolError("header is not a JSON object")
        arrays = []
        for expected in header.get("arrays", []):
            frame = self.read_frame(deadline, poll)
            if len(frame) != expected:
                raise ProtocolError("array frame length does not match its header")
            arrays.append(frame)
        return header, arrays

    def close(self) -> None:
        self.selector.close()
