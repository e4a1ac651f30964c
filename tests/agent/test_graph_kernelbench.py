"""The optimization loop on a KernelBench problem, on the CPU: scripted replies, the compile
node's static check of the Python (nothing of a candidate runs here), and verifier reports
recorded as a GPU would give them (ReplayGpu). Nothing here imports torch."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from kernelwright.agent.llm import Message, ScriptedLLM
from kernelwright.agent.nodes.compile import check_model_new
from kernelwright.agent.optimize import optimize
from kernelwright.agent.replies import ReplyError
from kernelwright.agent.replies_kernelbench import parse_model_new
from kernelwright.agent.rundir import RunDir
from kernelwright.agent.settings import Settings
from kernelwright.memory.embeddings import CodeHashEmbedding
from kernelwright.memory.store import ChromaStore
from kernelwright.tools.backend import ReplayGpu
from kernelwright.tools.kernelbench import KernelBenchCandidate, KernelBenchTask
from kernelwright.tools.results import CheckReport
from kernelwright.tools.task import load_task, reference_candidate
from tests.agent.test_graph import report as graph_report
from tests.conftest import EXAMPLES

PROBLEM = EXAMPLES / "kernelbench" / "relu_mlp.py"
FASTER = (EXAMPLES / "kernelbench" / "relu_mlp_candidate.py").read_text()
WRONG = FASTER.replace("fmaxf(x[i], 0.0f)", "fminf(x[i], 0.0f)")
BETTER = FASTER.replace("then a small CUDA relu kernel", "then a small CUDA relu kernel (v2)")
BROKEN = BETTER.replace("def forward(self, x):", "def forward(self, x)")


def reply(source: str, tags: list[str], fence: str = "python") -> str:
    meta = {"tags": tags, "rationale": "scripted"}
    return f"Here it is.\n```{fence}\n{source}```\n```json\n{json.dumps(meta)}\n```\n"


def report(task: KernelBenchTask, verdict: str, speedup: float | None, reason: str = "ok") -> Any:
    """A recorded check of a ModelNew: no roofline floor for a KernelBench problem."""
    return graph_report(
        task, verdict, speedup, reason, ref_ms=0.08, floor_ms=None, candidate="candidate.py"
    )


@pytest.fixture
def task() -> KernelBenchTask:
    t = load_task(PROBLEM)
    assert isinstance(t, KernelBenchTask)
    return t


def replay(task: KernelBenchTask, entries: list[tuple[str, CheckReport]]) -> ReplayGpu:
    gpu = ReplayGpu()
    gpu.add(task, reference_candidate(task), report(task, "correct", 1.0))
    for source, rep in entries:  # the key is the source: the file's path does not matter
        gpu.add(task, KernelBenchCandidate(path="candidate.py", source=source), rep)
    return gpu


def run(tmp_path: Path, model: ScriptedLLM, gpu: ReplayGpu, **kw: Any) -> tuple[Any, RunDir]:
    events: list[dict[str, Any]] = kw.pop("events", [])
    return optimize(
        PROBLEM,
        Settings(data_dir=tmp_path),
        model=model,
        gpu=gpu,
        arch="sm_90",
        progress=events.append,
        **kw,
    )


def test_faster_kept_wrong_rejected_syntax_error_repaired(
    tmp_path: Path, task: KernelBenchTask
) -> None:
    gpu = replay(
        task,
        [
            (FASTER, report(task, "correct", 1.6)),
            (WRONG, report(task, "wrong", None, "output 0 wrong at 65,536 of 131,072 elements")),
            (BETTER, report(task, "correct", 1.7)),
        ],
    )
    model = ScriptedLLM(
        [
            reply(FASTER, ["kernel-fusion"]),
            "The relu kernel replaced a separate pass.",
            reply(WRONG, ["kernel-fusion"]),
            "It computed min instead of max.",
            reply(BROKEN, ["loop unrolling"]),
            reply(BETTER, ["loop unrolling"]),
            "A small gain.",
        ]
    )
    events: list[dict[str, Any]] = []
    out, rundir = run(tmp_path, model, gpu, budget=3, plateau=5, events=events)
    attempts = out["attempts"]
    assert [a.verdict for a in attempts] == ["correct", "wrong", "correct"]
    assert [a.kept for a in attempts] == [True, False, True]
    assert attempts[2].repairs == 1
    assert out["best_speedup"] == pytest.approx(1.7)
    assert out["stop_reason"] == "budget: 3 candidates tried"
    # the broken file never reached the GPU: the original and three candidates were checked
    assert len([c for c in gpu.calls if c[0] == "check"]) == 4

    assert (rundir.path / "best.py").read_text() == BETTER
    assert not (rundir.path / "best.cu").exists() and not (rundir.path / "best.toml").exists()
    assert rundir.best_file == rundir.path / "best.py"
    assert sorted(p.name for p in (rundir.path / "candidates").iterdir()) == [
        "candidate-1.py",
        "candidate-2.py",
        "candidate-3.py",
    ]
    assert [a.source for a in rundir.attempts()] == [FASTER, WRONG, BETTER]
    summary = (rundir.path / "summary.md").read_text()
    assert "best: 1.70x" in summary and "in best.py" in summary
    assert "It computed min instead of max." in summary

    first = model.prompts[0][-1]["content"]
    assert "## Problem: relu_mlp (KernelBench)" in first
    assert "class Model(nn.Module)" in first and "Current best: PyTorch eager itself" in first
    assert "```python" in first and "```cuda" not in first
    assert "cupy.RawKernel" in model.prompts[0][0]["content"]
    assert "load_inline" in model.prompts[0][0]["content"]
    second = model.prompts[2][-1]["content"]
    assert "## Current best ModelNew (1.60x PyTorch eager" in second
    assert FASTER.rstrip() in second
    assert "#1 [" in second and "correct, 1.60x" in second
    repair = model.prompts[5][-1]["content"]
    assert "did not pass its check" in repair and "SyntaxError" in repair
    assert "def forward(self, x)\n" in repair
    reflect = model.prompts[1][-1]["content"]
    assert "--- best.py" in reflect and "+++ candidate.py" in reflect
    messages = [str(e.get("message", "")) for e in events]
    assert any(m.startswith("profiling unavailable") for m in messages)


def test_a_wrong_candidate_never_replaces_the_original(
    tmp_path: Path, task: KernelBenchTask
) -> None:
    gpu = replay(task, [(WRONG, report(task, "wrong", None, "output 0 wrong"))])
    model = ScriptedLLM([reply(WRONG, ["x"]), "wrong."])
    out, rundir = run(tmp_path, model, gpu, budget=1)
    assert out["best_speedup"] == 1.0 and not out["attempts"][0].kept
    best = (rundir.path / "best.py").read_text()
    assert best.startswith(task.source.rstrip()) and best.endswith("ModelNew = Model\n")


def test_memory_records_kernelbench_attempts(tmp_path: Path, task: KernelBenchTask) -> None:
    gpu = replay(task, [(FASTER, report(task, "correct", 1.6))])
    out, _ = run(tmp_path, ScriptedLLM([reply(FASTER, ["kernel-fusion"]), "ok."]), gpu, budget=1)
    assert out["attempts"][0].kept
    store = ChromaStore.open(tmp_path / "memory", embedding=CodeHashEmbedding())
    (episode,) = store.search(FASTER, n=5)
    assert episode.task_signature == (
        "kernelbench:relu_mlp(batch_size=128,in_features=1024,out_features=1024)"
    )
    assert episode.op_class == "gemm" and episode.verdict == "correct"


def test_unusable_reply_gets_one_repair_round(tmp_path: Path, task: KernelBenchTask) -> None:
    model = ScriptedLLM(["Use a fused kernel.", "```python\nimport torch\n```\n"])
    out, _ = run(tmp_path, model, replay(task, []), budget=1)
    (attempt,) = out["attempts"]
    assert attempt.verdict == "error" and "ModelNew" in attempt.reason
    retry = model.prompts[1][-1]["content"]
    assert "```python" in retry and "class ModelNew(torch.nn.Module)" in retry


def test_a_constructor_that_cannot_take_the_init_inputs_is_a_compile_error(
    tmp_path: Path, task: KernelBenchTask
) -> None:
    narrow = FASTER.replace(
        "def __init__(self, in_features, out_features):", "def __init__(self, n):"
    )
    gpu = replay(task, [(FASTER, report(task, "correct", 1.6))])
    model = ScriptedLLM([reply(narrow, ["a"]), reply(FASTER, ["a"]), "fixed."])
    out, _ = run(tmp_path, model, gpu, budget=1)
    assert out["attempts"][0].repairs == 1 and out["attempts"][0].kept
    assert (
        "ModelNew.__init__ takes 1 argument(s) but Model.__init__ takes 2"
        in (model.prompts[1][-1]["content"])
    )


class KilledAt(ScriptedLLM):
    """Dies like a killed process at request number `at` (counted over restarts)."""

    def __init__(self, replies: list[str], at: int | None) -> None:
        super().__init__(replies)
        self.at = at

    def complete(self, messages: list[Message]) -> str:
        if self.at is not None and len(self.prompts) + 1 == self.at:
            self.at = None
            self.prompts.append(messages)
            raise KeyboardInterrupt
        return super().complete(messages)


def test_a_killed_run_resumes_without_re_measuring(tmp_path: Path, task: KernelBenchTask) -> None:
    gpu = replay(
        task, [(FASTER, report(task, "correct", 1.6)), (BETTER, report(task, "correct", 1.7))]
    )
    model = KilledAt([reply(FASTER, ["a"]), "first.", reply(BETTER, ["b"]), "second."], at=3)
    with pytest.raises(KeyboardInterrupt):  # killed while the second candidate is written
        run(tmp_path, model, gpu, budget=2)
    assert len([c for c in gpu.calls if c[0] == "check"]) == 2
    out, rundir = run(tmp_path, model, gpu, budget=2, resume=True)
    assert [a.speedup for a in out["attempts"]] == [1.6, 1.7]
    assert [a.index for a in rundir.attempts()] == [1, 2]
    checks = [key for kind, key in gpu.calls if kind == "check"]
    assert len(checks) == 3 and len(set(checks)) == 3  # nothing measured twice
    assert rundir.finished and (rundir.path / "best.py").read_text() == BETTER


# --- the pieces: reading replies, the static check ---


@pytest.mark.parametrize(
    "text",
    [
        reply(FASTER, ["t"]),
        reply(FASTER, ["t"], fence="py"),
        reply(FASTER, ["t"], fence=""),
        f"Sure, here is the file.\n\n{FASTER}\nThis launches one kernel for the relu.\n",
        f"```text\nnot this\n```\n```python\n{FASTER}```",
    ],
    ids=["python", "py", "no-tag", "no-fence", "two-blocks"],
)
def test_replies_are_read_tolerantly(text: str) -> None:
    assert parse_model_new(text).source == FASTER


def test_a_reply_without_model_new_is_refused() -> None:
    with pytest.raises(ReplyError, match="does not define class ModelNew"):
        parse_model_new("```python\nimport torch\nclass Model:\n    pass\n```")
    with pytest.raises(ReplyError, match="no Python source found"):
        parse_model_new("Fuse the linear layer and the relu.")


def test_metadata_is_read_and_a_launch_ignored() -> None:
    meta = '{"tags": ["Kernel-Fusion"], "rationale": "one pass", "launch": {"block": [1]}}'
    proposal = parse_model_new(f"```python\n{FASTER}```\n```json\n{meta}\n```")
    assert proposal.tags == ("kernel-fusion",) and proposal.rationale == "one pass"
    assert proposal.launch is None


@pytest.mark.parametrize(
    ("source", "log"),
    [
        (FASTER, ""),
        (BROKEN, "candidate.py, line 29: error: SyntaxError: expected ':'"),
        (FASTER.replace("class ModelNew(", "class Faster("), "no top-level class ModelNew"),
        ("from m import Model\nModelNew = Model\n", ""),
        (FASTER.replace("def __init__(self, in_features, out_features):", "def __init__(self):"),
         "ModelNew.__init__ takes 0 argument(s) but Model.__init__ takes 2"),
        (FASTER.replace("def __init__(self, in_features, out_features):",
                        "def __init__(self, *args):"), ""),
    ],
    ids=["ok", "syntax", "no-model-new", "alias", "arity", "varargs"],
)  # fmt: skip
def test_the_static_check(task: KernelBenchTask, source: str, log: str) -> None:
    result = check_model_new(source, task.source)
    assert result.backend == "python"
    assert result.ok == (not log)
    assert log in result.log


def test_torch_is_never_imported() -> None:
    """Last in this module: the runs above read candidates, never imported them."""
    assert "torch" not in sys.modules
