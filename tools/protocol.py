"""Frames between the controller and a worker: an 8-byte length, then JSON or raw bytes.

Nothing a worker sends is unpickled or evaluated: headers are JSON, arrays are raw bytes whose
dtype and shape the controller already knows, and every size is checked before it is read: a
header's own length, then the number and sizes of the arrays it announces (`Expect`).

The conversation, in order (controller: C; reference worker: R; candidate worker: W; the
compile worker for a CUDA task's candidate: K). Every message may instead be
{"type": "error", "error": text}, which ends that worker.

  R, W, on start   -> {"type": "device", pci_bus_id, cc, sm_count, l2_bytes, notes}
                      (a spare waits here, CUDA up, its imports and harness kernels warm)
  C -> K           <- {"source", "entry", "arch", "backend"}
  K -> C           -> {"type": "compiled", "result": CompileResult} + [cubin] when it built
  C -> R, W        <- job: {"role", "task", "trials": [{sizes, seed, poisons, inits}],
                      "files": {name: text}, "candidate", "backend", "limits"} (+ W's cubin)
  W (KernelBench)  -> {"type": "build", "spec"} while it imports, for each load_inline call
                      <- {"cmd": "built", "ok", "cached", "log"} + [library] (extbuild.py)
  W (KernelBench)  -> {"type": "compiled", "result": CompileResult}: the module imported
  R (KernelBench, job "sized": true), before any trial
                   -> {"type": "sized", "trials": [{in, in64, out, out64, w, w64} | None],
                      "gpu_free_bytes", "gpu_total_bytes"} (bytes, from the meta device: fit.py)
  R, per trial     -> {"type": "expected", "trial", "checksums", "dtypes" | "meta"+"native",
                      "reference"} + one array per output
  W, per trial run -> {"type": "outputs", "trial", "run", "checksums", "guards" | "meta",
                      "problem"?} + one array per output (sizes known from R's: Expect)
  A trial marked "device" (outputs compared on the GPU, devcompare.py): R's "expected" says
  "device": true and carries no arrays; W's "outputs" carries "device": [{size, offset}] and
  no arrays, then its memory handles on the descriptor channel; for each such run
  C -> R           <- {"cmd": "compare", "trial", "outputs": [{dtype, shape, size, offset,
                      atol, rtol}], "hold"?, "agree"?} + the handles
                   -> {"type": "compared", "trial", "facts": [...], "agreed"?: [...]}
  C -> W           <- {"cmd": "taken"} after each run W handed over (compared or not): only
                      then does W run the next (serving.Worker.handed_over)
  C -> R           <- {"cmd": "next", "trial"} once every run of the trial is compared (R's
                      job lists in "after_rounds" the trials it makes after its rounds)
  C -> R, W        <- {"cmd": "warmup", "calls", "seconds"} -> {"type": "warm"}
  C -> R           <- {"cmd": "probe"} before either side's batch (W paused), on no wall:
                      wait until no other context runs on the GPU
                   -> {"type": "probed", "quiet_us", "settled_us"}
  C -> W           <- {"cmd": "probe", "wait": false} after that, R paused, before W's batch,
                      on no wall: W woken as R is by its look, one look and no wait (its
                      reading not believed)
  C -> R, W        <- {"cmd": "round", "round": [seed, sign0, sign1]} one round a message, in
                      batches in turn (each paused while the other's runs)
                   -> {"type": "round", "result": {ms, host_ms,
                      inputs, inputs_after, unwritten, guards, sketch, meta, problem?}}
  KernelBench      the same "round" message a call, its result {ms, host_ms, sketch, meta,
                      problem?}; rounds of k calls, k from C -> R <- {"cmd": "measure",
                      "calls", "probe"} -> {"type": "measured", "ms"} (W paused)
  C -> W           <- {"cmd": "post", "trial"} -> outputs as for a trial, at the bench size
  C -> R, W        <- {"cmd": "done"} -> {"type": "done"}

A C++ task's check (cpp_check.py) is a CUDA task's, with these differences: R and W are sent its
CUDA view as their task; R's job comes with the GPU-side reference (a port) built, as W's does
with the candidate, and says {"copies": true}; R's "expected" outputs are the port's, which C
checks against the C++ function's and replaces with them; and after its "done", R times the
copies a drop-in host function makes and sends {"type": "copies", "ms": [...]}, read before
C sends W its "post". The C++ function itself runs in its own worker (cpp_worker.py).
"""

from __future__ import annotations

import json
import os
import selectors
import struct
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

MAX_FRAME_BYTES = 4 << 30
# A worker's own account of its start, in ms a step, sent with its first message ("start_ms"):
# where a cold check's first seconds go. The controller reports it and decides nothing on it.
START_STEPS = (
    "interpreter", "confine", "imports", "torch", "meta warm-up", "job wait", "cuda", "warm-up",
    "spare wait", "vmm",
)  # fmt: skip
MAX_HEADER_BYTES = 4 << 20  # a header is JSON: a few KiB, a batch of rounds a few hundred


def _bounded_int(text: str) -> int:
    """A header's integer, within 64 bits: JSON carries integers of any length, and one of
    400 digits in a round's reply passed every check and then raised OverflowError in the
    controller's float() (a red-team review)."""
    if len(text) > 20:
        raise ValueError("an integer past 64 bits")
    value = int(text)
    if not -(1 << 63) <= value < (1 << 64):
        raise ValueError("an integer past 64 bits")
    return value


def process_age_ms() -> float | None:
    """How long this process has run, in ms, from its start as the kernel counts it (field 22
    of /proc/self/stat, in clock ticks since boot): an interpreter's own start included. None
    where /proc cannot say."""
    import os
    import time
    from pathlib import Path

    try:
        fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        started = int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None
    return round(max(0.0, time.clock_gettime(time.CLOCK_BOOTTIME) - started) * 1e3, 1)


@dataclass(frozen=True)
class Expect:
    """What the next message may announce, checked on its header before any array is read:
    exactly `sizes` (bytes per array), or at most `count` arrays of at most `total` bytes."""

    sizes: tuple[int, ...] | None = None
    count: int = 64
    total: int = MAX_FRAME_BYTES

    def problem(self, announced: list[Any]) -> str:
        if not all(type(n) is int and n >= 0 for n in announced):
            return "array sizes are not counts of bytes"
        if self.sizes is not None and tuple(announced) != self.sizes:
            return (
                f"announced {len(announced)} arrays of {sum(announced):,} bytes, expected "
                f"{len(self.sizes)} of {sum(self.sizes):,}"
            )
        if len(announced) > self.count or sum(announced) > self.total:
            return (
                f"announced {len(announced)} arrays of {sum(announced):,} bytes, at most "
                f"{self.count} of {self.total:,} expected"
            )
        return ""


ANY = Expect()
_os_write = os.write  # bound at import: a candidate rebinding os.write later does not reach it


# How deep a header's lists and objects may nest (ours nest four at most): one nested
# hundreds deep parses, and then any repr, == or dumps of it further down the stack (a
# verdict's reason quoting what a worker said) raised RecursionError out of the check
MAX_HEADER_DEPTH = 32


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether `value`'s lists and dicts nest deeper than `limit` (iterative: no recursion)."""
    todo: list[tuple[Any, int]] = [(value, 0)]
    while todo:
        item, depth = todo.pop()
        if isinstance(item, dict | list):
            if depth >= limit:
                return True
            todo += [(v, depth + 1) for v in (item.values() if isinstance(item, dict) else item)]
    return False


class ProtocolError(Exception):
    """The peer broke the protocol: closed early, sent garbage or an oversized frame."""


class Unexpected(ProtocolError):
    """A message announced other arrays than expected: refused unread, its header kept."""

    def __init__(self, problem: str, header: dict[str, Any]) -> None:
        super().__init__(problem)
        self.header = header


class FrameTimeout(Exception):
    """No complete frame arrived before the deadline."""


def write_frame(fd: int, payload: bytes | memoryview) -> None:
    view = memoryview(payload).cast("B")
    if view.nbytes < DIRECT_BYTES:  # one write, one wake-up of the reader
        _write_all(fd, memoryview(struct.pack(">Q", view.nbytes) + view))
        return
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
        self.spin_s = 0.0  # how long to poll without sleeping before blocking (timing rounds)

    def _wait(self, deadline: float, poll: Any) -> bool:
        """Whether the pipe has data, within the deadline; runs the watchdog now and then."""
        if self.closed:
            raise ProtocolError("worker closed the channel")
        now = time.monotonic()
        left = deadline - now
        if left <= 0:
            raise FrameTimeout()
        ready = False
        if self.spin_s:  # a worker's reply is due in microseconds: no scheduler wake-up's jitter
            until = now + min(self.spin_s, left)
            while not ready and time.monotonic() < until:
                ready = bool(self.selector.select(timeout=0))
        ready = ready or bool(self.selector.select(timeout=min(left, 0.1)))
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

    def read_frame(self, deadline: float, poll: Any = None, limit: int | None = None) -> Frame:
        self._fill(8, deadline, poll)
        (size,) = struct.unpack(">Q", self.buf[:8])
        if size > min(self.max_frame, limit if limit is not None else self.max_frame):
            raise ProtocolError(f"frame of {size:,} bytes exceeds the limit")
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

    def read_message(
        self, deadline: float, poll: Any = None, expect: Expect = ANY
    ) -> tuple[dict[str, Any], list[Frame]]:
        raw = bytes(self.read_frame(deadline, poll, MAX_HEADER_BYTES))
        try:
            header = json.loads(raw, parse_int=_bounded_int)
        except (ValueError, RecursionError):  # a header nested past Python's stack: no verdict
            raise ProtocolError("header is not JSON (or holds an integer past 64 bits)") from None
        if not isinstance(header, dict) or not isinstance(header.get("arrays", []), list):
            raise ProtocolError("header is not a JSON object")
        if raw.count(b"[") + raw.count(b"{") > MAX_HEADER_DEPTH and _deeper_than(
            header, MAX_HEADER_DEPTH
        ):
            raise ProtocolError(f"header is nested deeper than {MAX_HEADER_DEPTH}")
        announced = header.get("arrays", [])
        if header.get("type") == "error":
            if announced:
                raise ProtocolError("an error message announced arrays")
        elif problem := expect.problem(announced):
            raise Unexpected(problem, header)
        arrays = []
        for expected in header.get("arrays", []):
            frame = self.read_frame(deadline, poll)
            if len(frame) != expected:
                raise ProtocolError("array frame length does not match its header")
            arrays.append(frame)
        return header, arrays

    def close(self) -> None:
        self.selector.close()
