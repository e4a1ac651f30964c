"""The timing protocol: CUDA events around each call with a device-wide synchronize, an L2 flush
before every call, rotation over input sets, warm-up, and reference and candidate alternated in
rounds. The loop runs in the worker; the statistics and the verdicts on them run in the controller.
"""

from __future__ import annotations

import contextlib
import gc
import math
import random
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from .results import KernelTiming

# The flush buffer is read before each call: at least twice the L2 size. Reading (not writing)
# leaves clean lines, so the timed kernel never pays for write-backs of the flush itself.
L2_FLUSH_FACTOR = 2
_FLUSH_SRC = r"""
extern "C" __global__ void kw_l2_flush(const int4* buf, unsigned long long n, int* sink) {
    int4 acc = make_int4(0, 0, 0, 0);
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        int4 v = buf[i];
        acc.x ^= v.x; acc.y ^= v.y; acc.z ^= v.z; acc.w ^= v.w;
    }
    if ((acc.x ^ acc.y ^ acc.z ^ acc.w) == 0x7f3a5c91) sink[0] = 1;  // never true; keeps the loads
}

// One thread waits on the GPU's own clock, touching no memory: the flushed L2 stays flushed
// while the host queues the start event and the timed launch behind it.
extern "C" __global__ void kw_hold(unsigned long long ns) {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < ns);
}
"""
# How long the GPU is held after the flush while the host queues a CUDA task's launch: far more
# than one launch's host cost (~10 us), so the start event fires only when the kernel is queued.
HOLD_NS = 100_000
_HOLD_NS = np.uint64(HOLD_NS)


class Clock:
    """The timing primitives, bound once before any candidate code loads: a candidate that later
    rebinds `time.perf_counter`, CuPy's events or its synchronize does not reach these. Each
    sample demotes persisting L2 lines, flushes L2 (a read of at least twice its size),
    synchronizes, then times one call between CUDA events with a device-wide synchronize.

    queue_ahead (CUDA tasks: one launch by trusted host code, no candidate host code): after the
    flush the GPU is held on its own clock while start, the launch and end are queued, so the
    events time the kernel and not the host's launch latency. Candidate host code (KernelBench)
    is timed without it: its host dispatch is part of its cost, and work it could slip onto
    another stream during the hold would escape the events.
    """

    def __init__(self, l2_bytes: int, queue_ahead: bool = False) -> None:
        import functools

        import cupy

        from .guard import clear_persisting_l2, reset_persisting_l2

        self.flush_bytes = max(L2_FLUSH_FACTOR * l2_bytes, 8 << 20) // 16 * 16
        self._buf = cupy.random.RandomState(1).randint(
            0, 1 << 30, self.flush_bytes // 4, dtype=cupy.int32
        )
        self._sink = cupy.zeros(1, dtype=cupy.int32)
        self._flush = cupy.RawKernel(_FLUSH_SRC, "kw_l2_flush")
        self._hold = cupy.RawKernel(_FLUSH_SRC, "kw_hold") if queue_ahead else None
        self.hold_ms = HOLD_NS / 1e6 if queue_ahead else 0.0
        self._n_vec = np.uint64(self.flush_bytes // 16)
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        self._start, self._end = start.record, end.record
        self._elapsed = functools.partial(cupy.cuda.get_elapsed_time, start, end)
        self.sync = cupy.cuda.runtime.deviceSynchronize
        self._now = time.perf_counter
        self._reset_l2 = reset_persisting_l2
        clear_persisting_l2()  # in every worker alike: no persisting lines, whoever times
        self._flush((1,), (32,), (self._buf, np.uint64(1), self._sink))  # compiled now
        if self._hold is not None:
            self._hold((1,), (1,), (np.uint64(1),))
        self.sync()

    def sample(self, fn: Callable[[int], Any], k: int) -> tuple[float, float]:
        """(event ms, host ms) of one call on input set k."""
        # Synchronous: the flush completes, then start, call, end. Queueing them together was
        # tried and made a 37 us PyTorch forward read 0.96x against itself (its host dispatch
        # overlapped the flush unevenly), without closing the gap to ncu on short kernels.
        self._reset_l2()
        self._flush((1056,), (256,), (self._buf, self._n_vec, self._sink))
        self.sync()
        t0 = self._now()
        if self._hold is not None:
            self._hold((1,), (1,), (_HOLD_NS,))
        self._start()
        fn(k)
        self._end()
        self.sync()
        host_ms = (self._now() - t0) * 1e3
        return self._elapsed(), host_ms


class RoundHooks:
    """Work between timed calls (never inside a timed window); the default does nothing."""

    def start(self, r: int, k: int, order: Sequence[str]) -> None:
        pass

    def after(self, name: str, r: int, k: int, order: Sequence[str]) -> None:
        pass

    def settle(self) -> None:
        """After each warm-up call and estimate, outside the rounds."""


def measure(
    clock: Clock,
    timed: dict[str, Callable[[int], Any]],
    input_sets: int,
    budget_s: float = 0.5,
    min_rounds: int = 15,
    max_rounds: int = 300,
    warmup: int = 3,
    warmup_s: float = 0.25,
    rounds: int | None = None,
    hooks: RoundHooks | None = None,
    shuffle: random.Random | None = None,
    cap_s: float | None = None,
) -> dict[str, Any]:
    """Time each callable once per round over input sets in rotation; raw event and host ms.

    Runs in the worker. The order within a round alternates (or is drawn from `shuffle`, so a
    kernel cannot tell from its call count which calls the hooks check) so that no callable
    always runs right after the flush of another. `rounds` fixes the count (a second worker
    timing the same work as a first); otherwise the budget sets it, and `cap_s` (seconds of
    rounds, at least `min_rounds`) bounds it where the estimate can fall far short.
    """
    hooks = hooks or RoundHooks()
    # As timeit does: no garbage collection while timing (see _collector_off).
    with _collector_off() as switched_on:
        names = list(timed)
        # Warm-up: at least `warmup` calls each and `warmup_s` seconds, so the GPU's clocks have
        # risen before the first sample (two workers timed one after the other start level).
        start, w = time.perf_counter(), 0
        while w < warmup or time.perf_counter() - start < warmup_s:
            for name in names:
                timed[name](w % input_sets)
                clock.sync()
                hooks.settle()
            w += 1
        if rounds is None:
            est = []
            for name in names:
                for _ in range(2):
                    est.append(clock.sample(timed[name], 0)[0])
                    hooks.settle()
            per_round_s = len(names) * (
                (max(est) + clock.hold_ms + 0.05) / 1e3 + clock.flush_bytes / 1e12
            )
            rounds = int(min(max_rounds, max(min_rounds, budget_s / per_round_s)))
            # The estimate leaves out the hooks and the host's own work: a cap, where one is asked.
            deadline = time.perf_counter() + (cap_s if cap_s is not None else float("inf"))
        else:
            deadline = float("inf")  # a count fixed by the caller is kept
        out: dict[str, Any] = {f"{n}_{kind}": [] for n in names for kind in ("ms", "host_ms")}
        out["first"] = []  # which callable opened each round: the statistics balance on it
        for r in range(rounds):
            if r >= min_rounds and time.perf_counter() > deadline:
                rounds = r
                break
            k = r % input_sets
            if shuffle is not None:
                order = shuffle.sample(names, len(names))
            else:
                order = names if r % 2 == 0 else names[::-1]
            hooks.start(r, k, order)
            out["first"].append(order[0])
            for name in order:
                event_ms, host_ms = clock.sample(timed[name], k)
                out[f"{name}_ms"].append(event_ms)
                out[f"{name}_host_ms"].append(host_ms)
                hooks.after(name, r, k, order)
    if switched_on():  # only candidate code could have: it would choose whose window pays
        out["tampered"] = ["the garbage collector was switched on while timed calls ran"]
    return {**out, "rounds": rounds, "l2_flush_bytes": clock.flush_bytes}


@contextlib.contextmanager
def _collector_off() -> Iterator[Callable[[], bool]]:
    """Python's garbage collector off inside, restored after; yields whether something switched
    it back on meanwhile. A collection costs tens of microseconds and falls where the
    allocation count crosses its threshold, which in a regular cycle of rounds can be the same
    side's window every time (a KernelBench model timed against itself read 0.94-0.96x)."""
    was_on = gc.isenabled()
    gc.collect()
    gc.disable()
    seen: list[bool] = []
    try:
        yield lambda: bool(seen and seen[0])
    finally:
        seen.append(gc.isenabled())
        if was_on:
            gc.enable()


def summarize(samples: Sequence[float]) -> KernelTiming:
    """Median with its spread (interquartile range), min and max (pure)."""
    xs = sorted(samples)
    q = statistics.quantiles(xs, n=4, method="inclusive") if len(xs) > 1 else [xs[0]] * 3
    return KernelTiming(
        median_ms=statistics.median(xs),
        iqr_ms=q[2] - q[0],
        min_ms=xs[0],
        max_ms=xs[-1],
        samples=len(xs),
    )


def speedup(
    ref_ms: Sequence[float], cand_ms: Sequence[float], first: Sequence[str] | None = None
) -> tuple[float, float]:
    """The speedup from per-round ratios reference / candidate, and their IQR (pure).

    Without `first`: the median ratio. With `first` (which side opened each round): the
    geometric mean of the median ratio over rounds the reference opened and over rounds the
    candidate opened, and the IQR of the ratios each scaled by that over its own group's
    median. Whatever the opening call pays (on the H200 a KernelBench forward opening its round
    ran ~13% slower than the one after it) then cancels, instead of splitting the ratios into
    two humps with the overall median between them, where small imbalances move it by 1-2%.
    """
    ratios = [r / c if c > 0 else float("inf") for r, c in zip(ref_ms, cand_ms, strict=True)]
    opened = list(zip(ratios, first, strict=True)) if first is not None else []
    groups = [[x for x, f in opened if f == side] for side in ("ref", "cand")]
    if not all(groups):  # no order given, or one side opened every round
        return statistics.median(ratios), _iqr(ratios)
    medians = {side: statistics.median(g) for side, g in zip(("ref", "cand"), groups, strict=True)}
    if not all(0 < m < float("inf") for m in medians.values()):
        return statistics.median(ratios), _iqr(ratios)
    ratio = math.sqrt(medians["ref"] * medians["cand"])
    return ratio, _iqr([x * ratio / medians[f] for x, f in opened])


def _iqr(xs: Sequence[float]) -> float:
    if len(xs) < 2:
        return 0.0
    q = statistics.quantiles(sorted(xs), n=4, method="inclusive")
    return q[2] - q[0]


def host_clock_problem(event_ms: Sequence[float], host_ms: Sequence[float]) -> str:
    """Why event times cannot be believed against the host clock, or "" (pure).

    Each event interval lies inside its host interval (launch to device-wide sync), so an
    event time longer than the host's is forged, and a total far below it means the timed
    work was not the work that ran.
    """
    if len(event_ms) != len(host_ms) or not event_ms:
        return "timing inconsistent: sample counts differ"
    for ev, wall in zip(event_ms, host_ms, strict=True):
        if not ev >= 0 or ev > wall * 1.05 + 0.02:
            return f"timing inconsistent with host clock: event {ev:.4f} ms > host {wall:.4f} ms"
    return ""


def roofline_floor_ms(
    bytes_moved: float | None,
    flops: float | None,
    peak_gbps: float | None,
    peak_fp32_tflops: float | None,
) -> float | None:
    """The least time the work could take (pure). FLOPs are set against 16x the fp32 rate, a
    bound above any tensor-core rate for these dtypes, so the floor only rejects the impossible."""
    floors = []
    if bytes_moved and peak_gbps:
        floors.append(bytes_moved / (peak_gbps * 1e9) * 1e3)
    if flops and peak_fp32_tflops:
        floors.append(flops / (16 * peak_fp32_tflops * 1e12) * 1e3)
    return max(floors) if floors else None


def escaped_work_problem(
    ref_ms: Sequence[float],
    ref_host_ms: Sequence[float],
    cand_ms: Sequence[float],
    cand_host_ms: Sequence[float],
) -> str:
    """Why the candidate's events missed work it made the GPU do, or "" (pure).

    Host time runs from before the start event to after a device-wide synchronize, so it holds
    work on any stream; the events hold only what the timed stream ran. Beside the same gap for
    the reference, a larger gap is work the candidate left on a side stream or a thread.
    """
    gap_ref = statistics.median(h - e for e, h in zip(ref_ms, ref_host_ms, strict=True))
    gap_cand = statistics.median(h - e for e, h in zip(cand_ms, cand_host_ms, strict=True))
    inside = statistics.median(cand_ms)
    escaped = gap_cand - gap_ref
    if escaped > max(0.02, 0.5 * inside):
        return (
            f"work escaped the timed region: {escaped:.3f} ms per call ran after the "
            f"candidate's end event (on another stream or thread), {inside:.3f} ms inside it"
        )
    return ""


def timed_output_problem(timed: dict[str, Any]) -> str:
    """Why the candidate's outputs during timing cannot be believed, or "" (pure).

    `timed` is the worker's count over the timed calls: every output was poisoned before each
    call, so an element still holding the poison was never written, and in rounds where the
    candidate ran first its output was compared with the reference kernel's on the same inputs.
    """
    calls, checked = int(timed.get("calls", 0)), int(timed.get("checked", 0))
    for name, counts in sorted(timed.get("outputs", {}).items()):
        if counts.get("unwritten"):
            return (
                f"output '{name}' not fully written during timing: {counts['unwritten_calls']} "
                f"of {calls} timed calls left elements untouched ({counts['unwritten']:,} in "
                f"all); the kernel behaves differently when timed"
            )
        if counts.get("mismatched"):
            return (
                f"output '{name}' wrong during timing: {counts['mismatched_calls']} of "
                f"{checked} checked timed calls differ from the reference kernel on the same "
                f"inputs ({counts['mismatched']:,} elements); the kernel behaves differently "
                f"when timed"
            )
    return ""
