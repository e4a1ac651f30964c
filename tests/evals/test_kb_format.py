"""KernelBench's own files as `eval kernelbench` writes them (evals/kb_format.py, kb_report.py),
read back by a copy of their schema (KernelExecResult's fields as
scripts/eval_from_generations.py's add_to_eval_results_file writes them; get_timing_stats' keys
in the baseline files), then scored the way scripts/benchmark_eval_analysis.py reads them:
sample 0 per problem, the level's missing problems patched in as failures, only the problems
the baseline file names, baseline mean over runtime. Its scores must be ours."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from kernelwright.evals import kb_format
from kernelwright.evals.kb_baselines import BaselineTimes, TimingStats, differs
from kernelwright.evals.kb_problems import open_clone
from kernelwright.evals.kb_report import summary, write_kernelbench_files
from kernelwright.evals.kb_run import KbState, ProblemResult
from kernelwright.evals.kb_score import fast_p, geomean_correct, speedups_from_times
from tests.conftest import FIXTURES

FAKE = FIXTURES / "kb_fake"
GPU = "NVIDIA H100 80GB HBM3"


class KernelExecResult(BaseModel):
    """An eval_results.json sample, as KernelBench writes one."""

    model_config = ConfigDict(extra="forbid", strict=True)

    sample_id: int
    compiled: bool
    correctness: bool
    metadata: dict[str, Any]
    runtime: float
    runtime_stats: dict[str, Any]


class TimingStatsKB(BaseModel):
    """get_timing_stats' dict: a runtime_stats, or a baseline file's entry."""

    model_config = ConfigDict(extra="forbid", strict=True)

    mean: float
    std: float
    min: float
    max: float
    num_trials: int
    hardware: str | None = None
    device: str | None = None


def ms(value: float) -> TimingStats:
    return TimingStats(
        mean_ms=value, std_ms=value / 50, min_ms=value * 0.9, max_ms=value * 1.2,
        num_trials=100, median_ms=value, iqr_ms=value / 40,
    )  # fmt: skip


def problem(level: int, pid: int, name: str, **kw: Any) -> ProblemResult:
    return ProblemResult(
        level=level, id=pid, name=name, path=str(FAKE / "KernelBench" / f"level{level}" / name),
        slug=f"L{level}-{name[:-3]}", **kw,
    )  # fmt: skip


def compile_at(factor: float) -> BaselineTimes:
    return BaselineTimes(eager=ms(1.0), compile=ms(factor))


@pytest.fixture
def state() -> KbState:
    """Level 1: a 2.0x kernel, a correct one at 0.8x, a wrong one, a skipped problem; level 2:
    a failure before anything was timed (level 2's problem 2 was not selected)."""
    problems = [
        problem(1, 1, "1_Square_matrix_multiplication_.py", status="done", verdict="correct",
                compiled=True, correct=True, speedup_eager=2.0, speedup_eager_iqr=0.02,
                speedup_compile=1.2, eager=ms(0.4), kernel=ms(0.2), baselines=compile_at(0.6)),
        problem(1, 2, "2_ReLU.py", status="done", verdict="correct", compiled=True, correct=True,
                speedup_eager=0.8, eager=ms(0.1), kernel=ms(0.125), baselines=compile_at(1.1)),
        problem(1, 3, "3_Softmax.py", status="done", verdict="wrong", compiled=True,
                reason="output 0 wrong at 3 elements", eager=ms(0.3),
                baselines=compile_at(0.9)),
        problem(1, 4, "4_Huge_sum.py", status="skipped", reason="needs 256.7 GiB"),
        problem(2, 1, "1_Gemm_ReLU.py", status="failed", verdict="",
                reason="ReplayMiss: no recorded check"),
    ]  # fmt: skip
    return KbState(
        kb=str(FAKE), levels=[1, 2], subset="all", device=GPU, problems=problems,
        baselines=["eager", "compile"],
    )  # fmt: skip


def read_back(path: Path) -> dict[str, list[KernelExecResult]]:
    raw = json.loads(path.read_text())
    return {k: [KernelExecResult.model_validate(e) for e in v] for k, v in raw.items()}


def analysis(out: Path, level: int, baseline_file: str) -> list[float | None]:
    """The per-problem speedups KernelBench's analysis script forms from these files."""
    eval_results = read_back(
        out / "kernelbench" / "runs" / kb_format.run_name(level) / "eval_results.json"
    )
    timing = out / "kernelbench" / "results" / "timing" / kb_format.hardware_name(GPU)
    raw = json.loads((timing / baseline_file).read_text())
    baselines = {n: TimingStatsKB.model_validate(v) for n, v in raw[f"level{level}"].items()}
    samples = {k: [r for r in v if r.sample_id == 0] for k, v in eval_results.items()}
    assert all(len(v) == 1 for v in samples.values())
    entries = {k: v[0] for k, v in samples.items()}
    dataset = open_clone(FAKE).problems(level)
    for p in dataset:  # patched in: a problem with no result is a failure
        entries.setdefault(
            str(p.id),
            KernelExecResult(sample_id=0, compiled=False, correctness=False, metadata={},
                             runtime=-1.0, runtime_stats={}),
        )  # fmt: skip
    correct, base, actual = [], [], []
    for p in sorted(dataset, key=lambda p: p.id):
        if p.name not in baselines:  # not in the baseline file: left out
            continue
        correct.append(entries[str(p.id)].correctness)
        base.append(baselines[p.name].mean)
        actual.append(entries[str(p.id)].runtime)
    return speedups_from_times(correct, base, actual)


def test_the_files_read_back_by_kernelbench_s_schema(state: KbState, tmp_path: Path) -> None:
    files = write_kernelbench_files(state, tmp_path)
    level1 = read_back(Path(files["eval_results"][0]))
    assert list(level1) == ["1", "2", "3"]  # the skipped one is not there
    first = level1["1"][0]
    assert first.compiled and first.correctness and first.runtime == 0.2
    stats = TimingStatsKB.model_validate(first.runtime_stats)
    assert (stats.mean, stats.num_trials, stats.hardware) == (0.2, 100, GPU)
    assert first.metadata["hardware"] == GPU
    assert first.metadata["kernelwright"]["speedup_eager"] == 2.0
    wrong = level1["3"][0]
    assert (wrong.compiled, wrong.correctness, wrong.runtime, wrong.runtime_stats) == (
        True, False, -1.0, {})  # fmt: skip
    assert wrong.metadata["correctness_issue"] == "output 0 wrong at 3 elements"
    failed = read_back(Path(files["eval_results"][1]))["1"][0]
    assert not failed.compiled and not failed.correctness
    eager = json.loads(Path(files["baselines"]["eager"]).read_text())
    assert set(eager) == {"level1", "level2"}
    for entries in eager.values():
        for entry in entries.values():
            TimingStatsKB.model_validate(entry)
    assert eager["level2"]["1_Gemm_ReLU.py"]["mean"] == -1.0  # not measured: still counted
    compiled = json.loads(Path(files["baselines"]["compile"]).read_text())
    assert set(compiled) == {"level1"}  # level 2's failure has no torch.compile time
    assert compiled["level1"]["1_Square_matrix_multiplication_.py"]["mean"] == pytest.approx(0.24)
    assert files["hardware"] == "NVIDIA_H100_80GB_HBM3"
    assert any("baseline=baseline_time_torch_compile_inductor_default" in c
               for c in files["analysis"])  # fmt: skip


def test_kernelbench_s_analysis_of_the_files_gives_our_scores(
    state: KbState, tmp_path: Path
) -> None:
    files = write_kernelbench_files(state, tmp_path)
    ours = summary(state, tmp_path, files)["scores"]
    for level in (1, 2):
        theirs = analysis(tmp_path, level, kb_format.EAGER_FILE)
        mine = ours["eager"][str(level)]
        assert len(theirs) == mine["problems"]  # the same denominator
        for p in (0.0, 1.0, 1.2):
            assert fast_p(theirs, p) == pytest.approx(mine["fast"][f"fast_{p:g}"])
        assert geomean_correct(theirs) == pytest.approx(mine["geomean_correct"])
    theirs = analysis(tmp_path, 1, kb_format.COMPILE_FILE)
    mine = ours["compile"]["1"]
    assert len(theirs) == mine["problems"] == 3
    assert fast_p(theirs, 1.0) == pytest.approx(mine["fast"]["fast_1"]) == pytest.approx(1 / 3)
    assert theirs[0] == pytest.approx(1.2)  # 0.4 x 0.6 over 0.2


def test_entries_and_names() -> None:
    entry = kb_format.eval_entry(
        compiled=False, correct=False, runtime_stats={"mean": 1.0}, verdict="compile_error",
        reason="no ModelNew", hardware="",
    )  # fmt: skip
    assert list(entry) == [
        "sample_id", "compiled", "correctness", "metadata", "runtime", "runtime_stats"
    ]  # fmt: skip
    assert entry["runtime"] == -1.0 and entry["runtime_stats"] == {}  # only a correct one's
    assert entry["metadata"] == {
        "compilation_error": "no ModelNew",
        "compilation_error_name": "compile_error",
    }
    assert kb_format.hardware_name("NVIDIA H100 80GB HBM3") == "NVIDIA_H100_80GB_HBM3"
    assert kb_format.hardware_name("  ") == "unknown_gpu"
    assert kb_format.kernel_file_name(2, 17) == "level_2_problem_17_sample_0_kernel.py"


def test_eval_results_keys_are_in_numeric_order(tmp_path: Path) -> None:
    path = tmp_path / "eval_results.json"
    entry = kb_format.eval_entry(
        compiled=True, correct=False, runtime_stats=None, verdict="wrong", reason="", hardware=""
    )
    kb_format.write_eval_results(path, {10: entry, 2: entry, 1: entry})
    assert list(json.loads(path.read_text())) == ["1", "2", "10"]


def test_five_percent_apart() -> None:
    assert not differs(2.0, 2.1)  # exactly 5%: not more
    assert differs(2.0, 2.11) and differs(2.0, 1.89)
    assert not differs(1.0, 0.96)
