"""The jobs every front door calls, and the machine they run on (GPU backend and model, made on
first use or handed in by tests): check a candidate, measure a kernel, optimize, search the
memory. `kernelwright check` and `optimize`, chat, MCP and the stand-ins all go through these,
so a door differs from another only in what it reads and how it shows the result."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from kernelwright.agent.kinds import kind_of
from kernelwright.agent.llm import ChatModel, Message, ScriptedLLM, make_model
from kernelwright.agent.settings import Settings
from kernelwright.tools.backend import GpuBackend
from kernelwright.tools.errors import KernelwrightError
from kernelwright.tools.results import Attempt, CheckReport, ProfileResult
from kernelwright.tools.task import (
    Candidate,
    Task,
    load_candidate,
    load_task,
    reference_candidate,
)

if TYPE_CHECKING:  # the loop's context (LangGraph, the memory's Chroma) loads with `optimize`
    from kernelwright.agent.context import Progress
    from kernelwright.agent.tune import Tuning
    from kernelwright.tools.pool import Pool
    from kernelwright.tools.spec import CudaCandidate, CudaTask


class DoorError(KernelwrightError):
    """A job a door was asked for cannot be done as asked: the message says why."""


class Machine:
    """The GPU backend and the model the doors use. Each is made on first use (a GPU or an
    Ollama server is needed only by the jobs that use it) unless one was handed in."""

    def __init__(
        self,
        settings: Settings,
        *,
        gpu: GpuBackend | None = None,
        model: ChatModel | None = None,
        arch: str | None = None,
        stand_in_note: str = "",
        prestart: bool = True,
        progress: Callable[[str], None] | None = None,
        pool: Pool | None = None,
    ) -> None:
        """`prestart` and `progress` are for the GPU made here: start the next check's workers
        during a check (for doors that check again and again), and hear each check's steps.
        `pool`: options.head_start's, for that GPU (closed with this machine)."""
        self.settings = settings
        self._pool = pool
        self._gpu, self._model, self._arch = gpu, model, arch
        self._prestart, self._progress = prestart, progress
        self._own_gpu = gpu is None
        self._model_ready = model is not None
        self.stand_in_note = stand_in_note  # says, for people, what stands in for what

    def gpu(self) -> GpuBackend:
        if self._gpu is None:
            from kernelwright.agent.options import local_gpu
            from kernelwright.tools import nvml

            info = nvml.device_info()  # NoGpuError with the reason
            self._arch = self._arch or info.arch
            self._gpu = local_gpu(
                self.settings, prestart=self._prestart, progress=self._progress, pool=self._pool
            )
            self._pool = None  # the GPU's own now, closed with it
        return self._gpu

    def missing(self) -> list[str]:
        """What this machine lacks for the jobs, said at a session's start (nothing for parts
        handed in): a GPU, and a reachable Ollama."""
        notes = []
        if self._gpu is None:
            from kernelwright.tools import nvml
            from kernelwright.tools.errors import NoGpuError

            try:
                nvml.device_info()
            except NoGpuError as exc:
                notes.append(f"no GPU ({exc}): checks, profiles and runs need one")
        if self._model is None and self.settings.provider == "ollama":
            import httpx

            from kernelwright.agent.ollama_tags import NotOllama, pulled_models, tagged

            base = self.settings.ollama_base_url.rstrip("/")
            try:
                if tagged(self.settings.model) not in pulled_models(base, 1.0):
                    notes.append(
                        f"{self.settings.model} is not pulled at {base}: questions and runs "
                        f"need it (ollama pull {self.settings.model})"
                    )
            except (httpx.HTTPError, httpx.InvalidURL):
                notes.append(
                    f"Ollama not reachable at {base}: questions and runs need it (ollama serve)"
                )
            except NotOllama:
                notes.append(f"{base} answered, but not as Ollama does: set ollama_base_url")
        return notes

    @property
    def arch(self) -> str:
        self.gpu()
        return self._arch or "sm_90"

    def model(self) -> ChatModel:
        if self._model is None:
            self._model = make_model(self.settings)
        if not self._model_ready:
            self._model.ensure_ready()  # ModelError with the fix; tried again on the next use
            self._model_ready = True
        return self._model

    @property
    def voice(self) -> str:
        """Who answers, as a person should read it."""
        if isinstance(self._model, ScriptedLLM):
            return "scripted stand-in"
        return f"{self.settings.model}"

    def drop_gpu(self) -> None:
        """Forget a GPU backend that a stopped run may have left mid-check (ours only)."""
        if self._own_gpu and self._gpu is not None:
            self._gpu.close()
            self._gpu = None

    def close(self) -> None:
        if self._gpu is not None:
            self._gpu.close()
        if self._pool is not None:  # started early, and no GPU was made to take it
            self._pool.close()
            self._pool = None


# --- the jobs ---


def parse_candidate(task: Task, candidate: str | None) -> Candidate:
    """A candidate given as a path to a file or as source text; None: the task's own kernel."""
    if candidate is None or not candidate.strip():
        return reference_candidate(task)
    text = candidate.strip()
    if "\n" not in text and Path(text).suffix in (".cu", ".py"):
        return load_candidate(task, Path(text).expanduser())
    return kind_of(task).from_text(task, candidate)


def check(
    machine: Machine,
    task: Task,
    candidate: Candidate,
    *,
    sanitize: bool = False,
    profile: bool = False,
    step: Callable[[str], None] | None = None,
) -> CheckReport:
    """Verify and time a candidate; a verdict that is not correct is a report, not an error.
    If it is correct: `sanitize` also runs compute-sanitizer (a finding makes it wrong, and a
    sanitizer that could not run says why in report.sanitizer), then `profile` adds Nsight
    Compute's profile. `step` hears which of these is running."""
    gpu = machine.gpu()
    report = gpu.check(task, candidate)
    if sanitize and report.ok:
        if step:
            step("compute-sanitizer (several minutes at most)")
        report = report.with_sanitizer(gpu.sanitize(task, candidate))
    if profile and report.ok:
        if step:
            step("profiling with Nsight Compute")
        report = report.model_copy(update={"profile": gpu.profile(task, candidate)})
    return report


def check_compiled(machine: Machine, task: Task, candidate: Candidate) -> CheckReport:
    """`check` for a conversation (chat, MCP): source that does not compile is refused with the
    compiler's own words, as a DoorError. A CUDA candidate is compiled first, in a worker, so
    that is said before a GPU is asked for."""
    entry = task.compile_entry  # None: a kind whose candidate is not compiled on its own
    if entry is not None and candidate.kind == task.kind:  # a C++ task's function: not a kernel
        from kernelwright.tools.compile import compile_in_sandbox

        machine.gpu()  # the GPU's own error first, and the architecture to compile for
        compiled, _ = compile_in_sandbox(
            candidate.source, entry, machine.arch, machine.settings.compile_backend
        )
        if not compiled.ok:
            raise DoorError(compile_problem(compiled.log))
    report = check(machine, task, candidate)
    if report.verdict == "compile_error":
        log = report.compile.log if report.compile else report.reason
        raise DoorError(compile_problem(log))
    return report


def compile_problem(log: str, lines: int = 12) -> str:
    errors = [ln.strip() for ln in log.splitlines() if "error" in ln.lower()]
    shown = errors[:lines] or log.strip().splitlines()[:lines] or ["compile failed"]
    return "the candidate does not compile:\n" + "\n".join(shown)


@dataclass(frozen=True)
class Measured:
    """The task's own kernel, timed (against itself) and profiled."""

    report: CheckReport
    profile: ProfileResult

    def lines(self) -> list[str]:
        t = self.report.timing
        out: list[str] = []
        if t is not None:
            out.append(
                f"time: {t.candidate.median_ms:.4f} ms ± {t.candidate.iqr_ms / 2:.4f} "
                f"(median ± half IQR, {t.candidate.samples} samples)"
            )
            if t.floor_ms:
                out.append(
                    f"roofline: floor {t.floor_ms:.4f} ms, the kernel runs at "
                    f"{t.floor_ms / t.candidate.median_ms:.0%} of the bound"
                )
        elif not self.report.ok:
            out.append(f"check: {self.report.verdict}: {self.report.reason}")
        c = self.report.compile
        if c is not None and c.ok and c.registers is not None:
            out.append(
                f"resources: {c.registers} registers, {c.shared_mem_bytes} B shared, "
                f"{(c.spill_stores_bytes or 0) + (c.spill_loads_bytes or 0)} B spilled"
            )
        p = self.profile
        if p.available:
            out.append(
                f"bottleneck: {p.bottleneck} (SM {p.sm_pct or 0:.0f}%, DRAM {p.dram_pct or 0:.0f}%"
                f", occupancy {p.achieved_occupancy_pct or 0:.0f}% of "
                f"{p.theoretical_occupancy_pct or 0:.0f}%, {p.registers_per_thread} registers)"
            )
        else:
            reason = p.reason or "profiling unavailable"
            if not reason.startswith("profiling unavailable"):
                reason = f"profiling unavailable: {reason}"
            out.append(reason)
        return out


def measure(machine: Machine, task: Task) -> Measured:
    """Time the task's own kernel (against itself: 1.00x), then profile it."""
    gpu = machine.gpu()
    candidate = reference_candidate(task)
    report = gpu.check(task, candidate)
    profile = gpu.profile(task, candidate) if report.ok else ProfileResult(available=False)
    return Measured(report, profile)


@dataclass(frozen=True)
class RunOutcome:
    task: str
    run_dir: Path
    finished: bool
    stop_reason: str
    attempts: list[Attempt]
    best_source: str
    best_launch: dict[str, Any] | None
    best_speedup: float
    choices: list[Any]  # the search's choices (agent.experience.TechniqueChoice), in order
    # what tuning the best kernel found (agent.tune.Tuning.as_json, or {"error": why}); None:
    # not tuned (--no-tune, a KernelBench problem, a run stopped before its end)
    tune: dict[str, Any] | None = None

    @property
    def summary(self) -> str:
        path = self.run_dir / "summary.md"
        return path.read_text() if path.is_file() else ""


class GuidedModel:
    """A model that is told, in every request, which technique the user asked for."""

    def __init__(self, inner: ChatModel, hint: str) -> None:
        self.inner, self.hint, self.name = inner, hint, inner.name

    def ensure_ready(self) -> None:
        self.inner.ensure_ready()

    def complete(self, messages: list[Message]) -> str:
        from kernelwright.prompts.render import render

        (hint,) = render("technique_hint", hint=self.hint)
        note = "\n\n" + hint["content"]
        *head, last = messages
        if last["role"] == "user":
            last = Message(role="user", content=last["content"] + note)
        return self.inner.complete([*head, last])


def optimize(
    machine: Machine,
    task_path: Path,
    *,
    budget: int,
    progress: Progress,
    hint: str = "",
    resume: bool = False,
    plateau: int = 4,
    max_seconds: float = 3600.0,
    memory: bool | None = None,
    tune: bool | None = None,
) -> RunOutcome:
    """Run the loop on a task with this machine's GPU and model, then tune its best kernel. A
    run stopped by KeyboardInterrupt (or by an exception a progress callback raises) stays
    resumable, and `stopped_run` reads what it measured. `memory` False: without the memory;
    `tune` False: the best kernel left untuned (None, each: as the settings say)."""
    from kernelwright.agent.optimize import optimize as run_loop
    from kernelwright.agent.optimize import resumable

    task = load_task(task_path)  # a bad task says so before a GPU or a model wakes
    if resume:
        resumable(machine.settings, task)  # and a missing run to resume, too
    gpu, arch = machine.gpu(), machine.arch
    model: ChatModel = machine.model()
    if hint:
        model = GuidedModel(model, hint)
    output, run = run_loop(
        task_path,
        machine.settings,
        budget=budget,
        plateau=plateau,
        resume=resume,
        model=model,
        gpu=gpu,
        arch=arch,
        progress=progress,
        max_seconds=max_seconds,
        memory=memory,
        tune=tune,
    )
    return outcome_of(run.path, output)


def stopped_run(settings: Settings, task: Task) -> RunOutcome | None:
    """The newest unfinished run of a task: the one a stop just left."""
    from kernelwright.agent.rundir import RunDir

    run = RunDir.latest_unfinished(settings.data_dir / "runs", task.name)
    return outcome_of(run.path) if run is not None else None


def outcome_of(run_dir: Path, output: dict[str, Any] | None = None) -> RunOutcome:
    """What a run found, from its output or, for a stopped run, from its directory."""
    from kernelwright.agent.rundir import RunDir

    run = RunDir(run_dir)
    attempts = list((output or {}).get("attempts") or run.attempts())
    kept = [a for a in attempts if a.kept]
    best = kept[-1] if kept else None
    original = run.best_file
    tuned = run.path / "tune.json"
    return RunOutcome(
        task=str(run.meta.get("task", "")),
        run_dir=run_dir,
        finished=run.finished,
        stop_reason=str((output or {}).get("stop_reason") or ("" if run.finished else "stopped")),
        attempts=attempts,
        best_source=best.source if best else original.read_text() if original.is_file() else "",
        best_launch=best.launch if best else None,
        best_speedup=(best.speedup or 1.0) if best else 1.0,
        choices=list((output or {}).get("choices") or []),
        tune=json.loads(tuned.read_text()) if tuned.is_file() else None,
    )


def tune(
    machine: Machine,
    task: Task,
    candidate: Candidate,
    *,
    budget: int | None = None,
    max_seconds: float | None = None,
    numerics: bool | None = None,
    memory: bool | None = None,
    progress: Callable[[str], None] | None = None,
) -> Tuning:
    """Search a correct CUDA kernel's knobs, block shape and compile options on this machine's
    GPU (agent/tune.py), earlier winners on its architecture first; the limits not given are
    the settings' [tune]."""
    import time

    from kernelwright.agent.tune import remembered_tune

    if not kind_of(task).tunable:
        raise DoorError(
            f"tune searches a CUDA kernel's compile options; {task.name} is a {task.kind} task, "
            "whose candidates build their own CUDA"
        )
    gpu = machine.gpu()
    return remembered_tune(
        machine.settings,
        cast("CudaTask", task),
        cast("CudaCandidate", candidate),
        gpu,
        arch=machine.arch,
        run_id=f"{task.name}-tune-{time.strftime('%Y%m%d-%H%M%S')}",
        memory=memory,
        budget=budget,
        max_seconds=max_seconds,
        numerics=numerics,
        progress=progress,
    )


# --- memory ---


@dataclass(frozen=True)
class MemoryAnswer:
    where: str
    note: str  # how the memory was found, or why it has nothing
    episodes: list[Any]  # kernelwright.memory.store.Episode


def search_memory(settings: Settings, query: str, n: int = 5) -> MemoryAnswer:
    """The stored attempts nearest to `query` (CUDA source or words), from the memory the
    settings name (a `chroma run` server, or the memory directory)."""
    from kernelwright.agent.experience import open_store

    url = settings.memory.url
    where = str(url or settings.memory_dir)
    if not url and not settings.memory_dir.is_dir():
        return MemoryAnswer(where, f"nothing stored yet at {where}", [])
    try:
        with open_store(settings) as store:
            episodes = store.search(query, n=n)
    except KernelwrightError:
        raise
    except Exception as exc:  # Chroma's own errors: a server down, a directory it cannot read
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise DoorError(f"the memory at {where} cannot be searched: {first}") from None
    note = "" if episodes else f"nothing stored yet at {where}"
    return MemoryAnswer(where, note, episodes)
