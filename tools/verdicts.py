"""The timing's verdict, from both workers' rounds and the controller's own clock (pure, but for
reading the task's roofline expressions): the speedup, and why it cannot be believed, if so.

A KernelBench candidate is Python in the process that times it, so its samples are believed
only as far as the controller's clock bears them out. Per round, the candidate's worker may
keep the controller waiting longer than its samples explain, beyond what the reference's worker
took for the same harness work: that is time spent where its samples do not look (work left
outside its timed window, or samples forged). A round of k calls is k + 1 messages, each on the
controller's clock: its first input set is made (the problem's own Python), then each call is
asked for, timed and answered with its samples and sketches, and the next call's input set
made (schedule.py). Both workers run on the same CPU in turn, so honest ones differ only by
noise: a few microseconds a message, a little more for each input set made (allowances_us).
What exceeds it is charged to the candidate's time; more than its whole measured time, and the
timing is refused as implausible. A CUDA task's
candidate has no host code: its worker's samples are the harness's own, and the figure is
reported, not charged.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from . import expr
from .kernelbench import KernelBenchTask
from .results import DeviceInfo, TimingResult
from .schedule import Rounds
from .spec import CudaTask
from .timing import (
    BUSY_US,
    flush_bytes,
    host_clock_problem,
    roofline_floor_ms,
    speedup,
    summarize,
    unexplained_us,
)

# What two honest workers' messages may differ by on the controller's clock:
# (measured on an H100 VM with both workers timed on one CPU: honest workers running the same
# model differed by -17 to +29 us on a first set, and by -3 to +5 us a call; docs/benchmarks.md)
ALLOW_US = 40.0  # a round's first: its first input set made (the problem's own Python)
ALLOW_CALL_US = 4.0  # each call's: the call, its outputs' sketches, two messages ...
ALLOW_SET_US = 4.0  # ... and this when it also makes the next call's input set


def allowances_us(calls: int) -> tuple[float, float]:
    """(calls, first input set) allowance per call for rounds of `calls` calls (pure)."""
    k = max(1, calls)
    return ALLOW_CALL_US + ALLOW_SET_US * (k - 1) / k, ALLOW_US / k


def charge_us(unexplained: float, python: bool, prepare: float = 0.0, calls: int = 1) -> float:
    """What a candidate is charged per call beyond its own samples (pure): the calls'
    unexplained time (per call) beyond its allowance, and a slower first input set than the
    reference's (per round, over its `calls` calls) beyond its own: work done on the inputs
    before the call was asked for."""
    if not python:
        return 0.0
    call_allow, input_allow = allowances_us(calls)
    return max(0.0, unexplained - call_allow) + max(0.0, prepare / max(1, calls) - input_allow)


def unexplained_problem(charged: float, cand_median_ms: float, python: bool, calls: int = 1) -> str:
    if python and charged > cand_median_ms * 1e3:
        call_allow, input_allow = allowances_us(calls)
        return (
            f"implausible: work escaped the timed region: the candidate's worker kept the "
            f"controller waiting {charged:.0f} us per call longer than its samples explain "
            f"(beyond the reference's harness and the {call_allow:.0f} us a call and "
            f"{input_allow:.0f} us of a round's first input set, two honest workers may differ "
            f"by, per call), more than "
            f"its own {cand_median_ms * 1e3:.0f} us"
        )
    return ""


def prepare_excess_us(rounds: Rounds) -> float:
    """Per round, how much longer the candidate's worker took than the reference's to make the
    same first input set (two phases; 0 otherwise), the median in us (pure)."""
    pairs = [c - r for c, r in zip(rounds.cand_prepare_ms, rounds.ref_prepare_ms, strict=False)]
    return statistics.median(pairs) * 1e3 if pairs else 0.0


def timing_notes(
    before: Any, after: Any, cand_quiet: Sequence[float], ref_quiet: Sequence[float], python: bool
) -> tuple[str, ...]:
    notes = []
    for sample in (before, after):
        if sample and set(sample.throttle_reasons) - {"gpu_idle", "applications_clocks_setting"}:
            notes.append("clocks held down during timing: " + ", ".join(sample.throttle_reasons))
            break
    if any(q > BUSY_US for q in (*cand_quiet, *ref_quiet)):
        notes.append(
            "the GPU was busy for a moment before some batches (another context's work); "
            "each batch waited for it to settle"
        )
    return tuple(notes)


def timing(
    task: CudaTask | KernelBenchTask,
    rounds: Rounds,
    device: DeviceInfo | None,
    before: Any,
    after: Any,
) -> tuple[TimingResult, str]:
    """The timing result, and the first reason it cannot be believed ("" when it can)."""
    problems = [
        host_clock_problem(rounds.ms("ref"), rounds.host_ms("ref")),
        host_clock_problem(rounds.ms("cand"), rounds.host_ms("cand")),
    ]
    ref_ms, cand_ms = rounds.round_ms("ref"), rounds.round_ms("cand")  # per call, by round
    unexplained = unexplained_us(rounds.walls)
    prepare = prepare_excess_us(rounds)
    python = isinstance(task, KernelBenchTask)  # candidate code beside its own timing
    charged = charge_us(unexplained, python, prepare, rounds.calls)
    problems.append(
        unexplained_problem(charged, summarize(cand_ms).median_ms, python, rounds.calls)
    )
    cand_ms = [ms + charged / 1e3 for ms in cand_ms]  # what the controller's clock bears out
    cand = summarize(cand_ms)
    # The reference's worker waits (up to 2 s) until no other context holds the GPU before
    # its batch; one that never settled was timed beside someone's work.
    busy = max(rounds.ref_settled_us, default=0.0)
    if busy > BUSY_US:
        problems.append(
            "implausible: the GPU stayed busy while the reference was to be timed, with the "
            f"candidate's worker paused (an empty launch still took {busy / 1e3:.1f} ms after "
            "2 s): work left running" + ("" if python else " by another process on this GPU")
        )
    floor = None
    if isinstance(task, CudaTask) and device is not None:
        rbytes = expr.evaluate(task.roofline_bytes, task.bench) if task.roofline_bytes else None
        rflops = expr.evaluate(task.roofline_flops, task.bench) if task.roofline_flops else None
        floor = roofline_floor_ms(rbytes, rflops, device.peak_dram_gbps, device.peak_fp32_tflops)
    if floor is not None and cand.median_ms < 0.9 * floor:
        problems.append(
            f"implausible: {cand.median_ms:.4f} ms is below the roofline floor "
            f"{floor:.4f} ms for this much data"
        )
    ratio, ratio_iqr = speedup(ref_ms, cand_ms)
    result = TimingResult(
        reference=summarize(ref_ms),
        candidate=cand,
        speedup=ratio,
        speedup_iqr=ratio_iqr,
        rounds=len(rounds.cand),
        input_sets=len(rounds.cand),
        calls_per_round=rounds.calls,
        l2_flush_bytes=flush_bytes(device.l2_bytes) if device and device.l2_bytes else 0,
        floor_ms=floor,
        unexplained_us=unexplained,
        prepare_us=prepare,
        charged_us=charged,
        clocks_before=before,
        clocks_after=after,
        notes=timing_notes(before, after, rounds.cand_quiet_us, rounds.ref_quiet_us, python)
        + (
            (
                f"charged {charged:.0f} us per call: the controller's clock saw the candidate's "
                "worker take that much more than its samples and the allowance explain",
            )
            if charged
            else ()
        ),
    )
    return result, next((p for p in problems if p), "")
