"""The timing's verdict, from both workers' rounds and the controller's own clock (pure, but for
reading the task's roofline expressions): the speedup, and why it cannot be believed, if so.

A KernelBench candidate is Python in the process that times it, so its samples are believed
only as far as the controller's clock bears them out. Per round, the candidate's worker may
keep the controller waiting longer than its samples explain, beyond what the reference's worker
took for the same harness work: that is time spent where its samples do not look (work left
outside its timed window, or samples forged). Each call is a message on the controller's
clock: its input set is made (the problem's own Python), the call timed, and its outputs
sketched (schedule.py). Both workers are timed on the same CPU in turn, so honest ones differ
only by noise: a few microseconds a call (ALLOW_CALL_US). What exceeds it is charged to the
candidate's time; more than its whole measured time, and the timing is refused as
implausible. A CUDA task's candidate has no host code: its worker's samples are the harness's
own, and the figure is reported, not charged.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .results import DeviceInfo, TimingResult
from .schedule import Rounds
from .task import Task
from .timing import (
    BUSY_US,
    five_percentiles,
    flush_bytes,
    host_clock_problem,
    roofline_floor_ms,
    speedup,
    summarize,
    unexplained_per_round_us,
    unexplained_us,
)

# What two honest workers' calls may differ by on the controller's clock (making the input set,
# the call, its outputs' sketches, two messages). Measured on an H100 VM, both workers timed on
# one CPU: honest candidates' calls took -32 to +5 us longer than the reference's beyond their
# samples (docs/benchmarks.md).
ALLOW_CALL_US = 8.0


def charge_us(unexplained: float, python: bool) -> float:
    """What a candidate is charged per call beyond its own samples (pure): its calls'
    unexplained time beyond the allowance: work done outside the timed window (on the inputs
    before the call, or after it), or samples forged."""
    return max(0.0, unexplained - ALLOW_CALL_US) if python else 0.0


CLOCK_SLACK = 0.02  # a speedup past the clock's bound by more than this is held to it
# With at least this many batches, the clock's sum leaves out the one it saw slowest.
CLOCK_TRIM_BATCHES = 8


def clock_bound(walls: Sequence[tuple[float, float, float, float, int]]) -> float | None:
    """The most speedup the controller's clock bears out over every batch together (pure):
    the reference's mean call by its samples, against the candidate's by the controller's
    clock (its batches' wall time less the reference's harness time on the same calls, less
    the allowance). The speedup is a median of rounds and the charge a median of batches,
    both blind to a forger lying in fewer than half its batches, and a forger lying in a
    random 40% of them was read 1.67x on an H100 (the suite's kb_forge_some_batches): the
    clock's sum over every batch counts each lie, wherever it falls. None where there is
    nothing to go on.

    From CLOCK_TRIM_BATCHES batches on, the one batch whose calls the clock saw slowest
    against the reference's samples is left out: one hiccup of the host held an honest
    1.009x to 0.919x (KernelBench 1/87 on an H100, one batch of 32 running 2.2 ms long).
    Leaving it out lets no lie through: the sum is the controller's clock alone, which the
    candidate's samples never enter (nor choose the batch left out), and one batch's calls
    are a 1/n share of the sum, so the most a genuinely slow batch left out can lift the
    bound is that share."""
    # per batch: the candidate's time by the clock, the reference's by its samples, calls
    batches = [(cw - (rw - rs), rs, n) for cw, _, rw, rs, n in walls]
    if len(batches) >= CLOCK_TRIM_BATCHES:
        batches.remove(max(batches, key=lambda b: b[0] / max(b[1], 1e-9)))
    calls = sum(n for *_, n in batches)
    ref_ms = sum(rs for _, rs, _ in batches)
    cand_ms = sum(c for c, _, _ in batches)
    if calls <= 0 or ref_ms <= 0:
        return None
    per_call = cand_ms / calls - ALLOW_CALL_US / 1e3
    return ref_ms / calls / per_call if per_call > 0 else None


def unexplained_problem(charged: float, cand_median_ms: float, python: bool) -> str:
    if python and charged > cand_median_ms * 1e3:
        return (
            f"implausible: work escaped the timed region: the candidate's worker kept the "
            f"controller waiting {charged:.0f} us per call longer than its samples explain "
            f"(beyond the reference's harness and the {ALLOW_CALL_US:.0f} us two honest "
            f"workers may differ by), more than its own {cand_median_ms * 1e3:.0f} us"
        )
    return ""


def by_process(
    process: Sequence[int],
    ref_ms: Sequence[float],
    cand_ms: Sequence[float],
    walls: Sequence[tuple[float, float, float, float, int]],
    processes: int,
) -> list[tuple[float, float]]:
    """Per pair of workers (several processes a side), the median ratio of its rounds and its
    median unexplained time a call (pure; empty for one pair): where a check's figure came from
    when the processes disagree."""
    if processes <= 1 or len(process) != len(ref_ms):
        return []
    out = []
    for n in range(processes):
        idx = [i for i, p in enumerate(process) if p == n]
        if not idx:
            return []
        ratio, _ = speedup([ref_ms[i] for i in idx], [cand_ms[i] for i in idx])
        mine = [walls[i] for i in idx if i < len(walls)]
        out.append((ratio, unexplained_us(mine)))
    return out


def timing_notes(
    before: Any,
    after: Any,
    cand_quiet: Sequence[float],
    ref_quiet: Sequence[float],
    python: bool,
    device: DeviceInfo | None = None,
) -> tuple[str, ...]:
    notes = []
    if not python and device is not None and device.pageable_memory_access:
        notes.append(
            "this GPU's device code can reach pageable host memory (HMM): a kernel could read "
            "and write its own worker's host memory, where the timing's samples are taken, and "
            "a CUDA task's samples are not bounded by the controller's clock"
        )
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
    task: Task,
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
    python = task.host_code  # candidate code beside its own timing
    charged = charge_us(unexplained, python)
    problems.append(unexplained_problem(charged, summarize(cand_ms).median_ms, python))
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
    if device is not None:
        rbytes, rflops = task.roofline()
        floor = roofline_floor_ms(rbytes, rflops, device.peak_dram_gbps, device.peak_fp32_tflops)
    if floor is not None and cand.median_ms < 0.9 * floor:
        problems.append(
            f"implausible: {cand.median_ms:.4f} ms is below the roofline floor "
            f"{floor:.4f} ms for this much data"
        )
    ratio, ratio_iqr = speedup(ref_ms, cand_ms)
    bound = clock_bound(rounds.walls) if python else None
    held = bound is not None and ratio > bound * (1 + CLOCK_SLACK)
    if held and bound is not None:
        ratio = bound * (1 + CLOCK_SLACK)
    per_process = by_process(
        rounds.round_process(), ref_ms, cand_ms, rounds.walls, rounds.processes
    )
    result = TimingResult(
        reference=summarize(ref_ms),
        candidate=cand,
        speedup=ratio,
        speedup_iqr=ratio_iqr,
        rounds=len(rounds.cand),
        input_sets=len(rounds.cand),
        calls_per_round=rounds.calls,
        processes=rounds.processes,
        warmup_ms=rounds.warmup_ms,
        rounds_ms=rounds.wall_ms - rounds.warmup_ms,
        call_wall_ms=rounds.call_wall_ms or None,
        process_speedups=tuple(p[0] for p in per_process),
        process_unexplained_us=tuple(p[1] for p in per_process),
        l2_flush_bytes=flush_bytes(device.l2_bytes) if device and device.l2_bytes else 0,
        floor_ms=floor,
        unexplained_us=unexplained,
        unexplained_spread_us=five_percentiles(unexplained_per_round_us(rounds.walls)),
        charged_us=charged,
        clocks_before=before,
        clocks_after=after,
        notes=timing_notes(before, after, rounds.cand_quiet_us, rounds.ref_quiet_us, python, device)
        + (
            (
                f"charged {charged:.0f} us per call: the controller's clock saw the candidate's "
                "worker take that much more than its samples and the allowance explain",
            )
            if charged
            else ()
        )
        + (
            (
                f"speedup held to {ratio:.3f}x: over every batch together the controller's clock "
                "bears out no more (its rounds' median read more)",
            )
            if held
            else ()
        ),
    )
    return result, next((p for p in problems if p), "")
