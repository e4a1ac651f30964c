"""The optimization loop end to end on the CPU: scripted replies, real NVRTC compiles in the
sandbox, and verifier reports recorded as a GPU would give them (ReplayGpu)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kernelwright.agent.llm import Message, ScriptedLLM
from kernelwright.agent.nodes.common import as_candidate
from kernelwright.agent.optimize import optimize
from kernelwright.agent.settings import Settings
from kernelwright.tools import sanitize
from kernelwright.tools.backend import ReplayGpu
from kernelwright.tools.results import CheckReport, KernelTiming, SanitizeResult, TimingResult
from kernelwright.tools.spec import CudaTask
from kernelwright.tools.task import load_task, reference_candidate
from tests.conftest import EXAMPLES

GELU = EXAMPLES / "gelu"
FASTER = (GELU / "candidates" / "faster.cu").read_text()
WRONG = (GELU / "candidates" / "wrong.cu").read_text()
FASTER_LAUNCH = {"block": ["256"], "grid": ["ceil_div(N, 1024)"], "shared_mem_bytes": "0"}


def reply(source: str, launch: dict[str, Any] | None, tags: list[str]) -> str:
    meta = {"tags": tags, "rationale": "scripted"} | ({"launch": launch} if launch else {})
    return f"Here it is.\n```cuda\n{source}\n```\n```json\n{json.dumps(meta)}\n```\n"


def report(
    task: Any,
    verdict: str,
    speedup: float | None,
    reason: str = "ok",
    *,
    ref_ms: float = 0.11,
    floor_ms: float | None = 0.04,
    candidate: str = "candidate.cu",
) -> CheckReport:
    """A recorded check of a candidate (a CUDA task's by default; any task's by name)."""
    timing = None
    if speedup is not None:
        ref = KernelTiming(
            median_ms=ref_ms, iqr_ms=0.002, min_ms=ref_ms - 0.01, max_ms=ref_ms + 0.02, samples=100
        )
        cand = ref.model_copy(update={"median_ms": ref_ms / speedup})
        timing = TimingResult(
            reference=ref,
            candidate=cand,
            speedup=speedup,
            speedup_iqr=0.01,
            rounds=100,
            input_sets=4,
            l2_flush_bytes=100 << 20,
            floor_ms=floor_ms,
        )
    return CheckReport(
        task=task.name,
        candidate=candidate,
        verdict=verdict,  # type: ignore[arg-type]
        reason=reason,
        timing=timing,
    )


@pytest.fixture
def gelu(nvrtc: None) -> CudaTask:
    task = load_task(GELU)
    assert isinstance(task, CudaTask)
    return task


def replay_for(
    task: CudaTask, entries: list[tuple[str, dict[str, Any] | None, CheckReport]]
) -> ReplayGpu:
    gpu = ReplayGpu()
    gpu.add(task, reference_candidate(task), report(task, "correct", 1.0))
    for source, launch, rep in entries:
        gpu.add(task, as_candidate(task, source, launch), rep)
    return gpu


def run(
    tmp_path: Path, model: ScriptedLLM, gpu: ReplayGpu, **kw: Any
) -> tuple[dict[str, Any], Any]:
    settings = Settings(data_dir=tmp_path)
    return optimize(GELU, settings, model=model, gpu=gpu, arch="sm_90", **kw)


def test_faster_kept_wrong_rejected_compile_error_repaired(tmp_path: Path, gelu: CudaTask) -> None:
    fixed = FASTER.replace("// ", "// repaired: ", 1)
    gpu = replay_for(
        gelu,
        [
            (FASTER, FASTER_LAUNCH, report(gelu, "correct", 1.3)),
            (
                WRONG,
                FASTER_LAUNCH,
                report(gelu, "wrong", None, "output 'y' not fully written"),
            ),  # inherits the best launch
            (fixed, FASTER_LAUNCH, report(gelu, "correct", 1.31)),
        ],
    )
    broken = FASTER.replace("tanhf", "tanhff")
    model = ScriptedLLM(
        [
            reply(FASTER, FASTER_LAUNCH, ["16-byte vector loads and stores"]),
            "Vector loads helped.",
            reply(WRONG, None, ["grid-stride loop"]),
            "It skipped the last element.",
            reply(broken, FASTER_LAUNCH, ["loop unrolling"]),
            reply(fixed, FASTER_LAUNCH, ["loop unrolling"]),
            "No real change.",
        ]
    )
    out, rundir = run(tmp_path, model, gpu, budget=3, plateau=5)
    attempts = out["attempts"]
    assert [a.verdict for a in attempts] == ["correct", "wrong", "correct"]
    assert [a.kept for a in attempts] == [True, False, True]  # 1.31 > 1.3 * 1.005
    assert attempts[2].repairs == 1
    assert out["best_speedup"] == pytest.approx(1.31)
    assert out["stop_reason"] == "budget: 3 candidates tried"
    assert (rundir.path / "best.cu").read_text() == fixed
    assert "ceil_div(N, 1024)" in (rundir.path / "best.toml").read_text()
    assert len(rundir.attempts()) == 3
    summary = (rundir.path / "summary.md").read_text()
    assert "best: 1.31x" in summary and "It skipped the last element." in summary
    repair_prompt = model.prompts[5][-1]["content"]
    assert "did not compile" in repair_prompt and "tanhff" in repair_prompt
    earlier = model.prompts[4][-1]["content"]  # the third proposal sees the first two outcomes
    # the model's tags in the catalogue's spelling
    assert "#1 [vector-access-16b] correct, 1.30x" in earlier
    assert "#2 [grid-stride] wrong" in earlier


def test_a_wrong_candidate_never_replaces_the_best_and_plateau_stops(
    tmp_path: Path, gelu: CudaTask
) -> None:
    slower = FASTER.replace("// ", "// slower: ", 1)
    gpu = replay_for(
        gelu,
        [
            (WRONG, None, report(gelu, "wrong", None, "output 'y' wrong")),
            (slower, FASTER_LAUNCH, report(gelu, "correct", 0.9)),
        ],
    )
    model = ScriptedLLM(
        [reply(WRONG, None, ["x"]), "wrong.", reply(slower, FASTER_LAUNCH, ["y"]), "slower."]
    )
    out, rundir = run(tmp_path, model, gpu, budget=10, plateau=2)
    assert out["stop_reason"] == "plateau: 2 candidates without a 2% gain"
    assert out["best_speedup"] == 1.0 and not any(a.kept for a in out["attempts"])
    assert (rundir.path / "best.cu").read_text() == gelu.source


def test_a_faster_kernel_the_sanitizer_did_not_finish_on_is_not_kept(
    tmp_path: Path, gelu: CudaTask
) -> None:
    """A kernel that hangs only under compute-sanitizer got "did not run", and the gate kept
    it as the run's best; one whose sanitizer is not installed is kept, and the run says so."""
    hung = {t: "timed out after 600 s" for t in sanitize.TOOLS}
    unfinished = sanitize.judge({"type": "sanitized", "tools": hung}, [{"N": 1000}])
    slower = FASTER.replace("// ", "// slower: ", 1)
    gpu = replay_for(
        gelu,
        [
            (FASTER, FASTER_LAUNCH, report(gelu, "correct", 1.3)),
            (slower, FASTER_LAUNCH, report(gelu, "correct", 1.2)),
        ],
    )
    gpu.add(gelu, as_candidate(gelu, FASTER, FASTER_LAUNCH), unfinished)
    absent = SanitizeResult(available=False, reason="compute-sanitizer is not installed")
    gpu.add(gelu, as_candidate(gelu, slower, FASTER_LAUNCH), absent)
    model = ScriptedLLM(
        [reply(FASTER, FASTER_LAUNCH, ["x"]), "hung.", reply(slower, FASTER_LAUNCH, ["y"]), "ok."]
    )
    said: list[Any] = []
    out, rundir = run(tmp_path, model, gpu, budget=2, plateau=5, progress=said.append)
    first, second = out["attempts"]
    assert first.verdict == "timeout" and not first.kept
    assert first.reason.startswith("compute-sanitizer did not finish on this candidate")
    assert second.verdict == "correct" and second.kept and out["best_speedup"] == 1.2
    assert (rundir.path / "best.cu").read_text() == slower
    messages = [e.get("message", "") for e in said if isinstance(e, dict)]
    assert "candidate 2 goes unsanitized: compute-sanitizer is not installed" in messages


def test_unusable_reply_gets_one_repair_round_then_counts_as_an_attempt(
    tmp_path: Path, gelu: CudaTask
) -> None:
    model = ScriptedLLM(["I think you should use shared memory.", "Still no code, sorry."])
    out, _ = run(tmp_path, model, replay_for(gelu, []), budget=1)
    (attempt,) = out["attempts"]
    assert attempt.verdict == "error" and attempt.reason.startswith("no usable kernel in the reply")
    assert len(model.prompts) == 2  # the reply, one repair round, and no reflect on nothing


def test_compile_repairs_are_bounded(tmp_path: Path, gelu: CudaTask) -> None:
    broken = [FASTER.replace("tanhf", f"tanh{i}") for i in range(3)]
    model = ScriptedLLM(
        [reply(b, FASTER_LAUNCH, ["unroll"]) for b in broken] + ["It never compiled."]
    )
    out, _ = run(tmp_path, model, replay_for(gelu, []), budget=1, max_repairs=2)
    (attempt,) = out["attempts"]
    assert attempt.verdict == "compile_error" and "tanh2" in attempt.reason
    assert attempt.repairs == 3


class KilledAt(ScriptedLLM):
    """Dies like a killed process at request number `at`."""

    def __init__(self, replies: list[str], at: int) -> None:
        super().__init__(replies)
        self.at = at

    def complete(self, messages: list[Message]) -> str:
        if len(self.prompts) + 1 == self.at:
            raise KeyboardInterrupt
        return super().complete(messages)


def test_a_killed_run_resumes_without_re_measuring(tmp_path: Path, gelu: CudaTask) -> None:
    second = FASTER.replace("// ", "// second: ", 1)
    gpu = replay_for(
        gelu,
        [
            (FASTER, FASTER_LAUNCH, report(gelu, "correct", 1.3)),
            (second, FASTER_LAUNCH, report(gelu, "correct", 1.4)),
        ],
    )
    script = [
        reply(FASTER, FASTER_LAUNCH, ["a"]),
        "first.",
        reply(second, FASTER_LAUNCH, ["b"]),
        "second.",
    ]
    with pytest.raises(KeyboardInterrupt):  # killed while the second candidate is being written
        run(tmp_path, KilledAt(script, at=3), gpu, budget=2)
    checks_before = [c for c in gpu.calls if c[0] == "check"]
    assert len(checks_before) == 2  # the original and candidate 1
    out, rundir = run(tmp_path, ScriptedLLM(script[2:]), gpu, budget=2, resume=True)
    assert [a.speedup for a in out["attempts"]] == [1.3, 1.4]
    checks = [c for c in gpu.calls if c[0] == "check"]
    assert len(checks) == 3  # only the new candidate was measured after the resume
    assert out["best_speedup"] == 1.4 and rundir.finished


def test_resume_without_an_unfinished_run_says_so(tmp_path: Path, gelu: CudaTask) -> None:
    from kernelwright.tools.errors import KernelwrightError

    with pytest.raises(KernelwrightError, match="no unfinished run of gelu"):
        run(tmp_path, ScriptedLLM([]), replay_for(gelu, []), resume=True)


class Killable(ScriptedLLM):
    """A script shared across restarts; raises KeyboardInterrupt (a kill) at one request."""

    def __init__(self, replies: list[str], kill_at: int | None) -> None:
        super().__init__(replies)
        self.kill_at = kill_at

    def complete(self, messages: list[Message]) -> str:
        if self.kill_at is not None and len(self.prompts) + 1 == self.kill_at:
            self.kill_at = None
            self.prompts.append(messages)  # asked, never answered
            raise KeyboardInterrupt
        return super().complete(messages)


class KillableGpu(ReplayGpu):
    def __init__(self, base: ReplayGpu, kill_at_check: int | None) -> None:
        super().__init__(base.checks, base.profiles)
        self.kill_at_check = kill_at_check

    def check(self, task: Any, candidate: Any) -> CheckReport:
        if (
            self.kill_at_check is not None
            and len([c for c in self.calls if c[0] == "check"]) + 1 == self.kill_at_check
        ):
            self.kill_at_check = None
            raise KeyboardInterrupt
        return super().check(task, candidate)


@pytest.mark.parametrize(
    ("model_kill", "gpu_kill"),
    [(1, None), (2, None), (3, None), (4, None), (None, 1), (None, 2), (None, 3)],
    ids=[
        "propose-1",
        "reflect-1",
        "propose-2",
        "reflect-2",
        "check-original",
        "check-1",
        "check-2",
    ],
)
def test_killed_anywhere_resumes_and_loses_no_verified_attempt(
    tmp_path: Path, gelu: CudaTask, model_kill: int | None, gpu_kill: int | None
) -> None:
    second = FASTER.replace("// ", "// second: ", 1)
    base = replay_for(
        gelu,
        [
            (FASTER, FASTER_LAUNCH, report(gelu, "correct", 1.3)),
            (second, FASTER_LAUNCH, report(gelu, "correct", 1.4)),
        ],
    )
    gpu = KillableGpu(base, gpu_kill)
    script = [
        reply(FASTER, FASTER_LAUNCH, ["a"]),
        "first.",
        reply(second, FASTER_LAUNCH, ["b"]),
        "second.",
    ]
    model = Killable(script, model_kill)
    with pytest.raises(KeyboardInterrupt):
        run(tmp_path, model, gpu, budget=2)
    finished = [a.index for a in _only_run(tmp_path).attempts()]
    out, rundir = run(tmp_path, model, gpu, budget=2, resume=True)
    assert [a.speedup for a in out["attempts"]] == [1.3, 1.4]
    assert [a.index for a in rundir.attempts()] == [1, 2]  # none lost, none written twice
    checks = [key for kind, key in gpu.calls if kind == "check"]
    if gpu_kill != 1:  # the original was measured before the kill: never again
        assert checks.count(checks[0]) == 1
    if finished:  # a verified attempt finished before the kill is never measured again
        assert checks.count(checks[1]) == 1
    assert out["best_speedup"] == 1.4 and rundir.finished


def _only_run(data: Path) -> Any:
    from kernelwright.agent.rundir import RunDir

    (path,) = (data / "runs").iterdir()
    return RunDir(path)
