"""`kernelwright tune` on a real GPU: block shapes derived from a naive kernel's launch (1-D and
2-D), the examples' knobs at either end of what tune tries, launch bounds given to ptxas (1-D and
2-D blocks), every configuration through the full verifier, and the tune after `optimize`
leaving a best.cu + best.toml that checks correct."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernelwright.agent.llm import ScriptedLLM
from kernelwright.agent.optimize import optimize
from kernelwright.agent.settings import Settings
from kernelwright.agent.tune import tune
from kernelwright.tools import nvml
from kernelwright.tools import tune as space_of
from kernelwright.tools.backend import LocalGpu
from kernelwright.tools.spec import CudaCandidate, CudaTask
from kernelwright.tools.task import load_candidate, load_task, reference_candidate
from kernelwright.tools.verify import Verifier
from tests.conftest import EXAMPLES
from tests.gpu.test_loop_gpu import _reply

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("name", ["gelu", "matmul"])
def test_a_naive_kernels_block_shapes_are_searched_and_each_checked(name: str) -> None:
    task = load_task(EXAMPLES / name)
    cand = reference_candidate(task)
    assert isinstance(task, CudaTask) and isinstance(cand, CudaCandidate)
    gpu = LocalGpu()
    try:
        found = tune(task, cand, gpu, arch=nvml.device_info().arch, backend="nvrtc", budget=8)
    finally:
        gpu.close()
    shapes = [t for t in found.tried if t.config.block]
    assert shapes, [t.config.describe() for t in found.tried]
    # a naive kernel indexes by blockDim: every shape is correct, and timed
    assert all(t.report.ok and t.speedup for t in shapes), [t.report.reason for t in shapes]
    assert found.gain >= 1.0 and found.best_report.ok
    print(f"{name}: {len(found.tried)} checked, best {found.best_config.describe()}, "
          f"{found.gain:.3f}x in {found.seconds:.0f} s")  # fmt: skip


@pytest.mark.parametrize("name", ["gelu", "rowsum", "softmax", "matmul", "stencil", "transpose"])
def test_each_knob_at_either_end_is_correct(name: str) -> None:
    task = load_task(EXAMPLES / name)
    cand = load_candidate(task, EXAMPLES / name / "candidates" / "faster.cu")
    assert isinstance(task, CudaTask) and isinstance(cand, CudaCandidate)
    space = space_of.space(task, cand)
    with Verifier() as verifier:
        for axis, dim in enumerate(space.dims):
            if dim.name in ("maxrregcount", "ptxas"):
                continue
            for end in (0, len(dim.values) - 1):
                point = (*space.origin[:axis], end, *space.origin[axis + 1 :])
                config = space.config(point)
                report = verifier.check(task, config.apply(cand))
                assert report.ok, (name, config.describe(), report.verdict, report.reason)


@pytest.mark.parametrize("name", ["matmul", "gelu"])
def test_launch_bounds_are_tuned_and_every_kept_configuration_is_correct(name: str) -> None:
    """matmul's faster kernel launches a 2-D block (TX x TY) under a one-number --maxntid;
    gelu's naive kernel, the derived 1-D block shapes. Each bound is checked at the kernel's
    own block, then a tune starts with them (as remembered winners would be)."""
    task = load_task(EXAMPLES / name)
    faster = EXAMPLES / name / "candidates" / "faster.cu"
    cand = load_candidate(task, faster) if name == "matmul" else reference_candidate(task)
    assert isinstance(task, CudaTask) and isinstance(cand, CudaCandidate)
    space = space_of.space(task, cand)
    with Verifier() as verifier:
        for blocks in space_of.MIN_BLOCKS_PER_SM:
            point = space.point({"launch_bounds": blocks})
            assert point is not None
            config = space.config(point)
            assert config.options.min_blocks_per_sm == blocks
            report = verifier.check(task, config.apply(cand))
            assert report.ok, (name, config.describe(), report.verdict, report.reason)
    gpu = LocalGpu()
    first = [{"launch_bounds": b} for b in space_of.MIN_BLOCKS_PER_SM]
    try:
        arch = nvml.device_info().arch
        found = tune(task, cand, gpu, arch=arch, backend="nvrtc", budget=12, first=first)
    finally:
        gpu.close()
    bounded = [t for t in found.tried if t.config.options.max_threads_per_block]
    assert bounded or any(c.options.max_threads_per_block for c, _ in found.dropped)
    assert all(t.report.ok for t in bounded), [
        (t.config.describe(), t.report.reason) for t in bounded
    ]
    assert all(t.report.ok for t in found.tried if t.kept)
    with Verifier() as verifier:  # the winner, checked again on its own
        assert verifier.check(task, found.best).ok
    print(f"{name}: {len(bounded)} bounded checked, best {found.best_config.describe()}, "
          f"{found.gain:.3f}x in {found.seconds:.0f} s")  # fmt: skip


def test_optimize_ends_with_the_tuned_kernel_on_disk(tmp_path: Path) -> None:
    task = EXAMPLES / "transpose"
    model = ScriptedLLM(
        [_reply(task / "candidates" / "faster.cu", ["shared-memory tiling"]), "It is faster."]
    )
    settings = Settings(data_dir=tmp_path / "data", cache_dir=tmp_path / "cache")
    settings = settings.model_copy(
        update={"tune": settings.tune.model_copy(update={"budget": 6, "enabled": True})}
    )
    out, run = optimize(task, settings, model=model, budget=1, plateau=5)
    tuned = json.loads((run.path / "tune.json").read_text())
    assert out["tune"] == tuned and "error" not in tuned, tuned
    assert tuned["tried"] and all(t["verdict"] == "correct" for t in tuned["tried"]), tuned
    loaded = load_task(task)
    best = load_candidate(loaded, run.path / "best.cu")  # with best.toml: the tuned kernel
    with Verifier() as verifier:
        assert verifier.check(loaded, best).ok
    assert "## Tune" in (run.path / "summary.md").read_text()
    print(f"transpose: tune {tuned['gain']:.3f}x with {tuned['best']} in {tuned['seconds']:.0f} s")
