"""The timing protocol's two halves: the clock a worker times one call with, and the statistics
the controller draws from the samples of both workers (pure functions, tested without a GPU).

Each sample demotes persisting L2 lines, flushes L2 (a read of at least twice its size),
synchronizes, then times one call between CUDA events with a device-wide synchronize. The
controller, not the worker, decides how many rounds run and in what order (schedule.py).
"""

from __future__ import annotations

import ctypes
import math
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .results import KernelTiming

L2_FLUSH_FACTOR = 2
# How long the GPU is held after the flush while the host queues a CUDA task's launch: far more
# than one launch's host cost (~10 us), so the start event fires only when the kernel is queued.
HOLD_NS = 100_000
BUSY_US = 500.0  # an empty launch slower than this: another context holds the GPU
_CUDA_LIMIT_PERSISTING_L2 = 0x06


def flush_bytes(l2_bytes: int) -> int:
    """How much the L2 flush reads before each timed call: at least twice the L2 size."""
    return max(L2_FLUSH_FACTOR * l2_bytes, 8 << 20) // 16 * 16


class Clock:
    """The timing primitives, bound once before any candidate code loads.

    queue_ahead (CUDA tasks: one launch by trusted host code): after the flush the GPU is held
    on its own clock while start, the launch and end are queued, so the events time the kernel
    and not the host's launch latency. Candidate host code (KernelBench) is timed without it:
    its host dispatch is part of its cost.
    """

    def __init__(self, l2_bytes: int, queue_ahead: bool = False) -> None:
        import functools

        import cupy

        from . import kernels

        self.flush_bytes = flush_bytes(l2_bytes)
        self._buf = cupy.random.RandomState(1).randint(
            0, 1 << 30, self.flush_bytes // 4, dtype=cupy.int32
        )
        self._sink = cupy.zeros(1, dtype=cupy.int32)
        self._flush = kernels.function("kw_l2_flush")
        self._hold = kernels.function("kw_hold") if queue_ahead else None
        self._nop = kernels.function("kw_nop")
        self._blocks = cupy.cuda.Device().attributes["MultiProcessorCount"] * 8
        self._n_vec = np.uint64(self.flush_bytes // 16)
        self._hold_ns = (np.uint64(HOLD_NS),)
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        self._start, self._end = start.record, end.record
        self._elapsed = functools.partial(cupy.cuda.get_elapsed_time, start, end)
        self.sync = cupy.cuda.runtime.deviceSynchronize
        self._now = time.perf_counter
        clear_persisting_l2()  # in every worker alike: no persisting lines, whoever times
        self.flush()
        if self._hold is not None:
            self._hold((1,), (1,), (np.uint64(1),))
        self.sync()

    def flush(self) -> None:
        reset_persisting_l2()
        self._flush((self._blocks,), (256,), (self._buf, self._n_vec, self._sink))

    def sample(self, fn: Callable[[], Any]) -> tuple[float, float]:
        """(event ms, host ms) of one call, after the flush."""
        self.ready()
        return self.timed(fn)

    def ready(self) -> None:
        """Before a timed call: L2 flushed, the GPU idle."""
        self.flush()
        self.sync()

    def timed(self, fn: Callable[[], Any]) -> tuple[float, float]:
        """(event ms, host ms) of one call; `ready()` first."""
        t0 = self._now()
        if self._hold is not None:
            self._hold((1,), (1,), self._hold_ns)
        self._start()
        fn()
        self._end()
        self.sync()
        host_ms = (self._now() - t0) * 1e3
        return self._elapsed(), host_ms

    def quiet_us(self, probes: int = 3) -> float:
        """The slowest of a few empty launches, in us: a few us when this context has the GPU
        to itself, a timeslice (milliseconds) while another context runs work."""
        worst = 0.0
        for _ in range(probes):
            t0 = self._now()
            self._nop((1,), (1,), ())
            self.sync()
            worst = max(worst, (self._now() - t0) * 1e6)
        return worst


def _driver() -> Any:
    try:
        return ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None


_libcuda = _driver()


def clear_persisting_l2() -> None:
    """No L2 set aside for persisting accesses (the driver may start with some)."""
    if _libcuda is not None:
        _libcuda.cuCtxSetLimit(_CUDA_LIMIT_PERSISTING_L2, ctypes.c_size_t(0))


def reset_persisting_l2() -> None:
    """Demote every persisting L2 line to normal, so the flush can evict it."""
    if _libcuda is not None:
        _libcuda.cuCtxResetPersistingL2Cache()


# --- statistics (controller) ----------------------------------------------------------------


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


def speedup(ref_ms: Sequence[float], cand_ms: Sequence[float]) -> tuple[float, float]:
    """The median of per-round ratios reference / candidate (the same inputs in both), and
    their interquartile range (pure)."""
    ratios = [r / c if c > 0 else float("inf") for r, c in zip(ref_ms, cand_ms, strict=True)]
    return statistics.median(ratios), _iqr(ratios)


def median_interval(xs: Sequence[float], z: float = 1.96) -> tuple[float, float]:
    """A distribution-free confidence interval for the median, from order statistics (pure)."""
    s = sorted(xs)
    n = len(s)
    if n < 3:
        return (s[0], s[-1]) if s else (math.nan, math.nan)
    half = z * math.sqrt(n) / 2
    lo = max(0, math.floor(n / 2 - half))
    hi = min(n - 1, math.ceil(n / 2 + half))
    return s[lo], s[hi]


def ratio_settled(ref_ms: Sequence[float], cand_ms: Sequence[float], precision: float) -> bool:
    """Whether the median ratio is known within ±precision (relative, 95%) (pure)."""
    ratios = [r / c for r, c in zip(ref_ms, cand_ms, strict=True) if c > 0]
    if len(ratios) < 3:
        return False
    lo, hi = median_interval(ratios)
    mid = statistics.median(ratios)
    return mid > 0 and (hi - lo) / 2 <= precision * mid


def _iqr(xs: Sequence[float]) -> float:
    if len(xs) < 2:
        return 0.0
    q = statistics.quantiles(sorted(xs), n=4, method="inclusive")
    return q[2] - q[0]


def host_clock_problem(event_ms: Sequence[float], host_ms: Sequence[float]) -> str:
    """Why event times cannot be believed against the worker's host clock, or "" (pure).

    Each event interval lies inside its host interval (launch to device-wide sync), so an
    event time longer than the host's is forged."""
    if len(event_ms) != len(host_ms) or not event_ms:
        return "timing inconsistent: sample counts differ"
    for ev, wall in zip(event_ms, host_ms, strict=True):
        if not ev >= 0 or ev > wall * 1.05 + 0.02:
            return f"timing inconsistent with host clock: event {ev:.4f} ms > host {wall:.4f} ms"
    return ""


def unexplained_us(
    walls: Sequence[tuple[float, float, float, float, int]],
) -> float:
    """Per call, how much longer the candidate's worker kept the controller waiting than its
    own samples explain, beyond what the reference's worker took for the same harness work
    (pure): the median over rounds. `walls` holds, per round (the same calls in both workers),
    (candidate's wall ms, the sum of its samples, the reference's wall ms, the sum of its
    samples, calls)."""
    per_call = unexplained_per_round_us(walls)
    return statistics.median(per_call) if per_call else 0.0


def unexplained_per_round_us(
    walls: Sequence[tuple[float, float, float, float, int]],
) -> list[float]:
    """unexplained_us for each round on its own, per call (pure)."""
    return [((cw - cs) - (rw - rs)) / n * 1e3 for cw, cs, rw, rs, n in walls if n > 0]


def five_percentiles(xs: Sequence[float]) -> tuple[float, ...]:
    """The 10th, 25th, 50th, 75th and 90th percentiles (pure; empty for no values)."""
    if not xs:
        return ()
    if len(xs) == 1:
        return (xs[0],) * 5
    q = statistics.quantiles(sorted(xs), n=20, method="inclusive")  # every 5%
    return (q[1], q[4], q[9], q[14], q[17])


def roofline_floor_ms(
    bytes_moved: float | None,
    flops: float | None,
    peak_gbps: float | None,
    peak_fp32_tflops: float | None,
    fp32_times: float = 16.0,
) -> float | None:
    """The least time the work could take (pure). FLOPs are set against `fp32_times` the fp32
    rate: by default 16, a bound above any tensor-core rate for these dtypes, so the floor
    only rejects the impossible (1: the roofline a kernel without tensor cores could reach)."""
    floors = []
    if bytes_moved and peak_gbps:
        floors.append(bytes_moved / (peak_gbps * 1e9) * 1e3)
    if flops and peak_fp32_tflops:
        floors.append(flops / (fp32_times * peak_fp32_tflops * 1e12) * 1e3)
    return max(floors) if floors else None
