"""What every kind whose candidates are CUDA kernels shares (a CUDA task, a C++ task): a model's
proposal as a candidate the verifier takes, and what the prompts show of a kernel's profile."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernelwright.tools.cpp import CppTask
from kernelwright.tools.results import CompileResult, ProfileResult
from kernelwright.tools.spec import CudaCandidate, CudaTask, LaunchSpec, candidate_launch


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


def as_candidate(
    task: CudaTask | CppTask, source: str, launch: dict[str, Any] | None, name: str = "candidate.cu"
) -> CudaCandidate:
    """A proposal as a candidate the verifier takes; a bad launch raises TaskError."""
    spec: LaunchSpec | None = None
    if launch:  # over the task's sizes and the kernel's knobs (#ifndef NAME), at every size
        spec = candidate_launch(Path(name), launch, task, source)
    return CudaCandidate(path=name, source=source, launch=spec)
