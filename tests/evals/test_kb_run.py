"""`kernelwright eval kernelbench` on the CPU, over a stand-in KernelBench clone
(tests/fixtures/kb_fake): a replay of ModelNew files and the loop with scripted replies, the
verifier's reports recorded as a GPU would give them (ReplayGpu), the baselines and
KernelBench's protocol from recorded times; then interruptions and --resume. Nothing here
imports torch or runs a candidate."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from kernelwright.agent.doors.cli_eval import run_kernelbench_command
from kernelwright.agent.llm import Message, ScriptedLLM
from kernelwright.evals.kb_baselines import (
    BaselineTimes,
    RecordedBaselines,
    RecordedRetimer,
    Retimed,
    TimingStats,
)
from kernelwright.evals.kb_run import (
    STATE_FILE,
    KbState,
    does_not_fit,
    final_attempt,
    needs_memory,
)
from kernelwright.tools.backend import ReplayGpu
from kernelwright.tools.kernelbench import KernelBenchCandidate, KernelBenchTask
from kernelwright.tools.results import (
    Attempt,
    CheckReport,
    DeviceInfo,
    KernelTiming,
    TimingResult,
)
from kernelwright.tools.task import load_task
from tests.conftest import FIXTURES, HAS_GPU

FAKE = FIXTURES / "kb_fake"
LEVEL1 = FAKE / "KernelBench" / "level1"
LEVEL2 = FAKE / "KernelBench" / "level2"
H100 = DeviceInfo(
    name="NVIDIA H100 80GB HBM3",
    arch="sm_90",
    driver_version="580.159.04",
    memory_total_bytes=80 << 30,
)
OOM = (
    "the forward raised OutOfMemoryError: CUDA out of memory. Tried to allocate 256.00 GiB. "
    "GPU 0 has a total capacity of 79.19 GiB of which 78.50 GiB is free. Including non-PyTorch "
    "memory, this process has 0.69 GiB memory in use."
)


def model_new(init: str = "self", body: str = "return x * 1", doc: str = "") -> str:
    """A ModelNew's source (never run: the checks are recorded)."""
    return (
        f'import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n    """{doc}"""\n\n'
        f"    def __init__({init}):\n        super().__init__()\n\n"
        f"    def forward(self, *xs):\n        {body}\n"
    )


MATMUL = model_new(body="return torch.matmul(*xs)", doc="a tiled matmul")
SOFTMAX_WRONG = model_new(body="return xs[0]", doc="forgets to normalise")
HUGE = model_new(body="return xs[0].sum(0)", doc="the same sum")
GEMM_RELU = model_new("self, in_features, out_features", "return xs[0]", "fused gemm and relu")
GEMM_SCALE = model_new("self, in_features, out_features, scale", "return xs[0]", "scaled")


def task(path: Path) -> KernelBenchTask:
    t = load_task(path)
    assert isinstance(t, KernelBenchTask)
    return t


def report(
    t: KernelBenchTask,
    verdict: str,
    ref_ms: float = 0.4,
    speedup: float | None = None,
    reason: str = "ok",
) -> CheckReport:
    """A check as the GPU gave it: its candidate's time is exactly the reference's over the
    speedup, so KernelBench's ratio of times and our speedup agree."""
    timing = None
    if speedup is not None:
        ref = KernelTiming(
            median_ms=ref_ms, iqr_ms=0.004, min_ms=ref_ms, max_ms=ref_ms, samples=100
        )
        timing = TimingResult(
            reference=ref,
            candidate=ref.model_copy(update={"median_ms": ref_ms / speedup, "iqr_ms": 0.002}),
            speedup=speedup,
            speedup_iqr=0.03,
            rounds=100,
            input_sets=4,
            l2_flush_bytes=100 << 20,
        )
    return CheckReport(
        task=t.name,
        candidate="candidate.py",
        verdict=verdict,
        reason=reason,
        timing=timing,
        device=H100,
    )


def add(gpu: ReplayGpu, t: KernelBenchTask, source: str, rep: CheckReport) -> None:
    gpu.add(t, KernelBenchCandidate(path="candidate.py", source=source), rep)


def original(gpu: ReplayGpu, t: KernelBenchTask, ref_ms: float = 0.4) -> None:
    gpu.add(t, t.reference_candidate(), report(t, "correct", ref_ms, 1.0))


def stats(ms: float) -> TimingStats:
    return TimingStats(mean_ms=ms, std_ms=ms / 100, min_ms=ms, max_ms=ms * 1.1, num_trials=100)


def recorded_baselines(huge: BaselineTimes | None = None) -> RecordedBaselines:
    """torch.compile at half eager's time on the matmul (1.0x against it after a 2.0x kernel),
    at 0.8 of it elsewhere; the huge sum as given (by default: not timed)."""
    return RecordedBaselines(
        {
            "1_Square_matrix_multiplication_": BaselineTimes(eager=stats(2.0), compile=stats(1.0)),
            "3_Softmax": BaselineTimes(eager=stats(1.0), compile=stats(0.8)),
            "4_Huge_sum": huge or BaselineTimes(compile_error="out of memory"),
            "2_Gemm_Scale": BaselineTimes(eager=stats(1.0), compile=stats(0.8)),
        }
    )


@pytest.fixture(autouse=True)
def own_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs and memory in the test's folder, no user config."""
    monkeypatch.setenv("KERNELWRIGHT_DATA_DIR", str(tmp_path / "data"))
    (tmp_path / "config.toml").touch()
    monkeypatch.setenv("KERNELWRIGHT_CONFIG", str(tmp_path / "config.toml"))


@pytest.fixture
def replay_setup(tmp_path: Path) -> tuple[Path, ReplayGpu]:
    """The representative subset's candidates, each named as another tool would: the matmul
    2.0x faster (KernelBench's own name), the softmax wrong (ID_Name.py under level1/), the huge
    sum out of memory, level 2's gemm missing."""
    folder = tmp_path / "candidates"
    (folder / "level1").mkdir(parents=True)
    (folder / "level_1_problem_1_sample_0_kernel.py").write_text(MATMUL)
    (folder / "level1" / "3_Softmax.py").write_text(SOFTMAX_WRONG)
    (folder / "level1" / "4_mine.py").write_text(HUGE)
    gpu = ReplayGpu()
    matmul, softmax, huge = (task(LEVEL1 / n) for n in (
        "1_Square_matrix_multiplication_.py", "3_Softmax.py", "4_Huge_sum.py"))  # fmt: skip
    add(gpu, matmul, MATMUL, report(matmul, "correct", 0.4, 2.0))
    add(gpu, softmax, SOFTMAX_WRONG, report(softmax, "wrong", reason="output 0 wrong at 9 of 9"))
    original(gpu, softmax, 0.1)
    add(gpu, huge, HUGE, report(huge, "crashed", reason=OOM))
    gpu.add(huge, huge.reference_candidate(), report(huge, "crashed", reason=OOM))
    original(gpu, task(LEVEL2 / "2_Gemm_Scale.py"), 0.3)
    return folder, gpu


def run(out: Path, **kw: Any) -> int:
    kw.setdefault("device", H100)
    return run_kernelbench_command(FAKE, out, **kw)


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_replay_scores_writes_every_file_and_skips_what_does_not_fit(
    tmp_path: Path, replay_setup: tuple[Path, ReplayGpu], capsys: pytest.CaptureFixture[str]
) -> None:
    folder, gpu = replay_setup
    out = tmp_path / "out"
    retimer = RecordedRetimer(
        {"1_Square_matrix_multiplication_": Retimed(eager=stats(2.2), kernel=stats(1.0))}
    )
    code = run(
        out,
        candidates=folder,
        gpu=gpu,
        timing="kernelbench",
        retimer=retimer,
        baseline_timer=recorded_baselines(),
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    data = json.loads((out / "kernelbench.json").read_text())
    assert data["counts"] == {
        "problems": 4,
        "scored": 3,
        "compiled": 2,  # the matmul and the wrong softmax
        "correct": 1,
        "failed": 2,
        "skipped": 1,
        "unfinished": 0,
    }
    assert data["device"] == "NVIDIA H100 80GB HBM3" and data["mode"] == "replay"
    assert "atol 0.0001, rtol 0.0001 for float32" in data["tolerance"]
    (skipped,) = data["skipped"]
    assert skipped["name"] == "4_Huge_sum.py"
    assert skipped["reason"] == "needs 256.7 GiB (this GPU has 80.0)"

    eager = data["scores"]["eager"]
    assert eager["1"]["problems"] == 2 and eager["2"]["problems"] == 1
    assert eager["1"]["fast"] == {"fast_0": 0.5, "fast_1": 0.5, "fast_1.2": 0.5}
    assert eager["1"]["geomean_correct"] == pytest.approx(2.0)
    assert eager["1"]["geomean_failures_as_one"] == pytest.approx(2**0.5)
    assert eager["2"]["geomean_correct"] == 0.0 and eager["2"]["fast"]["fast_0"] == 0.0
    assert eager["all"]["fast"]["fast_1"] == pytest.approx(1 / 3)
    assert eager["all"]["median_failures_as_one"] == 1.0
    compiled = data["scores"]["compile"]  # the matmul is 2.0x eager, eager 2x compile: a tie
    assert compiled["1"]["fast"] == {"fast_0": 0.5, "fast_1": 0.0, "fast_1.2": 0.0}
    assert compiled["all"]["problems"] == 3

    rows = lines(out / "results.jsonl")
    assert [(r["id"], r["status"], r["verdict"]) for r in rows] == [
        (1, "done", "correct"),
        (3, "done", "wrong"),
        (4, "skipped", ""),
        (2, "done", "missing"),
    ]
    matmul = rows[0]
    assert matmul["speedup_eager"] == 2.0 and matmul["speedup_eager_iqr"] == 0.03
    assert matmul["speedup_compile"] == pytest.approx(1.0)
    assert matmul["speedup_compile_iqr"] == pytest.approx(0.015)
    assert matmul["eager_ms"] == 0.4 and matmul["kernel_ms"] == pytest.approx(0.2)
    assert matmul["compile_ms"] == pytest.approx(0.2) and matmul["kernel_iqr_ms"] == 0.002
    assert matmul["kb_speedup"] == pytest.approx(2.2) and matmul["kb_differs"] is True
    assert matmul["attempts"] == 1 and matmul["wall_s"] >= 0
    assert matmul["sizes"] == {"N": 256}
    assert rows[1]["reason"] == "output 0 wrong at 9 of 9" and rows[1]["compiled"]
    assert rows[1]["candidate"].endswith("level1/3_Softmax.py")
    assert "no candidate for level 2 problem 2" in rows[3]["reason"] and not rows[3]["compiled"]
    assert rows[3]["eager_ms"] == 0.3  # the reference was checked for the baseline files
    assert data["kb_timing"]["flagged"] == [
        {"level": 1, "id": 1, "name": "1_Square_matrix_multiplication_.py", "ours": 2.0,
         "kernelbench": pytest.approx(2.2)}
    ]  # fmt: skip

    kernels = out / "kernelbench" / "runs" / "kernelwright_level1"
    assert (kernels / "level_1_problem_1_sample_0_kernel.py").read_text() == MATMUL
    assert (kernels / "level_1_problem_3_sample_0_kernel.py").read_text() == SOFTMAX_WRONG
    assert not (kernels / "level_1_problem_4_sample_0_kernel.py").exists()
    results = json.loads((kernels / "eval_results.json").read_text())
    assert list(results) == ["1", "3"]  # the skipped problem is in no denominator
    timing = out / "kernelbench" / "results" / "timing" / "NVIDIA_H100_80GB_HBM3"
    torch_eager = json.loads((timing / "baseline_time_torch.json").read_text())
    assert sorted(torch_eager["level1"]) == ["1_Square_matrix_multiplication_.py", "3_Softmax.py"]
    assert torch_eager["level2"]["2_Gemm_Scale.py"]["mean"] == 0.3

    md = (out / "summary.md").read_text()
    assert "| eager | level 1 | 2 | 2 | 1 | 0.500 | 0.500 | 0.500 | 2.000 | 1.414 |" in md
    assert "| torch.compile | level 1 | 2 | 2 | 1 | 0.500 | 0.000 | 0.000 |" in md
    assert "- level 1 `4_Huge_sum.py`: needs 256.7 GiB" in md
    assert "benchmark_eval_analysis.py run_name=kernelwright_level1 level=1" in md
    assert "more than 5% apart: L1/1" in md
    assert "fast_0" in captured.out and "needs 256.7 GiB" in captured.err


def test_what_the_baseline_timer_says_cannot_fit_is_skipped_unchecked(
    tmp_path: Path, replay_setup: tuple[Path, ReplayGpu]
) -> None:
    folder, gpu = replay_setup
    out = tmp_path / "out"
    timer = recorded_baselines(BaselineTimes(peak_bytes=300 << 30))
    assert run(out, candidates=folder, gpu=gpu, baseline_timer=timer) == 0
    data = json.loads((out / "kernelbench.json").read_text())
    assert data["skipped"][0]["reason"] == "needs 300.0 GiB (this GPU has 80.0)"
    huge = task(LEVEL1 / "4_Huge_sum.py")
    keys = {key for _, key in gpu.calls}
    assert not keys & {k for k in gpu.checks if gpu.checks[k].task == huge.name}
    assert timer.asked == ["1_Square_matrix_multiplication_", "3_Softmax", "4_Huge_sum",
                           "2_Gemm_Scale"]  # fmt: skip


def test_report_html_is_one_file_with_three_plots(
    tmp_path: Path, replay_setup: tuple[Path, ReplayGpu]
) -> None:
    folder, gpu = replay_setup
    out = tmp_path / "out"
    assert run(out, candidates=folder, gpu=gpu, baseline_timer=recorded_baselines()) == 0
    page = (out / "report.html").read_text()
    assert not re.search(r"(?:https?:)?//[\w.-]+\.\w", page), "an external URL"
    assert "<script" not in page and "<link" not in page
    images = re.findall(
        r'<figure id="plot-(\w+)">\s*<img alt="[^"]*" src="data:image/png;base64,([^"]+)"', page
    )
    assert [name for name, _ in images] == ["speedup", "outcomes", "time"]
    assert all(len(png) > 1000 for _, png in images)
    assert "4_Huge_sum.py" in page and "fast_1.2" in page


def test_without_the_clones_timing_the_live_timers_say_so_once_and_the_run_goes_on(
    tmp_path: Path, replay_setup: tuple[Path, ReplayGpu], capsys: pytest.CaptureFixture[str]
) -> None:
    """The stand-in clone has no src/kernelbench/timing.py (KernelBench's own, which the live
    timers run): each timer says so once, and the run scores eager without them."""
    folder, gpu = replay_setup
    out = tmp_path / "out"
    assert run(out, candidates=folder, gpu=gpu, timing="kernelbench") == 0
    err = " ".join(capsys.readouterr().err.split())  # as the terminal wrapped it
    assert err.count("torch.compile baseline: needs a GPU with torch") == 1
    assert err.count("--timing kernelbench: needs a GPU with torch") == 1
    assert err.count("has no kernelbench/timing.py and eval.py") == 2
    data = json.loads((out / "kernelbench.json").read_text())
    assert data["scores"]["compile"] is None and data["baselines"]["compile"]["problems"] == 0
    assert "needs a GPU" in data["baselines"]["compile"]["note"]
    assert data["scores"]["eager"]["all"]["correct"] == 1
    assert "needs a GPU with torch" in data["kb_timing"]["note"]
    # the huge sum is still skipped: its own Model ran out of memory in the verifier
    assert [s["name"] for s in data["skipped"]] == ["4_Huge_sum.py"]
    timing = out / "kernelbench" / "results" / "timing" / "NVIDIA_H100_80GB_HBM3"
    assert not (timing / "baseline_time_torch_compile_inductor_default.json").exists()


def test_one_failing_problem_never_stops_the_run(
    tmp_path: Path, replay_setup: tuple[Path, ReplayGpu]
) -> None:
    folder, gpu = replay_setup
    (folder / "level1" / "3_Softmax.py").write_text(SOFTMAX_WRONG + "\n# changed\n")  # unrecorded
    (folder / "level2").mkdir()
    (folder / "level2" / "2.py").write_text("import torch\n\nclass Model:\n    pass\n")
    out = tmp_path / "out"
    assert run(out, candidates=folder, gpu=gpu, baselines="eager") == 0
    rows = {r["id"] + 10 * r["level"]: r for r in lines(out / "results.jsonl")}
    assert rows[13]["status"] == "failed" and rows[13]["reason"].startswith("ReplayMiss: ")
    assert rows[22]["verdict"] == "compile_error" and "ModelNew" in rows[22]["reason"]
    assert rows[11]["correct"] and rows[14]["status"] == "skipped"  # before and after it
    data = json.loads((out / "kernelbench.json").read_text())
    assert list(data["scores"]) == ["eager"] and data["counts"]["failed"] == 2


def test_a_finished_run_resumes_without_measuring_again(
    tmp_path: Path, replay_setup: tuple[Path, ReplayGpu], capsys: pytest.CaptureFixture[str]
) -> None:
    folder, gpu = replay_setup
    out = tmp_path / "out"
    assert run(out, candidates=folder, gpu=gpu) == 0
    calls = len(gpu.calls)
    first = lines(out / "results.jsonl")
    assert run(out, candidates=folder, gpu=gpu) == 2  # never over a run already there
    assert "add --resume" in capsys.readouterr().err
    assert run(out, resume=True, gpu=gpu) == 0  # the run keeps its mode and candidates
    assert len(gpu.calls) == calls
    again = lines(out / "results.jsonl")
    assert [r["speedup_eager"] for r in again] == [r["speedup_eager"] for r in first]


def test_resume_guards(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert run(out, resume=True, gpu=ReplayGpu(), model=ScriptedLLM()) == 2
    assert "no KernelBench run to resume" in capsys.readouterr().err
    out.mkdir()
    (out / STATE_FILE).write_text("{}")
    assert run(out, resume=True, gpu=ReplayGpu(), model=ScriptedLLM()) == 2
    assert "is not a KernelBench run's state" in capsys.readouterr().err
    other = tmp_path / "other"
    (other / "KernelBench" / "level1").mkdir(parents=True)
    state = KbState.plan([], kb=str(other), levels=[1], subset="all")
    state.save(out)
    assert run(out, resume=True, gpu=ReplayGpu(), model=ScriptedLLM()) == 2
    assert "holds a run over" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"level": "7"}, "the clone has no level 7"),
        ({"subset": "1"}, "--subset IDS names problems of one level"),
        ({"subset": "first"}, "expected representative, all, or problem ids"),
        ({"baselines": "eager,inductor"}, "--baselines 'eager,inductor'"),
        ({"candidates": Path("/nonexistent/kernels")}, "no such directory"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kw: dict[str, Any], message: str
) -> None:
    assert run(tmp_path / "out", gpu=ReplayGpu(), model=ScriptedLLM(), **kw) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


# --- the loop ---


def reply(source: str, tags: list[str]) -> str:
    meta = {"tags": tags, "rationale": "scripted"}
    return f"```python\n{source}```\n```json\n{json.dumps(meta)}\n```\n"


def loop_gpu() -> ReplayGpu:
    gpu = ReplayGpu()
    relu, scale = task(LEVEL2 / "1_Gemm_ReLU.py"), task(LEVEL2 / "2_Gemm_Scale.py")
    original(gpu, relu, 0.08)
    original(gpu, scale, 0.09)
    add(gpu, relu, GEMM_RELU, report(relu, "correct", 0.08, 1.5))
    add(gpu, scale, GEMM_SCALE, report(scale, "wrong", reason="output 0 wrong at 3 of 65,536"))
    return gpu


SCRIPT = [reply(GEMM_RELU, ["kernel-fusion"]), "fused.", reply(GEMM_SCALE, ["fusion"]), "wrong."]


class KilledAt(ScriptedLLM):
    """Dies like Ctrl-C at request number `at` (counted over restarts), once."""

    def __init__(self, replies: list[str], at: int | None) -> None:
        super().__init__(replies)
        self.at = at

    def complete(self, messages: list[Message]) -> str:
        if self.at is not None and len(self.prompts) + 1 == self.at:
            self.at = None
            self.prompts.append(messages)
            raise KeyboardInterrupt
        return super().complete(messages)


def loop_run(out: Path, model: ScriptedLLM, gpu: ReplayGpu, **kw: Any) -> int:
    kw.setdefault("loop", {"memory": False})
    return run(
        out, level="2", subset="all", budget=1, baselines="eager", model=model, gpu=gpu, **kw
    )


def test_the_loop_on_each_problem(tmp_path: Path) -> None:
    out, gpu = tmp_path / "out", loop_gpu()
    assert loop_run(out, ScriptedLLM(SCRIPT), gpu) == 0
    rows = lines(out / "results.jsonl")
    relu, scale = rows
    assert relu["correct"] and relu["speedup_eager"] == 1.5 and relu["attempts"] == 1
    assert relu["stop_reason"] == "budget: 1 candidates tried"
    assert Path(relu["kernel_file"]).read_text() == GEMM_RELU
    assert (Path(relu["run_dir"]) / "best.py").read_text() == GEMM_RELU
    assert scale["verdict"] == "wrong" and scale["compiled"] and not scale["correct"]
    assert Path(scale["kernel_file"]).read_text() == GEMM_SCALE  # what KernelBench would judge
    data = json.loads((out / "kernelbench.json").read_text())
    assert data["proposals_by"] == "scripted" and data["budget"] == 1
    assert data["scores"]["eager"]["2"]["fast"] == {"fast_0": 0.5, "fast_1": 0.5, "fast_1.2": 0.5}
    state = KbState.load(out)
    assert state is not None and state.memory is False


def test_an_interrupted_loop_run_resumes_where_it_stopped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, gpu = tmp_path / "out", loop_gpu()
    model = KilledAt(SCRIPT, at=3)  # Ctrl-C while the second problem's candidate is written
    assert loop_run(out, model, gpu) == 130
    assert "--resume" in capsys.readouterr().err
    state = KbState.load(out)
    assert state is not None
    assert [p.status for p in state.problems] == ["done", "running"]
    assert len(lines(out / "results.jsonl")) == 1
    checks = [key for kind, key in gpu.calls if kind == "check"]
    assert len(checks) == 3  # the first problem's original and candidate, the second's original
    assert loop_run(out, model, gpu, resume=True) == 0
    checks = [key for kind, key in gpu.calls if kind == "check"]
    assert len(checks) == 4 and len(set(checks)) == 4  # nothing measured twice
    rows = lines(out / "results.jsonl")
    assert [r["verdict"] for r in rows] == ["correct", "wrong"]
    runs = list((out / "runs" / "L2-2_Gemm_Scale").iterdir())
    assert len([r for r in runs if r.is_dir()]) == 1  # the same run, resumed


def test_final_attempt() -> None:
    def attempt(i: int, verdict: str, speedup: float | None = None, kept: bool = False) -> Attempt:
        return Attempt(
            index=i, parent=0, source=f"s{i}", verdict=verdict,
            reason="", speedup=speedup, kept=kept,
        )  # fmt: skip

    assert final_attempt([]) is None
    kept = [attempt(1, "correct", 1.3, True), attempt(2, "correct", 1.6, True), attempt(3, "wrong")]
    assert final_attempt(kept) == kept[1]
    slower = [attempt(1, "correct", 0.7), attempt(2, "correct", 0.9), attempt(3, "compile_error")]
    assert final_attempt(slower) == slower[1]  # correct but slower still counts for fast_0
    broken = [attempt(1, "wrong"), attempt(2, "compile_error"), attempt(3, "error")]
    assert final_attempt(broken) == broken[0]
    assert final_attempt([attempt(1, "error")]) is not None


def test_needs_memory() -> None:
    assert needs_memory(OOM, 80 << 30) == "needs 256.7 GiB (this GPU has 80.0)"
    assert needs_memory("CUDA out of memory. Tried to allocate 512.00 MiB.", None) == (
        "needs more than 0.5 GiB"
    )
    assert needs_memory("CUDA error: out of memory", 80 << 30) == (
        "needs more GPU memory than this GPU has (out of memory): it has 80.0 GiB"
    )


def test_a_check_that_says_it_cannot_fit_is_a_skip_with_its_estimate() -> None:
    """The problem's own check ended before its trials with fit.py's line: skipped, with the
    estimate and the free memory from its gpu_bytes; without an estimate, its own words."""
    base = {"task": "x", "candidate": "y", "verdict": "error"}
    gib = 1 << 30
    line = "does not fit: checking at batch_size=4096 needs about 31.0 GiB of GPU memory (...)"
    fits = CheckReport.model_validate(
        {**base, "reason": line,
         "gpu_bytes": {"gpu_needed_bytes": 31 * gib, "gpu_free_at_start_bytes": 22 * gib}}
    )  # fmt: skip
    assert does_not_fit(fits) == "needs 31.0 GiB (this GPU has 22.0 free)"
    host = CheckReport.model_validate({**base, "reason": "does not fit: without memory to hand "
                                       "over, a trial's outputs cross the host"})  # fmt: skip
    assert does_not_fit(host) == (
        "cannot fit: without memory to hand over, a trial's outputs cross the host"
    )
    other = CheckReport.model_validate({**base, "reason": "the task's reference failed: x"})
    assert does_not_fit(other) == ""
    wrong = CheckReport.model_validate({**base, "verdict": "wrong", "reason": line})
    assert does_not_fit(wrong) == ""


def test_the_command_line(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from kernelwright.agent.doors.cli import app

    runner = CliRunner()
    result = runner.invoke(app, ["eval", "kernelbench", "--kb", str(FAKE), "--list", "--json"])
    assert result.exit_code == 0, result.output
    listed = json.loads(result.stdout)
    assert [(p["level"], p["id"]) for p in listed] == [(1, 1), (1, 3), (1, 4), (2, 2)]
    result = runner.invoke(
        app, ["eval", "kernelbench", "--kb", str(FAKE), "--level", "1", "--subset", "2-3", "--list"]
    )
    assert result.exit_code == 0 and "2_ReLU.py" in result.stdout
    assert runner.invoke(app, ["eval", "kernelbench", "-h"]).exit_code == 0
    result = runner.invoke(app, ["eval", "kernelbench", "--kb", str(FAKE), "--budget", "0"])
    assert result.exit_code == 2
    if not HAS_GPU:  # no GPU: one line, exit 2, and no output folder left behind
        out = tmp_path / "out"
        result = runner.invoke(app, ["eval", "kernelbench", "--kb", str(FAKE), "--out", str(out)])
        assert result.exit_code == 2 and "error:" in result.output
        assert not out.exists()
