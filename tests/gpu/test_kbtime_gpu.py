"""KernelBench's own timing, from a real clone of KernelBench, on the GPU: the live baselines
(eager and torch.compile, by its measure_ref_program_time) and a kernel re-timed by its
eval_kernel_against_ref, each in a sandboxed worker. Needs a clone: KERNELWRIGHT_TEST_KB names
it (the lent machine: .probe/kb.tar unpacked), else these skip; nothing of KernelBench is in
this repository."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kernelwright.evals.kb_baselines import LiveBaselines, LiveRetimer, differs
from kernelwright.tools.kernelbench import KernelBenchCandidate, load_kernelbench_task

pytestmark = pytest.mark.gpu

CLONE = Path(os.environ.get("KERNELWRIGHT_TEST_KB", "/nonexistent"))
PROBLEM = CLONE / "KernelBench" / "level1" / "88_MinGPTNewGelu.py"  # its harness: 6.6 s
needs_clone = pytest.mark.skipif(
    not (CLONE / "src" / "kernelbench" / "timing.py").is_file() or not PROBLEM.is_file(),
    reason="needs a KernelBench clone named by KERNELWRIGHT_TEST_KB",
)


@needs_clone
def test_the_clones_own_baselines_time_eager_and_compile() -> None:
    task = load_kernelbench_task(PROBLEM)
    times = LiveBaselines(CLONE / "src").time(task)
    assert times.eager is not None and times.eager.num_trials == 100, times
    assert times.compile is not None, times.compile_error
    assert times.eager.mean_ms > 0 and times.compile.mean_ms > 0
    assert times.peak_bytes is not None and times.peak_bytes > 0


@needs_clone
def test_the_problems_own_model_re_timed_by_kernelbench_reads_one() -> None:
    """The problem's Model as ModelNew, re-timed by KernelBench's eval and set against its
    eager baseline: about 1.00x (100 trials each, L2 thrashed before each)."""
    task = load_kernelbench_task(PROBLEM)
    # a subclass, so the problem's own super(Model, self) still holds
    own = KernelBenchCandidate(
        path="own.py", source=task.source + "\n\nclass ModelNew(Model):\n    pass\n"
    )
    retimed = LiveRetimer(CLONE / "src").retime(task, own)
    assert retimed.kernel.num_trials == 100 and retimed.eager.num_trials == 100
    assert not differs(1.0, retimed.speedup, 0.05), retimed
