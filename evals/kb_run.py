"""`eval kernelbench`'s run: every selected problem of a KernelBench clone through the loop (or,
in a replay, each given ModelNew file through the verifier), one after another, a failing
problem recorded and the run going on. The state file is saved at every change, so an
interrupted run resumes without redoing finished problems (a problem whose loop was cut short
resumes through the loop's own checkpoints).

    OUT/kb-state.json     the plan, how it runs, each problem's status and outcome
    OUT/results.jsonl     one line per finished problem, rewritten as each ends
    OUT/runs/SLUG/        the problem's loop runs (attempts, best.py, summary.md) and
                          checks.jsonl, every verifier report (RecordingGpu: replayable)

What a problem's outcome is: its final kernel, the last one the loop kept (best.py), or, when
it kept none, the fastest correct ModelNew it wrote, or else its last attempt. Only a ModelNew
the model wrote counts: the problem's own Model, which a run that found nothing leaves as
best.py, is not a solution. A problem whose check says it cannot fit, or whose own Model runs
out of GPU memory, is skipped ("needs N GiB"), not failed, and stays out of every denominator.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel

from kernelwright.agent.formats import first_line
from kernelwright.agent.llm import ChatModel
from kernelwright.agent.rundir import attempts_so_far, newest_runs
from kernelwright.agent.settings import Settings
from kernelwright.tools.backend import GpuBackend, RecordingGpu, candidate_key
from kernelwright.tools.errors import KernelwrightError
from kernelwright.tools.kernelbench import (
    KernelBenchCandidate,
    KernelBenchTask,
    load_kernelbench_candidate,
    load_kernelbench_task,
)
from kernelwright.tools.results import Attempt, CheckReport, DeviceInfo, KernelTiming

from . import kb_format
from .kb_baselines import (
    Baselines,
    BaselineTimes,
    LiveBaselines,
    LiveRetimer,
    NeedsGpu,
    Retimer,
    TimingStats,
    differs,
)
from .kb_problems import KbError, KbProblem

STATE_FILE = "kb-state.json"
RESULTS_FILE = "results.jsonl"
Status = Literal["pending", "running", "done", "failed", "skipped"]
FINISHED = ("done", "failed", "skipped")
# Verdicts of a kernel that built and ran (KernelBench's compiled=True).
COMPILED = ("correct", "wrong", "crashed", "timeout", "implausible")
GIB = 1 << 30
OOM = re.compile(
    r"out of memory|OutOfMemoryError|CUDA_ERROR_OUT_OF_MEMORY|cudaErrorMemoryAllocation", re.I
)
SIZE = r"([\d.]+)\s*(GiB|MiB|KiB|GB|MB)"
UNITS = {"GiB": 1.0, "GB": 1.0, "MiB": 1 / 1024, "MB": 1 / 1024, "KiB": 1 / 1024**2}


class ProblemResult(BaseModel):
    """One problem: where it is, its status, and its outcome once evaluated."""

    level: int
    id: int
    name: str  # the file's name, "1_Square_matrix_multiplication_.py"
    path: str
    slug: str
    status: Status = "pending"
    reason: str = ""  # why it failed or was skipped, in one line
    verdict: str = ""  # the final kernel's ("missing": no candidate file)
    compiled: bool = False
    correct: bool = False
    speedup_eager: float | None = None  # median of the verifier's per-round ratios
    speedup_eager_iqr: float | None = None
    speedup_compile: float | None = None  # speedup_eager times compile/eager
    speedup_compile_iqr: float | None = None
    eager: TimingStats | None = None  # the eager reference in the check (mean: the median)
    kernel: TimingStats | None = None  # the final kernel, in that check
    baselines: BaselineTimes | None = None  # the baseline timer's own times
    compile_note: str = ""  # why there is no torch.compile baseline
    kb_speedup: float | None = None  # --timing kernelbench: over eager, KernelBench's protocol
    kb_differs: bool | None = None  # more than 5% from ours
    kb_note: str = ""  # why it was not re-timed
    attempts: int = 0
    stop_reason: str = ""
    wall_s: float = 0.0
    sizes: dict[str, int] = {}
    device: str = ""
    run_dir: str = ""
    candidate: str = ""  # a replay's ModelNew file
    kernel_file: str = ""  # the final kernel, under kernelbench/runs/

    @property
    def scored(self) -> bool:
        """In the denominators: evaluated, correct or not (skipped and unfinished are not)."""
        return self.status in ("done", "failed")

    @property
    def compile_factor(self) -> float | None:
        return self.baselines.compile_factor() if self.baselines is not None else None

    def clear_outcome(self) -> None:
        """Forget a cut-short evaluation's partial outcome (its wall time stays)."""
        keep = {"level", "id", "name", "path", "slug", "status", "wall_s"}
        for name, info in type(self).model_fields.items():
            if name not in keep:
                setattr(self, name, info.get_default(call_default_factory=True))


class KbState(BaseModel):
    version: int = 1
    kb: str  # the clone's root
    commit: str = ""
    modified: bool = False
    levels: list[int]
    subset: str
    mode: Literal["loop", "replay"] = "loop"
    candidates: str | None = None  # a replay's folder of ModelNew files
    budget: int = 10
    minutes: float = 60.0
    plateau: int = 4
    memory: bool = True
    baselines: list[str] = ["eager", "compile"]
    timing: Literal["ours", "kernelbench"] = "ours"
    proposals_by: str = ""
    started: str = ""
    device: str = ""
    problems: list[ProblemResult]

    @classmethod
    def plan(cls, problems: list[KbProblem], **fields: Any) -> KbState:
        return cls(
            started=time.strftime("%Y-%m-%d %H:%M:%S"),
            problems=[
                ProblemResult(level=p.level, id=p.id, name=p.name, path=str(p.path), slug=p.slug)
                for p in problems
            ],
            **fields,
        )

    @classmethod
    def load(cls, out: Path) -> KbState | None:
        """The run kept in `out`, None if none; KernelwrightError if the file is not one."""
        path = out / STATE_FILE
        if not path.is_file():
            return None
        try:
            return cls.model_validate_json(path.read_bytes())
        except (ValueError, OSError) as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise KernelwrightError(
                f"{path} is not a KernelBench run's state ({first}): move it away or choose "
                "another --out"
            ) from None

    def save(self, out: Path) -> None:
        tmp = out / (STATE_FILE + ".tmp")
        tmp.write_text(self.model_dump_json(indent=2))
        os.replace(tmp, out / STATE_FILE)


class KbProgress(Protocol):
    def started(self, index: int, problem: ProblemResult, attempts_done: int) -> None: ...

    def loop_event(self, problem: ProblemResult, event: dict[str, Any]) -> None: ...

    def finished(self, index: int, problem: ProblemResult) -> None: ...

    def note(self, text: str) -> None: ...


class NoKbProgress:
    def started(self, index: int, problem: ProblemResult, attempts_done: int) -> None:
        pass

    def loop_event(self, problem: ProblemResult, event: dict[str, Any]) -> None:
        pass

    def finished(self, index: int, problem: ProblemResult) -> None:
        pass

    def note(self, text: str) -> None:
        pass


@dataclass
class KbTools:
    """What a run measures with: the verifier's GPU, the model (a loop run's), the baseline
    timer and KernelBench's protocol. A live timer that is not available says so once; the run
    then goes on without it."""

    gpu: GpuBackend
    arch: str = "sm_90"
    model: ChatModel | None = None
    baselines: Baselines | None = None
    retimer: Retimer | None = None
    device: DeviceInfo | None = None
    baselines_missing: str = ""  # NeedsGpu's line, once said
    retimer_missing: str = ""
    kb: str = ""  # the clone, whose own KernelBench the live timers run

    def __post_init__(self) -> None:
        src = Path(self.kb) / "src" if self.kb else None
        self.baselines = self.baselines or LiveBaselines(src)
        self.retimer = self.retimer or LiveRetimer(src)


@dataclass
class Outcome:
    """What one problem's evaluation measured, before it is scored."""

    original: CheckReport | None = None  # the problem's own Model checked against itself
    final: CheckReport | None = None  # the final kernel's check
    source: str = ""  # the final kernel ("" when there is none)
    verdict: str = ""
    reason: str = ""
    speedup: float | None = None
    speedup_iqr: float | None = None
    attempts: int = 0
    stop_reason: str = ""
    run_dir: str = ""


def run_eval(
    state: KbState,
    out: Path,
    settings: Settings,
    tools: KbTools,
    progress: KbProgress | None = None,
) -> KbState:
    """Evaluate every problem not yet finished, saving the state after each change; a failure
    is recorded and the run goes on; KeyboardInterrupt leaves the problem running, for a
    resume."""
    ui = progress or NoKbProgress()
    for index, problem in enumerate(state.problems):
        if problem.status in FINISHED:
            continue
        problem.status = "running"
        state.save(out)
        ui.started(index, problem, attempts_done(out, problem))
        try:
            evaluate(problem, state, out, settings, tools, ui)
        finally:
            state.save(out)
        write_results(state, out)
        ui.finished(index, problem)
    return state


def attempts_done(out: Path, problem: ProblemResult) -> int:
    return attempts_so_far(out / "runs" / problem.slug)


def evaluate(
    problem: ProblemResult,
    state: KbState,
    out: Path,
    settings: Settings,
    tools: KbTools,
    ui: KbProgress,
) -> None:
    """One problem, start to end: sets its status and outcome. A failure is recorded, not
    raised; KeyboardInterrupt is raised, the problem left running."""
    start = time.monotonic()
    problem.clear_outcome()
    try:
        _evaluate(problem, state, out, settings, tools, ui)
    except KernelwrightError as exc:
        problem.status, problem.reason = "failed", first_line(str(exc))
    except Exception as exc:  # a bug or a broken tool must not stop the run either
        problem.status, problem.reason = "failed", first_line(f"{type(exc).__name__}: {exc}")
    finally:
        problem.wall_s += time.monotonic() - start
    if problem.device and not state.device:
        state.device = problem.device


def _evaluate(
    p: ProblemResult,
    state: KbState,
    out: Path,
    settings: Settings,
    tools: KbTools,
    ui: KbProgress,
) -> None:
    task = load_kernelbench_task(Path(p.path))
    p.sizes = dict(task.size_globals)
    p.baselines = _baselines(p, task, state, tools, ui)
    total = tools.device.memory_total_bytes if tools.device is not None else None
    need = p.baselines.peak_bytes if p.baselines is not None else None
    if need is not None and total is not None and need > total:
        p.status, p.reason = (
            "skipped",
            f"needs {need / GIB:.1f} GiB (this GPU has {total / GIB:.1f})",
        )
        return
    if state.mode == "replay":
        outcome = _replay(p, task, state, out, tools)
    else:
        outcome = _loop(p, task, state, out, settings, tools, ui)
    _settle(p, task, outcome, state, out, tools, ui)


def _baselines(
    p: ProblemResult, task: KernelBenchTask, state: KbState, tools: KbTools, ui: KbProgress
) -> BaselineTimes | None:
    """The baseline timer's times when torch.compile is asked for; None, with the reason in
    compile_note, when it cannot give them (NeedsGpu is said once, then not asked again)."""
    if "compile" not in state.baselines:
        return None
    if tools.baselines_missing:
        p.compile_note = tools.baselines_missing
        return None
    assert tools.baselines is not None
    try:
        return tools.baselines.time(task)
    except NeedsGpu as exc:
        tools.baselines_missing = p.compile_note = first_line(str(exc))
        ui.note(tools.baselines_missing)
    except Exception as exc:  # the baseline's failure is not the problem's
        p.compile_note = first_line(str(exc))
    return None


def _loop(
    p: ProblemResult,
    task: KernelBenchTask,
    state: KbState,
    out: Path,
    settings: Settings,
    tools: KbTools,
    ui: KbProgress,
) -> Outcome:
    from kernelwright.agent.optimize import optimize

    if tools.model is None:
        raise KernelwrightError("a loop run needs a model (or give --candidates to replay)")
    runs = out / "runs" / p.slug
    runs.mkdir(parents=True, exist_ok=True)
    unfinished, finished = newest_runs(runs)
    if finished is not None and unfinished is None:  # its loop ended before a kill
        run, stop = finished, finished.stop_reason()
    else:
        output, run = optimize(
            p.path,
            settings,
            budget=state.budget,
            max_seconds=state.minutes * 60,
            plateau=state.plateau,
            memory=state.memory,
            resume=unfinished is not None,
            model=tools.model,
            gpu=RecordingGpu(tools.gpu, runs / "checks.jsonl"),
            arch=tools.arch,
            progress=partial(ui.loop_event, p),
            runs_dir=runs,
        )
        stop = str(output.get("stop_reason", ""))
    checks = read_checks(runs / "checks.jsonl")
    attempts = run.attempts()
    final = final_attempt(attempts)
    outcome = Outcome(
        original=checks.get(candidate_key(task, task.reference_candidate())),
        attempts=len(attempts),
        stop_reason=stop,
        run_dir=str(run.path),
    )
    if final is None:
        outcome.verdict, outcome.reason = "missing", "the loop wrote no candidate"
        return outcome
    candidate = KernelBenchCandidate(path=str(run.path / "final.py"), source=final.source)
    outcome.final = checks.get(candidate_key(task, candidate))
    outcome.source, outcome.verdict, outcome.reason = final.source, final.verdict, final.reason
    outcome.speedup, outcome.speedup_iqr = final.speedup, final.speedup_iqr
    return outcome


def final_attempt(attempts: list[Attempt]) -> Attempt | None:
    """The kernel a loop run hands in: the last it kept; else its fastest correct one; else
    its last attempt that built; else its last; None for no attempts."""
    kept = [a for a in attempts if a.kept and a.verdict == "correct" and a.speedup is not None]
    if kept:
        return kept[-1]
    correct = [a for a in attempts if a.verdict == "correct" and a.speedup is not None]
    if correct:
        return max(correct, key=lambda a: a.speedup or 0.0)
    built = [a for a in attempts if a.verdict in COMPILED]
    return (built or attempts or [None])[-1]


def _replay(
    p: ProblemResult, task: KernelBenchTask, state: KbState, out: Path, tools: KbTools
) -> Outcome:
    runs = out / "runs" / p.slug
    runs.mkdir(parents=True, exist_ok=True)
    gpu = RecordingGpu(tools.gpu, runs / "checks.jsonl")
    outcome = Outcome(attempts=1, run_dir=str(runs))
    assert state.candidates is not None
    try:
        path = find_candidate(Path(state.candidates), p.level, p.id, len(state.levels) == 1)
    except KbError as exc:
        outcome.verdict, outcome.reason, outcome.attempts = "missing", str(exc), 0
        path = None
    if path is not None:
        p.candidate = str(path)
        try:
            candidate = load_kernelbench_candidate(path)
        except KernelwrightError as exc:  # not Python, or no ModelNew: KernelBench's compile error
            outcome.verdict, outcome.reason = "compile_error", first_line(str(exc))
        else:
            outcome.source = candidate.source
            outcome.final = report = gpu.check(task, candidate)
            outcome.verdict, outcome.reason = report.verdict, first_line(report.reason)
            if report.ok and report.timing is not None:
                outcome.speedup = report.timing.speedup
                outcome.speedup_iqr = report.timing.speedup_iqr
    if outcome.final is None or outcome.final.timing is None:
        # the eager time for the baseline files, and whether the problem fits this GPU at all
        outcome.original = gpu.check(task, task.reference_candidate())
    return outcome


def _settle(
    p: ProblemResult,
    task: KernelBenchTask,
    outcome: Outcome,
    state: KbState,
    out: Path,
    tools: KbTools,
    ui: KbProgress,
) -> None:
    """Score an evaluation's outcome into the problem, write its final kernel where
    KernelBench looks for it, and re-time it with KernelBench's protocol when asked."""
    original, final = outcome.original, outcome.final
    device = next((r.device for r in (final, original) if r and r.device), tools.device)
    p.device = device.name if device is not None else ""
    p.attempts, p.stop_reason, p.run_dir = outcome.attempts, outcome.stop_reason, outcome.run_dir
    if original is not None and not original.ok:
        if skip := does_not_fit(original):  # said before any trial ran (tools/fit.py)
            p.status, p.reason = "skipped", skip
            return
        if OOM.search(original.reason):
            total = device.memory_total_bytes if device is not None else None
            p.status, p.reason = "skipped", needs_memory(original.reason, total)
            return
        p.status = "failed"
        p.verdict = outcome.verdict or original.verdict
        p.reason = f"the problem's own Model fails its check: {first_line(original.reason)}"
        return
    if outcome.source:
        kernels = out / "kernelbench" / "runs" / kb_format.run_name(p.level)
        kernels.mkdir(parents=True, exist_ok=True)
        path = kernels / kb_format.kernel_file_name(p.level, p.id)
        path.write_text(outcome.source)
        p.kernel_file = str(path)
    p.status, p.verdict = "done", outcome.verdict
    p.compiled = outcome.verdict in COMPILED
    p.correct = outcome.verdict == "correct" and outcome.speedup is not None
    p.reason = "" if p.correct else outcome.reason
    timed = final if final is not None and final.timing is not None else original
    if timed is not None and timed.timing is not None:
        p.eager = stats_of(timed.timing.reference)
    if not p.correct:
        return
    p.speedup_eager, p.speedup_eager_iqr = outcome.speedup, outcome.speedup_iqr
    if final is not None and final.timing is not None:
        p.kernel = stats_of(final.timing.candidate)
    factor = p.compile_factor
    if factor is not None and p.speedup_eager is not None:
        p.speedup_compile = p.speedup_eager * factor
        if p.speedup_eager_iqr is not None:
            p.speedup_compile_iqr = p.speedup_eager_iqr * factor
    elif "compile" in state.baselines and not p.compile_note and p.baselines is not None:
        p.compile_note = p.baselines.compile_error or "torch.compile was not timed"
    if state.timing == "kernelbench":
        _retime(p, task, outcome.source, tools, ui)


def _retime(
    p: ProblemResult, task: KernelBenchTask, source: str, tools: KbTools, ui: KbProgress
) -> None:
    if tools.retimer_missing:
        p.kb_note = tools.retimer_missing
        return
    assert tools.retimer is not None and p.speedup_eager is not None
    candidate = KernelBenchCandidate(path=p.kernel_file or "final.py", source=source)
    try:
        retimed = tools.retimer.retime(task, candidate)
    except NeedsGpu as exc:
        tools.retimer_missing = p.kb_note = first_line(str(exc))
        ui.note(tools.retimer_missing)
        return
    except Exception as exc:  # the re-timing's failure is not the problem's
        p.kb_note = first_line(str(exc))
        return
    p.kb_speedup = retimed.speedup
    p.kb_differs = differs(p.speedup_eager, retimed.speedup)


def stats_of(timing: KernelTiming) -> TimingStats:
    """The verifier's samples in KernelBench's terms: the median stands for the mean (the
    verifier keeps no mean) and IQR / 1.349 for the standard deviation."""
    return TimingStats(
        mean_ms=timing.median_ms,
        std_ms=timing.iqr_ms / 1.349,
        min_ms=timing.min_ms,
        max_ms=timing.max_ms,
        num_trials=timing.samples,
        median_ms=timing.median_ms,
        iqr_ms=timing.iqr_ms,
    )


def does_not_fit(report: CheckReport) -> str:
    """'needs N GiB (this GPU has M free)' for a check that ended before its trials because it
    could not fit (its estimate in `gpu_bytes`, tools/fit.py), or the check's own line where it
    gave no estimate (host memory); "" for a check that did not end so."""
    if report.verdict != "error" or not report.reason.startswith("does not fit:"):
        return ""
    need = report.gpu_bytes.get("gpu_needed_bytes")
    free = report.gpu_bytes.get("gpu_free_at_start_bytes")
    if need is None or free is None or need <= free:
        return "cannot fit: " + report.reason.removeprefix("does not fit:").strip()
    return f"needs {need / GIB:.1f} GiB (this GPU has {free / GIB:.1f} free)"


def needs_memory(reason: str, total_bytes: int | None) -> str:
    """'needs N GiB' from an out-of-memory message (torch's: what the process held plus what
    it tried to allocate), with what the GPU has."""
    tried = re.search(r"Tried to allocate " + SIZE, reason)
    held = re.search(r"this process has " + SIZE + r" memory in use", reason)
    capacity = re.search(r"total capacity of " + SIZE, reason)
    has = total_bytes / GIB if total_bytes else _gib(capacity) if capacity else None
    tail = f" (this GPU has {has:.1f})" if has else ""
    if tried is None:
        return "needs more GPU memory than this GPU has (out of memory)" + (
            f": it has {has:.1f} GiB" if has else ""
        )
    need = _gib(tried) + (_gib(held) if held else 0.0)
    return f"needs {'' if held else 'more than '}{need:.1f} GiB" + tail


def _gib(m: re.Match[str]) -> float:
    return float(m.group(1)) * UNITS.get(m.group(2), 1.0)


def find_candidate(folder: Path, level: int, problem_id: int, one_level: bool) -> Path:
    """A replay's ModelNew file for a problem: KernelBench's own name
    (level_L_problem_I_sample_0_kernel.py) in the folder or its levelL/ folder, else ID.py or
    ID_*.py in levelL/ (or level_L/), else, when one level is evaluated, in the folder itself.
    KbError when there is none, or several at the first place that has one."""
    kb_name = kb_format.kernel_file_name(level, problem_id)
    subdirs = [folder / f"level{level}", folder / f"level_{level}"]
    places: list[list[Path]] = [[folder / kb_name, *(d / kb_name for d in subdirs)]]
    places += [_by_id(d, problem_id) for d in subdirs]
    if one_level:
        places.append(_by_id(folder, problem_id))
    for found in places:
        found = [f for f in found if f.is_file()]
        if len(found) > 1:
            names = ", ".join(str(f.relative_to(folder)) for f in found)
            raise KbError(f"several candidates for level {level} problem {problem_id}: {names}")
        if found:
            return found[0]
    raise KbError(
        f"no candidate for level {level} problem {problem_id} in {folder} "
        f"(looked for {kb_name}, level{level}/{problem_id}.py and level{level}/{problem_id}_*.py)"
    )


def _by_id(folder: Path, problem_id: int) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted([*folder.glob(f"{problem_id}.py"), *folder.glob(f"{problem_id}_*.py")])


def read_checks(path: Path) -> dict[str, CheckReport]:
    """Every check a RecordingGpu kept, by candidate key (the last of a key wins)."""
    if not path.is_file():
        return {}
    out: dict[str, CheckReport] = {}
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        if row.get("kind") == "check":
            out[row["key"]] = CheckReport.model_validate(row["value"])
    return out


def result_row(p: ProblemResult) -> dict[str, Any]:
    """results.jsonl's line for a problem: both speedups with their spread, times in ms,
    attempts, wall time, and why it failed or was skipped."""
    factor = p.compile_factor
    eager_ms = p.eager.mean_ms if p.eager is not None else None
    return {
        "level": p.level,
        "id": p.id,
        "name": p.name,
        "status": p.status,
        "verdict": p.verdict,
        "compiled": p.compiled,
        "correct": p.correct,
        "reason": p.reason,
        "speedup_eager": p.speedup_eager,
        "speedup_eager_iqr": p.speedup_eager_iqr,
        "speedup_compile": p.speedup_compile,
        "speedup_compile_iqr": p.speedup_compile_iqr,
        "eager_ms": eager_ms,
        "compile_ms": eager_ms * factor if eager_ms is not None and factor else None,
        "kernel_ms": p.kernel.mean_ms if p.kernel is not None else None,
        "kernel_iqr_ms": p.kernel.iqr_ms if p.kernel is not None else None,
        "compile_note": p.compile_note,
        "kb_speedup": p.kb_speedup,
        "kb_differs": p.kb_differs,
        "kb_note": p.kb_note,
        "attempts": p.attempts,
        "stop_reason": p.stop_reason,
        "wall_s": round(p.wall_s, 3),
        "sizes": p.sizes,
        "device": p.device,
        "candidate": p.candidate,
        "kernel_file": p.kernel_file,
        "run_dir": p.run_dir,
    }


def write_results(state: KbState, out: Path) -> None:
    """results.jsonl: a line per finished problem, in the plan's order."""
    lines = [json.dumps(result_row(p)) for p in state.problems if p.status in FINISHED]
    tmp = out / (RESULTS_FILE + ".tmp")
    tmp.write_text("".join(line + "\n" for line in lines))
    os.replace(tmp, out / RESULTS_FILE)
