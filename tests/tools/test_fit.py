"""Whether a check fits, said in one line before any worker starts (pure: no GPU)."""

from __future__ import annotations

import random
import time
from typing import Any

import pytest

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


GIB = 1 << 30


def _sized(inputs: int, outputs: int, weights: int = 0) -> dict[str, int]:
    """A float32 problem's sizing (torch_roles.sized): float64 doubles every byte."""
    return {"in": inputs, "in64": 2 * inputs, "out": outputs, "out64": 2 * outputs,
            "w": weights, "w64": 2 * weights}  # fmt: skip


def test_kernelbench_gelu_at_todays_sizes_fits_an_h100_and_not_a_24_gb_gpu() -> None:
    """KernelBench's GELU (1/26) at today's sizes: a 6 GiB input, a 6 GiB output. While a
    run of the candidate's is compared, the reference keeps its output (6 GiB), the candidate
    its input and output (12) and two runs' copies are handed over (12): 30 GiB and the
    margin, which an 80 GB H100 has free and a 24 GB GPU has not, said in one line."""
    bench = {"batch_size": 4096, "dim": 393216}
    small = {"batch_size": 2048, "dim": 393216}
    need = fit.kernelbench_needs(
        [_sized(3 * GIB, 3 * GIB), _sized(6 * GIB, 6 * GIB)], [small, bench], 100 << 20
    )
    assert need is not None and need.at == "batch_size=4096, dim=393216"
    assert 30 * GIB < need.gpu_bytes < 32 * GIB
    assert fit.measured_problem(need, 78 * GIB, True, 64 * GIB) == ""
    line = fit.measured_problem(need, 22 * GIB, True, 64 * GIB)
    assert line.startswith("does not fit: checking at batch_size=4096, dim=393216 needs about")
    assert "GiB of GPU memory" in line and "22.0 GiB free" in line and "\n" not in line
    # without memory to hand over, the float64 outputs cross the host to the controller
    off = fit.measured_problem(need, 78 * GIB, False, 8 * GIB)
    assert off.startswith("does not fit: without memory to hand over") and "8.0 GiB" in off
    assert fit.measured_problem(need, 78 * GIB, False, 64 * GIB) == ""


def test_kernelbench_trials_not_sized_leave_the_check_to_learn_as_it_runs() -> None:
    """A problem whose code cannot run on the meta device (None), or a sizing that is not
    counts of bytes, is not judged before the check: None, not a guess."""
    assert fit.kernelbench_needs([None, None], [{}, {}], 1) is None
    assert fit.kernelbench_needs([{"in": -1}, "x"], [{}, {}], 1) is None
    bad = {**_sized(GIB, GIB), "out": 1.5}
    assert fit.kernelbench_needs([bad], [{}], 1) is None
    # a sized trial among unsized ones still counts, with its own sizes named
    need = fit.kernelbench_needs([None, _sized(GIB, 2 * GIB, GIB)], [{}, {"n": 3}], 0)
    assert need is not None and need.at == "n=3"
    # the larger of both forwards at once (4 + 4) and a comparison: the kept outputs (2), the
    # candidate's cache (4) and two runs' copies (4)
    assert need.gpu_bytes == (2 + 4 + 4) * GIB + fit.MARGIN_BYTES
    assert fit.MEASURED["kernelbench"] is fit.kernelbench_needs


class _SizingBox:
    def __init__(self, header: dict[str, object]) -> None:
        self.header = header

    def receive(self, timeout_s: float, phase: str, expect: object = None) -> object:
        assert phase == "sizing the problem's tensors"
        return self.header, []


def test_the_controller_judges_a_kernelbench_checks_fit_from_its_references_sizing() -> None:
    """The reference's "sized" message, read before its first trial: a check that cannot fit
    ends with the one line, and the estimate and the free memory go in the report's gpu_bytes;
    a message that is not a sizing is the reference's failure."""
    import pytest

    from kernelwright.tools.sandbox import WorkerFailure
    from kernelwright.tools.verify import Verifier

    trials = [plan.Trial(sizes={"batch_size": 4096}, seed=1, poisons=(1,))]
    verifier = Verifier()
    header = {"type": "sized", "trials": [_sized(6 * GIB, 6 * GIB)], "gpu_free_bytes": 20 * GIB}
    sizing: dict[str, int] = {}
    line = verifier._sized(_SizingBox(header), fit.kernelbench_needs, trials, True, sizing)  # type: ignore[arg-type]
    assert line.startswith("does not fit: checking at batch_size=4096 needs about 31.")
    assert sizing["gpu_free_at_start_bytes"] == 20 * GIB
    assert 30 * GIB < sizing["gpu_needed_bytes"] < 32 * GIB
    roomy = {**header, "gpu_free_bytes": 70 * GIB}
    assert verifier._sized(_SizingBox(roomy), fit.kernelbench_needs, trials, True, {}) == ""  # type: ignore[arg-type]
    unknown = {**header, "trials": [None]}
    assert verifier._sized(_SizingBox(unknown), fit.kernelbench_needs, trials, True, {}) == ""  # type: ignore[arg-type]
    with pytest.raises(WorkerFailure, match="no sizes"):
        verifier._sized(_SizingBox({"type": "expected"}), fit.kernelbench_needs, trials, True, {})  # type: ignore[arg-type]


GIB = 1 << 30


def test_memory_that_ending_processes_hold_is_waited_for_before_a_check_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A KernelBench check that started right after its problem's baselines (their workers
    killed, their memory not yet back) found 38.3 of 79 GiB free and was refused; NVML, read
    by the controller, then says what came back."""
    from kernelwright.tools import nvml, verify
    from kernelwright.tools.sandbox import Expect

    reads = iter([20 * GIB, 30 * GIB, 50 * GIB])
    monkeypatch.setattr(nvml, "free_bytes", lambda pci=None: next(reads))
    monkeypatch.setattr(verify.time, "sleep", lambda s: None)
    assert verify.released(40 * GIB, None) == 50 * GIB  # read until there was room

    class Box:
        def __init__(self, free: int) -> None:
            self.free = free

        def receive(self, timeout_s: float, phase: str, expect: Expect) -> tuple[Any, list[Any]]:
            return {"type": "sized", "trials": [], "gpu_free_bytes": self.free,
                    "gpu_total_bytes": 79 * GIB}, []  # fmt: skip

    need = fit.Needs(gpu_bytes=39 * GIB, worker_host_bytes=0, controller_bytes=0, at="n=121")
    verifier = verify.Verifier(verify.VerifyOptions(pin_cpus=False))
    try:
        asked: list[int] = []

        def freed(n: int, pci: str | None) -> int:
            asked.append(n)
            return 60 * GIB

        monkeypatch.setattr(verify, "released", freed)
        sizing: dict[str, int] = {}
        sizer = lambda *a: need  # noqa: E731
        assert verifier._sized(Box(38 * GIB), sizer, [], True, sizing) == ""  # type: ignore[arg-type]
        assert asked == [39 * GIB] and sizing["gpu_free_at_start_bytes"] == 60 * GIB
        # never freed: refused, with what was free at best
        monkeypatch.setattr(verify, "released", lambda n, pci: 0)
        why = verifier._sized(Box(38 * GIB), sizer, [], True, {})  # type: ignore[arg-type]
        assert why.startswith("does not fit:") and "38.0 GiB free" in why
        # more than the whole GPU: nothing to wait for
        asked.clear()
        monkeypatch.setattr(verify, "released", freed)
        big = fit.Needs(gpu_bytes=90 * GIB, worker_host_bytes=0, controller_bytes=0, at="n=9")
        why = verifier._sized(Box(78 * GIB), lambda *a: big, [], True, {})  # type: ignore[arg-type]
        assert why.startswith("does not fit:") and asked == []
    finally:
        verifier.close()


def test_waiting_for_memory_ends_at_its_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    from kernelwright.tools import nvml, verify

    monkeypatch.setattr(nvml, "free_bytes", lambda pci=None: 10 * GIB)
    t0 = time.monotonic()
    assert verify.released(40 * GIB, None, wait_s=0.3) == 10 * GIB
    assert 0.3 <= time.monotonic() - t0 < 2.0
