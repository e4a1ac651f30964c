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


class FrameReader:
    """Reads frames from a pipe with deadlines; a watchdog may run between polls."""

    def __init__(self, fd: int, max_frame: int = MAX_FRAME_BYTES) -> None:
        self.fd = fd
        self.max_frame = max_frame
        self.buf = bytearray()
        self.closed = False
        self.selector = selectors.DefaultSelector()
        self.selector.register(fd, selectors.EVENT_READ)

    def _fill(self, need: int, deadline: float, poll: Any = None) -> None:
        while len(self.buf) < need:
            if self.closed:
                raise ProtocolError("worker closed the channel")
            left = deadline - time.monotonic()
            if left <= 0:
                raise FrameTimeout()
            if self.selector.select(timeout=min(left, 0.1)):
                chunk = os.read(self.fd, max(1 << 20, min(need - len(self.buf), 64 << 20)))
                if not chunk:
                    self.closed = True
                self.buf += chunk
            if poll is not None:
                poll()

    def read_frame(self, deadline: float, poll: Any = None) -> bytes:
        self._fill(8, deadline, poll)
        (size,) = struct.unpack(">Q", self.buf[:8])
        if size > self.max_frame:
            raise ProtocolError(f"frame of {size} bytes exceeds the limit")
        self._fill(8 + size, deadline, poll)
        frame = bytes(self.buf[8 : 8 + size])
        del self.buf[: 8 + size]
        return frame

    def read_message(self, deadline: float, poll: Any = None) -> tuple[dict[str, Any], list[bytes]]:
        raw = self.read_frame(deadline, poll)
        try:
            header = json.loads(raw)
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
