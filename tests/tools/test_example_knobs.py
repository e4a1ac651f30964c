"""The examples' hand-written kernels expose knobs (`#ifndef NAME`) that their launch follows:
at the defaults they are the kernels they were, and each knob at either end of the values tune
tries builds (NVRTC, on the CPU) with a launch the GPU takes."""

from __future__ import annotations

import pytest

from kernelwright.tools import tune
from kernelwright.tools.compile import compile_in_sandbox
from kernelwright.tools.knobs import knobs
from kernelwright.tools.spec import CudaCandidate, CudaTask
from kernelwright.tools.task import load_candidate, load_task
from tests.conftest import EXAMPLES

KNOBS = {
    "gelu": ["BLOCK", "ITEMS"],
    "rowsum": ["WARPS"],
    "softmax": ["SM_THREADS"],
    "matmul": ["TX", "TY", "RM", "RN", "TK"],
    "stencil": ["ROWS_PER_THREAD", "BX", "BY"],
    "transpose": ["TILE", "BLOCK_ROWS"],
}
# the launch each faster.toml gave before its knobs, at the bench size: the defaults keep it
LAUNCH = {
    "gelu": ((16384,), (256,), 0),
    "rowsum": ((1024,), (256,), 0),
    "softmax": ((4096,), (256,), 0),
    "matmul": ((32, 32), (16, 16), 0),
    "stencil": ((128, 64), (32, 8), 0),
    "transpose": ((256, 256), (32, 8), 0),
}


def _faster(name: str) -> tuple[CudaTask, CudaCandidate]:
    task = load_task(EXAMPLES / name)
    cand = load_candidate(task, EXAMPLES / name / "candidates" / "faster.cu")
    assert isinstance(task, CudaTask) and isinstance(cand, CudaCandidate)
    return task, cand


@pytest.mark.parametrize("name", sorted(KNOBS))
def test_the_defaults_are_the_kernel_as_it_was(name: str) -> None:
    task, cand = _faster(name)
    assert [k.name for k in knobs(cand.source)] == KNOBS[name]
    assert cand.bound_launch is not None
    assert cand.bound_launch.resolve(task.bench) == LAUNCH[name]


@pytest.mark.parametrize("name", sorted(KNOBS))
def test_each_knob_at_either_end_builds_and_launches(name: str, nvrtc: None) -> None:
    task, cand = _faster(name)
    space = tune.space(task, cand)
    for axis, dim in enumerate(space.dims):
        if dim.name not in KNOBS[name]:
            continue
        for end in (0, len(dim.values) - 1):
            point = (*space.origin[:axis], end, *space.origin[axis + 1 :])
            config = space.config(point)
            assert space.problem(point) == "", (name, config.describe())
            flags = config.options.flags("nvrtc")
            result, _ = compile_in_sandbox(cand.source, task.entry, "sm_90", "nvrtc", flags=flags)
            assert result.ok, (name, config.describe(), result.first_error)
