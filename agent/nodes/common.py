"""Small pieces several nodes share: the candidate in flight as a checkable value, timing."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kernelwright.agent.rundir import RunDir
from kernelwright.agent.state import LoopState
from kernelwright.tools.kernelbench import KernelBenchCandidate
from kernelwright.tools.results import CompileResult, ProfileResult
from kernelwright.tools.spec import CudaCandidate, CudaTask, LaunchSpec, parse_launch
from kernelwright.tools.task import Candidate, Task

KEEP_MARGIN = 1.005  # a candidate replaces the best only if faster by more than this
GAIN = 1.02  # a gain below 2% counts toward the plateau


def beats(speedup: float, best: float) -> bool:
    """Whether a correct candidate at `speedup` replaces the run's best (at `best`)."""
    return speedup > best * KEEP_MARGIN


def as_candidate(
    task: CudaTask, source: str, launch: dict[str, Any] | None, name: str = "candidate.cu"
) -> CudaCandidate:
    """A proposal as a candidate the verifier takes; a bad launch raises TaskError."""
    spec: LaunchSpec | None = None
    if launch:
        spec = parse_launch(Path(name), launch, set(task.bench))
        for sizes in (task.bench, *task.checks):
            spec.resolve(sizes)
    return CudaCandidate(path=name, source=source, launch=spec)


def candidate_for(
    task: Task, run: RunDir, source: str, launch: dict[str, Any] | None, name: str
) -> Candidate:
    """A proposal as the verifier takes it. A KernelBench candidate is a file its worker
    imports, so its source is written into the run directory first (as `name`.py)."""
    if isinstance(task, CudaTask):
        return as_candidate(task, source, launch, f"{name}.cu")
    return KernelBenchCandidate(path=str(run.write_candidate(name, source)), source=source)


def best_name(task: Task) -> str:
    """The best kernel's file name in the run directory."""
    return "best.cu" if isinstance(task, CudaTask) else "best.py"


def original_best(task: Task) -> str:
    """What the best file holds before a candidate wins: the original kernel; for a KernelBench
    problem, the problem with ModelNew naming its Model, so the file checks as a candidate."""
    if isinstance(task, CudaTask):
        return task.source
    return (
        task.source.rstrip()
        + "\n\n\n# kernelwright: no candidate has beaten the original yet\nModelNew = Model\n"
    )


def profile_view(
    profile: ProfileResult | None, compiled: CompileResult | None
) -> dict[str, Any] | None:
    """What the prompts show of a kernel's profile and resource report; None if neither."""
    view: dict[str, Any] = {}
    if profile is not None and profile.available:
        view.update(
            bottleneck=profile.bottleneck,
            duration_ms=profile.duration_ms,
            sm_pct=profile.sm_pct,
            dram_pct=profile.dram_pct,
            achieved_occupancy_pct=profile.achieved_occupancy_pct,
            theoretical_occupancy_pct=profile.theoretical_occupancy_pct,
            registers=profile.registers_per_thread,
        )
    if compiled is not None and compiled.ok:
        view.setdefault("registers", compiled.registers)
        view.update(
            shared_mem_bytes=compiled.shared_mem_bytes,
            spill_stores_bytes=compiled.spill_stores_bytes,
            spill_loads_bytes=compiled.spill_loads_bytes,
        )
    return view or None


@contextmanager
def stopwatch() -> Iterator[dict[str, float]]:
    """Yields a dict whose "s" holds the seconds the block took, once it ends."""
    box = {"s": 0.0}
    start = time.perf_counter()
    try:
        yield box
    finally:
        box["s"] = time.perf_counter() - start


def should_stop(state: LoopState) -> str:
    """Why the run ends now, or "" to go on (pure)."""
    if state.get("stop_reason"):
        return state["stop_reason"]
    attempts = state.get("attempts", [])
    if len(attempts) >= state["max_candidates"]:
        return f"budget: {len(attempts)} candidates tried"
    if state.get("elapsed_s", 0.0) >= state["max_seconds"]:
        return f"budget: {state.get('elapsed_s', 0.0):.0f} s spent"
    if state.get("rounds_without_gain", 0) >= state["plateau_rounds"]:
        return f"plateau: {state['rounds_without_gain']} candidates without a 2% gain"
    best_ms, floor_ms = state.get("best_ms"), state.get("floor_ms")
    if best_ms and floor_ms and best_ms <= floor_ms / 0.9:
        return f"near the roofline: {best_ms:.4f} ms against a floor of {floor_ms:.4f} ms"
    return ""
