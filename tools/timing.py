"""The timing protocol: CUDA events around each call with a device-wide synchronize, an L2 flush
before every call, rotation over input sets, warm-up, and reference and candidate alternated in
rounds. The loop runs in the worker; the statistics and the verdicts on them run in the controller.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
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


def measure(
    ref: Callable[[int], Any],
    cand: Callable[[int], Any],
    input_sets: int,
    l2_bytes: int,
    budget_s: float = 0.5,
    min_rounds: int = 15,
    max_rounds: int = 300,
    warmup: int = 3,
    queue_ahead: bool = False,
) -> dict[str, Any]:
    """Alternate ref and cand over rounds; return raw per-call event and host times (ms).

    Runs in the worker. Each sample: flush L2 (read a 2x-L2 buffer) and synchronize, record start,
    call, record end, synchronize the whole device, read the host clock. The order within a round
    alternates so neither kernel always runs right after the flush of the other.

    queue_ahead (CUDA tasks: one launch by trusted host code, no candidate host code): after the
    flush the GPU is held on its own clock while start, the launch and end are queued, so the
    events time the kernel and not the host's launch latency. Candidate host code (KernelBench)
    is timed without it: its host dispatch is part of its cost, and work it could slip onto
    another stream during the hold would escape the events.
    """
    import cupy

    flush_bytes = max(L2_FLUSH_FACTOR * l2_bytes, 8 << 20) // 16 * 16
    flush = cupy.random.RandomState(1).randint(0, 1 << 30, flush_bytes // 4, dtype=cupy.int32)
    sink = cupy.zeros(1, dtype=cupy.int32)
    flush_kernel = cupy.RawKernel(_FLUSH_SRC, "kw_l2_flush")
    hold_kernel = cupy.RawKernel(_FLUSH_SRC, "kw_hold")
    hold_ns = np.uint64(HOLD_NS)
    n_vec = np.uint64(flush_bytes // 16)
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    sync = cupy.cuda.runtime.deviceSynchronize

    def sample(fn: Callable[[int], Any], k: int, r: int) -> tuple[float, float]:
        # Synchronous: the flush completes, then start, call, end. Queueing them together was
        # tried and made a 37 us PyTorch forward read 0.96x against itself (its host dispatch
        # overlapped the flush unevenly), without closing the gap to ncu on short kernels.
        flush_kernel((1056,), (256,), (flush, n_vec, sink))
        sync()
        t0 = time.perf_counter()
        if queue_ahead:
            hold_kernel((1,), (1,), (hold_ns,))
        start.record()
        fn(k)
        end.record()
        sync()
        host_ms = (time.perf_counter() - t0) * 1e3
        return cupy.cuda.get_elapsed_time(start, end), host_ms

    for w in range(warmup):
        for fn in (ref, cand):
            fn(w % input_sets)
    sync()
    est = [sample(fn, 0, 0)[0] for fn in (ref, cand) for _ in range(2)]
    hold_ms = HOLD_NS / 1e6 if queue_ahead else 0.0
    per_round_s = 2 * (max(est) + hold_ms + 0.05) / 1e3 + 2 * flush_bytes / 1e12
    rounds = int(min(max_rounds, max(min_rounds, budget_s / per_round_s)))
    ref_ms: list[float] = []
    cand_ms: list[float] = []
    ref_host: list[float] = []
    cand_host: list[float] = []
    for r in range(rounds):
        k = r % input_sets
        order = ((ref, ref_ms, ref_host), (cand, cand_ms, cand_host))
        for fn, events, host in order if r % 2 == 0 else order[::-1]:
            ev, wall = sample(fn, k, r)
            events.append(ev)
            host.append(wall)
    return {
        "ref_ms": ref_ms,
        "cand_ms": cand_ms,
        "ref_host_ms": ref_host,
        "cand_host_ms": cand_host,
        "rounds": rounds,
        "l2_flush_bytes": flush_bytes,
    }


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
    """Median and IQR of the per-round ratios reference / candidate (pure)."""
    ratios = sorted(r / c if c > 0 else float("inf") for r, c in zip(ref_ms, cand_ms, strict=True))
    q = (
        statistics.quantiles(ratios, n=4, method="inclusive")
        if len(ratios) > 1
        else [ratios[0]] * 3
    )
    return statistics.median(ratios), q[2] - q[0]


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
