"""Recording a backend's answers and replaying them: the loop's tests run on real reports."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelwright.tools.backend import RecordingGpu, ReplayGpu, ReplayMiss
from kernelwright.tools.results import CheckReport, KernelTiming, ProfileResult, TimingResult
from kernelwright.tools.spec import CudaCandidate, CudaTask, LaunchSpec
from kernelwright.tools.task import load_task
from tests.conftest import EXAMPLES


def _timing(speedup: float) -> TimingResult:
    k = KernelTiming(median_ms=1.0, iqr_ms=0.01, min_ms=0.9, max_ms=1.1, samples=50)
    return TimingResult(
        reference=k,
        candidate=k,
        speedup=speedup,
        speedup_iqr=0.01,
        rounds=50,
        input_sets=2,
        l2_flush_bytes=1 << 27,
    )


class FixedGpu:
    """Answers every check with the speedup stored for the candidate's path."""

    def __init__(self, speedups: dict[str, float]) -> None:
        self.speedups = speedups

    def check(self, task: object, candidate: CudaCandidate) -> CheckReport:
        return CheckReport(
            task="gelu",
            candidate=candidate.path,
            verdict="correct",
            reason="ok",
            timing=_timing(self.speedups[candidate.path]),
        )

    def profile(self, task: object, candidate: CudaCandidate) -> ProfileResult:
        return ProfileResult(available=True, bottleneck="memory-bound", duration_ms=0.1)

    def close(self) -> None:
        pass


def test_recorded_answers_replay_for_the_same_candidates_only(tmp_path: Path) -> None:
    task = load_task(EXAMPLES / "gelu")
    assert isinstance(task, CudaTask)
    a = CudaCandidate(path="a.cu", source=task.source)
    b = CudaCandidate(path="b.cu", source=task.source + "\n// b\n")
    b_launch = b.model_copy(
        update={"launch": LaunchSpec(block=("128",), grid=("ceil_div(N, 128)",))}
    )
    log = tmp_path / "gpu.jsonl"
    recorder = RecordingGpu(FixedGpu({"a.cu": 1.0, "b.cu": 1.7}), log)  # type: ignore[arg-type]
    recorder.check(task, a)
    recorder.check(task, b)
    recorder.profile(task, b)
    replay = ReplayGpu.from_file(log)
    assert replay.check(task, a).timing.speedup == 1.0  # type: ignore[union-attr]
    assert replay.check(task, b).timing.speedup == 1.7  # type: ignore[union-attr]
    assert replay.profile(task, b).bottleneck == "memory-bound"
    assert not replay.profile(task, a).available  # never profiled: said so, not invented
    with pytest.raises(ReplayMiss):
        replay.check(task, b_launch)  # same source, other launch: a different candidate
    assert [kind for kind, _ in replay.calls] == ["check", "check", "profile", "profile", "check"]
