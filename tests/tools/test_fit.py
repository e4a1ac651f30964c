"""Whether a check fits, said in one line before any worker starts (pure: no GPU)."""

from __future__ import annotations

import random

from kernelwright.tools import fit, plan
from kernelwright.tools.spec import CudaTask
from kernelwright.tools.task import load_task
from tests.conftest import EXAMPLES

H100 = 80 << 30


def _needs(task: CudaTask) -> fit.Needs:
    trials, post = plan.plan_trials(task, random.Random(1), 5)
    return fit.needs(task, [t.sizes for t in [*trials, post]], 100 << 20)


def test_the_examples_fit_an_80_gb_gpu_and_a_16_gib_worker() -> None:
    for name in ("gelu", "rowsum", "softmax", "matmul", "stencil", "transpose"):
        task = load_task(EXAMPLES / name)
        assert isinstance(task, CudaTask)
        need = _needs(task)
        assert 0 < need.gpu_bytes < H100 // 4, name
        assert fit.problem(need, H100, 16 << 30, 64 << 30) == "", name


def test_a_task_too_big_for_the_gpu_says_so_in_one_line() -> None:
    task = load_task(EXAMPLES / "gelu")
    assert isinstance(task, CudaTask)
    huge = task.model_copy(update={"bench": {"N": 4 << 30}})  # 16 GiB a float32 array
    need = _needs(huge)
    # inputs, their float64 copies, float64 outputs twice, both workers: well over 80 GB
    assert need.gpu_bytes > H100 and "N=" in need.at
    why = fit.problem(need, H100, 1 << 40, 1 << 40)
    assert why.startswith("does not fit:") and "GiB of GPU memory" in why
    assert "\n" not in why and "this GPU has 80.0 GiB" in why


def test_a_worker_over_its_host_limit_and_a_controller_over_the_machine() -> None:
    task = load_task(EXAMPLES / "gelu")
    assert isinstance(task, CudaTask)
    big = task.model_copy(update={"bench": {"N": 1 << 30}})  # 4 GiB a float32 array
    need = _needs(big)
    assert "host memory" in fit.problem(need, 1 << 50, 2 << 30, 1 << 50)
    assert "kernelwright's own process" in fit.problem(need, 1 << 50, 1 << 50, 1 << 30)
    assert fit.problem(need, 1 << 50, 1 << 50, None) == ""  # no /proc/meminfo: not judged


def test_a_check_that_cannot_fit_ends_before_any_worker_starts() -> None:
    import time

    from kernelwright.tools.task import reference_candidate
    from kernelwright.tools.verify import Verifier, VerifyOptions

    task = load_task(EXAMPLES / "gelu")
    assert isinstance(task, CudaTask)
    big = task.model_copy(update={"bench": {"N": 1 << 30}})
    start = time.perf_counter()
    with Verifier(VerifyOptions(host_memory_bytes=2 << 30)) as verifier:
        report = verifier.check(big, reference_candidate(big))
    assert report.verdict == "error" and report.reason.startswith("does not fit:")
    assert "worker_host_memory_gib" in report.reason
    assert time.perf_counter() - start < 5  # no worker was started


def test_kernelbench_timing_processes_follow_the_hosts_free_memory() -> None:
    """Each process a side is a torch worker in the check and a spare for the next, on both
    sides: a desktop with little memory free gets fewer, never none."""
    gib = 1 << 30
    assert fit.timing_processes(3, 100 * gib) == 3
    assert fit.timing_processes(3, 20 * gib) == 2  # a 32 GB desktop's MemAvailable
    assert fit.timing_processes(3, 10 * gib) == 1
    assert fit.timing_processes(3, 1 * gib) == 1
    assert fit.timing_processes(1, 100 * gib) == 1
    assert fit.timing_processes(3, None) == 3  # not known: as asked
