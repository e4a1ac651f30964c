"""`kernelwright batch` on the CPU: a folder with two good tasks and a broken one, scripted
replies standing in for the model, verifier reports recorded as a GPU would give them
(ReplayGpu) and real NVRTC compiles; then an interruption and --resume."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from kernelwright.agent.doors.batch import discover
from kernelwright.agent.doors.batch_records import BatchState
from kernelwright.agent.doors.cli_batch import run_batch_command
from kernelwright.agent.llm import Message, ScriptedLLM
from kernelwright.agent.nodes.common import as_candidate
from kernelwright.tools.backend import ReplayGpu
from kernelwright.tools.kernelbench import KernelBenchTask
from kernelwright.tools.results import CheckReport, DeviceInfo, KernelTiming, TimingResult
from kernelwright.tools.spec import CudaTask
from kernelwright.tools.task import load_task, reference_candidate
from tests.conftest import EXAMPLES, HAS_GPU, ROOT, proposed_launch

H100 = DeviceInfo(
    name="NVIDIA H100 80GB HBM3",
    arch="sm_90",
    driver_version="580.159.04",
    memory_total_bytes=80 << 30,
    peak_dram_gbps=3352.3,
    peak_fp32_tflops=66.9,
)
# task -> (original's median ms, the faster candidate's speedup)
TIMES = {"gelu": (0.11, 1.3), "softmax": (0.92, 6.1)}


def reply(task_dir: Path, name: str, tags: list[str]) -> str:
    path = task_dir / "candidates" / f"{name}.cu"
    meta: dict[str, Any] = {"tags": tags, "rationale": "scripted"}
    if (launch := proposed_launch(path)) is not None:
        meta["launch"] = launch
    return f"```cuda\n{path.read_text()}\n```\n```json\n{json.dumps(meta)}\n```\n"


def script(root: Path, names: tuple[str, ...] = ("gelu", "softmax")) -> list[str]:
    """Per good task, in the batch's order: a wrong candidate, then the faster one."""
    replies = []
    for name in names:
        replies += [
            reply(root / name, "wrong", ["grid-stride loop"]),
            f"The {name} candidate skipped elements.",
            reply(root / name, "faster", ["16-byte vector loads and stores"]),
            f"The {name} candidate moved less data per thread.",
        ]
    return replies


def check_report(
    task: CudaTask | KernelBenchTask,
    verdict: str,
    ref_ms: float,
    speedup: float | None,
    reason: str = "ok",
) -> CheckReport:
    timing = None
    if speedup is not None:
        ref = KernelTiming(median_ms=ref_ms, iqr_ms=0.002, min_ms=ref_ms, max_ms=ref_ms, samples=99)
        timing = TimingResult(
            reference=ref,
            candidate=ref.model_copy(update={"median_ms": ref_ms / speedup}),
            speedup=speedup,
            speedup_iqr=0.02,
            rounds=99,
            input_sets=4,
            l2_flush_bytes=100 << 20,
            floor_ms=0.04,
        )
    return CheckReport(
        task=task.name,
        candidate="candidate.cu",
        verdict=verdict,  # type: ignore[arg-type]
        reason=reason,
        timing=timing,
        device=H100,
    )


def replay(root: Path, names: tuple[str, ...] = tuple(TIMES)) -> ReplayGpu:
    gpu = ReplayGpu()
    for name in names:
        ref_ms, speedup = TIMES[name]
        task = load_task(root / name)
        assert isinstance(task, CudaTask)
        gpu.add(task, reference_candidate(task), check_report(task, "correct", ref_ms, 1.0))
        wrong = (root / name / "candidates" / "wrong.cu").read_text()
        gpu.add(
            task,
            as_candidate(task, wrong, None),
            check_report(task, "wrong", ref_ms, None, "output 'y' wrong at 12 elements"),
        )
        faster = root / name / "candidates" / "faster.cu"
        launch = proposed_launch(faster)
        gpu.add(
            task,
            as_candidate(task, faster.read_text(), launch),
            check_report(task, "correct", ref_ms, speedup),
        )
    return gpu


@pytest.fixture(autouse=True)
def own_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs and memory in the test's folder, no user config."""
    monkeypatch.setenv("KERNELWRIGHT_DATA_DIR", str(tmp_path / "data"))
    (tmp_path / "config.toml").touch()
    monkeypatch.setenv("KERNELWRIGHT_CONFIG", str(tmp_path / "config.toml"))


@pytest.fixture
def root(tmp_path: Path, nvrtc: None) -> Path:
    """gelu and softmax as in examples/, and `broken`: gelu with a dtype that does not exist."""
    root = tmp_path / "tasks"
    for name in ("gelu", "softmax"):
        shutil.copytree(EXAMPLES / name, root / name)
    broken = root / "broken"
    broken.mkdir()
    shutil.copy(EXAMPLES / "gelu" / "gelu.cu", broken / "broken.cu")
    toml = (EXAMPLES / "gelu" / "gelu.toml").read_text()
    (broken / "broken.toml").write_text(toml.replace('"float32"', '"floot32"', 1))
    return root


def checks(gpu: ReplayGpu) -> list[str]:
    return [key for kind, key in gpu.calls if kind == "check"]


def test_batch_reports_every_task_and_lists_the_broken_one(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report"
    gpu = replay(root)
    code = run_batch_command(root, out, budget=2, model=ScriptedLLM(script(root)), gpu=gpu)
    captured = capsys.readouterr()
    assert code == 1, captured.err
    failed = captured.err[captured.err.index("1 failed:") :]
    assert "broken: " in failed and "floot32" in failed

    batch = json.loads((out / "batch.json").read_text())
    assert batch["counts"] == {
        "tasks": 3,
        "faster": 2,
        "unchanged": 0,
        "failed": 1,
        "skipped_files": 4,  # the candidates folders and reference.py of gelu and softmax
    }
    (failure,) = batch["failed"]
    assert failure["id"] == "broken" and "args[0] (x).dtype" in failure["reason"]
    assert batch["device"] == "NVIDIA H100 80GB HBM3 (sm_90)"

    gelu = json.loads((out / "tasks" / "gelu.json").read_text())
    assert gelu["verdict"] == "faster" and gelu["speedup"] == 1.3 and gelu["speedup_iqr"] == 0.02
    assert gelu["baseline_ms"] == 0.11 and gelu["best_ms"] == pytest.approx(0.11 / 1.3)
    assert gelu["roofline_before"] == pytest.approx(0.04 / 0.11)
    assert gelu["roofline_after"] == pytest.approx(0.04 * 1.3 / 0.11)
    assert gelu["techniques"] == gelu["attempts"][1]["tags"] != []  # the kept attempt's
    assert [a["verdict"] for a in gelu["attempts"]] == ["wrong", "correct"]
    assert "source" not in gelu["attempts"][0]
    assert Path(gelu["best_kernel"]).read_text() == (root / "gelu/candidates/faster.cu").read_text()
    broken = json.loads((out / "tasks" / "broken.json").read_text())
    assert broken["status"] == "failed" and broken["attempts"] == []

    md = (out / "report.md").read_text()
    assert "| gelu | faster | 0.1100 | 0.0846 | 1.30x (IQR 0.020) |  | 36% → 47% | 2 |" in md
    assert "| softmax | faster | 0.9200 | 0.1508 | 6.10x" in md
    assert "## Failed" in md and "- `broken`: " in md
    assert "- `gelu/candidates`: a candidates folder" in md
    assert "- `softmax/reference.py`: a task's reference" in md
    assert "proposals by: scripted" in md


def test_report_html_is_one_file_with_three_plots(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report"
    run_batch_command(root, out, budget=2, model=ScriptedLLM(script(root)), gpu=replay(root))
    page = (out / "report.html").read_text()
    assert not re.search(r"(?:https?:)?//[\w.-]+\.\w", page), "an external URL"
    assert "<script" not in page and "<link" not in page
    images = re.findall(
        r'<figure id="plot-(\w+)">\s*<img alt="[^"]*" src="data:image/png;base64,([^"]+)"', page
    )
    assert [name for name, _ in images] == ["speedup", "attempts", "roofline"]
    for _, data in images:
        assert base64.b64decode(data).startswith(b"\x89PNG\r\n\x1a\n")
    assert "floot32" in page and "a candidates folder" in page


class Killable(ScriptedLLM):
    """A script shared across restarts; raises KeyboardInterrupt (Ctrl-C) at one request."""

    def __init__(self, replies: list[str], kill_at: int | None) -> None:
        super().__init__(replies)
        self.kill_at = kill_at

    def complete(self, messages: list[Message]) -> str:
        if self.kill_at is not None and len(self.prompts) + 1 == self.kill_at:
            self.kill_at = None
            self.prompts.append(messages)  # asked, never answered
            raise KeyboardInterrupt
        return super().complete(messages)


def test_an_interrupted_batch_resumes_without_redoing_finished_tasks(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report"
    gpu = replay(root)
    model = Killable(script(root), kill_at=7)  # softmax's second candidate is being written
    assert run_batch_command(root, out, budget=2, model=model, gpu=gpu) == 130
    assert "--resume" in capsys.readouterr().err
    state = BatchState.load(out)
    assert state is not None
    assert [t.status for t in state.tasks] == ["failed", "done", "running"]
    gelu_checks = checks(gpu)[:3]  # gelu: the original, the wrong and the faster candidate
    assert len(set(checks(gpu))) == 5  # and softmax's original and first candidate

    assert run_batch_command(root, out, resume=True, model=model, gpu=gpu) == 1
    assert "resuming: 2 of 3 tasks already finished" in capsys.readouterr().err
    for key in set(checks(gpu)):
        assert checks(gpu).count(key) == 1  # nothing measured twice, gelu not at all
    assert not set(gelu_checks) & set(checks(gpu)[5:])
    assert len(model.prompts) == 9  # 8 replies and the one interrupted request
    (run,) = (p for p in (out / "runs" / "softmax").iterdir() if p.is_dir())
    assert (run / "summary.md").is_file()  # the same run, resumed, not a second one
    softmax = json.loads((out / "tasks" / "softmax.json").read_text())
    assert [a["verdict"] for a in softmax["attempts"]] == ["wrong", "correct"]
    assert softmax["speedup"] == 6.1
    final = BatchState.load(out)
    assert final is not None and [t.status for t in final.tasks] == ["failed", "done", "done"]


def test_a_task_whose_own_kernel_fails_is_failed_and_the_rest_go_on(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.rmtree(root / "broken")
    gpu = replay(root)
    gelu = load_task(root / "gelu")
    gpu.add(gelu, reference_candidate(gelu), check_report(gelu, "crashed", 0.11, None, "exit 9"))
    model = ScriptedLLM(script(root)[4:])
    assert run_batch_command(root, tmp_path / "out", budget=2, model=model, gpu=gpu) == 1
    batch = json.loads((tmp_path / "out" / "batch.json").read_text())
    assert batch["failed"] == [
        {"id": "gelu", "reason": "the task's own kernel fails its check: exit 9"}
    ]
    assert batch["counts"]["faster"] == 1


def test_resume_and_rerun_guards(root: Path, tmp_path: Path, capsys: Any) -> None:
    out = tmp_path / "out"
    assert run_batch_command(root, out, resume=True, model=ScriptedLLM(), gpu=ReplayGpu()) == 2
    assert "no batch to resume in" in capsys.readouterr().err
    run_batch_command(root, out, budget=2, model=ScriptedLLM(script(root)), gpu=replay(root))
    capsys.readouterr()
    assert run_batch_command(root, out, model=ScriptedLLM(), gpu=ReplayGpu()) == 2
    assert "already holds a batch (3 of 3 tasks finished)" in capsys.readouterr().err
    other = tmp_path / "other"
    shutil.copytree(root / "gelu", other / "gelu")
    assert run_batch_command(other, out, resume=True, model=ScriptedLLM(), gpu=ReplayGpu()) == 2
    assert "holds the batch of" in capsys.readouterr().err


def test_a_kernelbench_problem_in_the_tree_is_optimized_not_failed(
    tmp_path: Path, nvrtc: None, capsys: pytest.CaptureFixture[str]
) -> None:
    from kernelwright.tools.kernelbench import KernelBenchCandidate, KernelBenchTask

    root = tmp_path / "tasks"
    shutil.copytree(EXAMPLES / "gelu", root / "gelu")
    (root / "kb").mkdir()
    for name in ("relu_mlp.py", "relu_mlp_candidate.py"):  # the problem and its candidate
        shutil.copy(EXAMPLES / "kernelbench" / name, root / "kb" / name)
    gpu = replay(root, ("gelu",))
    problem = load_task(root / "kb" / "relu_mlp.py")
    assert isinstance(problem, KernelBenchTask)
    faster = (root / "kb" / "relu_mlp_candidate.py").read_text()
    wrong = faster.replace("fmaxf(x[i], 0.0f)", "fminf(x[i], 0.0f)")
    as_kb = partial(KernelBenchCandidate, path="candidate.py")
    gpu.add(problem, reference_candidate(problem), check_report(problem, "correct", 0.08, 1.0))
    gpu.add(problem, as_kb(source=wrong), check_report(problem, "wrong", 0.08, None, "output 0"))
    gpu.add(problem, as_kb(source=faster), check_report(problem, "correct", 0.08, 1.6))
    python = [f"```python\n{src}```\n" for src in (wrong, faster)]
    model = ScriptedLLM(
        [*script(root, ("gelu",)), python[0], "It took the minimum.", python[1], "One pass less."]
    )
    out = tmp_path / "report"
    code = run_batch_command(root, out, budget=2, model=model, gpu=gpu)
    assert code == 0, capsys.readouterr().err
    batch = json.loads((out / "batch.json").read_text())
    assert batch["counts"]["faster"] == 2 and batch["failed"] == []
    kb = json.loads((out / "tasks" / "kb-relu_mlp.json").read_text())
    assert kb["kind"] == "kernelbench" and kb["verdict"] == "faster" and kb["speedup"] == 1.6
    assert [a["verdict"] for a in kb["attempts"]] == ["wrong", "correct"]
    assert kb["best_kernel"].endswith("best.py") and Path(kb["best_kernel"]).read_text() == faster
    assert "| kb/relu_mlp | faster | 0.0800 | 0.0500 | 1.60x" in (out / "report.md").read_text()


def test_discovery_finds_both_formats_and_says_what_it_passed_over(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    shutil.copytree(EXAMPLES / "gelu", root / "gelu")
    shutil.copytree(EXAMPLES / "kernelbench", root / "kb")
    (root / "gelu" / "notes.cu").write_text("// scratch\n")
    (root / "pyproject.toml").write_text('[project]\nname = "x"\n')
    (root / "helper.py").write_text("def f():\n    return 1\n")
    bad = root / "bad"
    bad.mkdir()
    (bad / "bad.cu").write_text("")
    (bad / "bad.toml").write_text("entry = [unclosed\n")
    (root / "kernelwright-batch").mkdir()
    (root / "kernelwright-batch" / "batch-state.json").write_text("{}")
    (root / "out" / "runs").mkdir(parents=True)
    (root / "out" / "runs" / "best.toml").write_text("[launch]\nblock = [1]\ngrid = [1]\n")

    found, skipped = discover(root, exclude=(root / "out",))
    assert [(f.id, f.kind) for f in found] == [
        ("bad", "cuda"),  # broken TOML beside its .cu: a task, which will fail with the reason
        ("gelu", "cuda"),
        ("kb/clamp_rows", "kernelbench"),
        ("kb/l1_rows", "kernelbench"),
        ("kb/relu_mlp", "kernelbench"),
        ("kb/relu_mm_plain_weight", "kernelbench"),
        ("kb/softmax_rows", "kernelbench"),
    ]
    why = {p.relative_to(root).as_posix(): r for p, r in ((s.path, s.reason) for s in skipped)}
    assert why == {
        "gelu/candidates": "a candidates folder",
        "gelu/notes.cu": "no name.toml with an entry beside it",
        "gelu/reference.py": "a task's reference",
        "helper.py": "not a KernelBench problem (no Model and get_inputs)",
        "kb/relu_mlp_candidate.py": "a KernelBench candidate (defines ModelNew)",
        "kernelwright-batch": "another batch's output folder",
        "out": "this batch's output folder",
        "pyproject.toml": "no entry: not a task (a candidate's launch, or another tool's file)",
    }


# --- the command as a user runs it: bad input is one line and exit 2 ---

KW = shutil.which("kernelwright")


def kw(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELWRIGHT_")}
    (tmp_path / "config.toml").touch()  # no user config (a test may have written one)
    env.update(
        KERNELWRIGHT_DATA_DIR=str(tmp_path / "data"),
        KERNELWRIGHT_CONFIG=str(tmp_path / "config.toml"),
        KERNELWRIGHT_OLLAMA_BASE_URL="http://127.0.0.1:9",
        COLUMNS="200",
    )
    assert KW is not None
    return subprocess.run(
        [KW, "batch", *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120
    )


@pytest.mark.skipif(KW is None, reason="the kernelwright script is not installed")
@pytest.mark.parametrize("case", ["missing-dir", "no-tasks", "out-not-writable"])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, case: str) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "a-file").write_text("")
    shutil.copytree(EXAMPLES / "gelu", tmp_path / "tasks" / "gelu")
    args, expected = {
        "missing-dir": ([str(tmp_path / "nowhere")], "nowhere: no such directory"),
        "no-tasks": ([str(tmp_path / "empty")], "no tasks found in"),
        "out-not-writable": (
            [str(tmp_path / "tasks"), "--out", str(tmp_path / "a-file" / "out")],
            "output folder not writable",
        ),
    }[case]
    proc = kw(tmp_path, *args)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and expected in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.skipif(KW is None or HAS_GPU, reason="checks the message on a machine without a GPU")
def test_no_gpu_is_one_line_and_leaves_no_folder(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLES / "gelu", tmp_path / "tasks" / "gelu")
    proc = kw(tmp_path, str(tmp_path / "tasks"), "--out", str(tmp_path / "out"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("error: no NVIDIA GPU") and not (tmp_path / "out").exists()


@pytest.mark.parametrize("content", [b"{not json", b'{"dir": 3}', b"\xff\xfe", b""])
def test_a_corrupt_state_file_is_one_line_not_a_traceback(
    root: Path, tmp_path: Path, capsys: Any, content: bytes
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "batch-state.json").write_bytes(content)
    for resume in (True, False):
        code = run_batch_command(root, out, resume=resume, model=ScriptedLLM(), gpu=ReplayGpu())
        err = capsys.readouterr().err
        assert code == 2 and "is not a batch's state" in err and "Traceback" not in err
        assert len(err.strip().splitlines()) == 1
    assert (out / "batch-state.json").read_bytes() == content  # nothing lost


def test_each_task_runs_with_the_batchs_own_limits_and_a_resume_keeps_them(
    root: Path, tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--minutes, --plateau, --no-memory and --backend reach every task's loop, are kept in the
    batch's state, and a resume runs as the batch started."""
    from kernelwright.agent import optimize as optimize_mod

    seen: list[dict[str, Any]] = []
    real = optimize_mod.optimize

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(optimize_mod, "optimize", spy)
    out = tmp_path / "out"
    loop = {"minutes": 2.5, "plateau": 2, "memory": False, "backend": "nvcc"}
    code = run_batch_command(
        root, out, budget=2, model=ScriptedLLM(script(root)), gpu=replay(root), loop=loop
    )
    assert code in (0, 1) and seen
    assert all(k["max_seconds"] == 150 and k["plateau"] == 2 and k["memory"] is False for k in seen)
    state = json.loads((out / "batch-state.json").read_text())
    assert {k: state[k] for k in loop} == loop
    capsys.readouterr()
    other = {"minutes": 9.0, "plateau": 7, "memory": True, "backend": None}
    run_batch_command(root, out, resume=True, model=ScriptedLLM(), gpu=ReplayGpu(), loop=other)
    assert "the batch keeps how it started: 2.5 min and a plateau of 2" in capsys.readouterr().err
