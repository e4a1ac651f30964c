"""Run the optimization loop on one task (a CUDA task or a KernelBench problem): a new run, or
the unfinished one resumed from its SQLite checkpoints. The front doors (CLI, batch, chat and
MCP) call this."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any, cast

from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver

from kernelwright.agent.context import LoopContext, Progress
from kernelwright.agent.experience import TechniqueChoice, open_memory
from kernelwright.agent.graph import build
from kernelwright.agent.kinds import kind_of
from kernelwright.agent.llm import ChatModel, make_model
from kernelwright.agent.options import local_gpu
from kernelwright.agent.replies import Proposal
from kernelwright.agent.rundir import RunDir
from kernelwright.agent.settings import Settings
from kernelwright.agent.state import LoopInput
from kernelwright.agent.tune import after_run
from kernelwright.memory.contrastive import CHARS_PER_TOKEN
from kernelwright.tools.backend import GpuBackend
from kernelwright.tools.builds import BuildCache
from kernelwright.tools.errors import KernelwrightError
from kernelwright.tools.results import (
    Attempt,
    CheckReport,
    CheckResult,
    ClockSample,
    CompileResult,
    DeviceInfo,
    KernelTiming,
    ProfileResult,
    TimingResult,
    TrialResult,
)
from kernelwright.tools.spec import CudaTask
from kernelwright.tools.task import Task, load_task

# The only classes a checkpoint may bring back: our frozen values, nothing else.
CHECKPOINT_TYPES = (
    Attempt,
    Proposal,
    CheckReport,
    CheckResult,
    CompileResult,
    TimingResult,
    KernelTiming,
    ClockSample,
    DeviceInfo,
    TrialResult,
    ProfileResult,
    TechniqueChoice,
)


def resumable(settings: Settings, task: Task, runs_dir: Path | None = None) -> RunDir:
    """The task's unfinished run, to resume; KernelwrightError if it has none."""
    base = runs_dir or settings.data_dir / "runs"
    run = RunDir.latest_unfinished(base, task.name)
    if run is None:
        raise KernelwrightError(f"no unfinished run of {task.name} to resume in {base}")
    return run


def optimize(
    task_path: str | Path,
    settings: Settings,
    *,
    budget: int = 10,
    max_seconds: float = 3600.0,
    plateau: int = 4,
    max_repairs: int = 2,
    resume: bool = False,
    model: ChatModel | None = None,
    gpu: GpuBackend | None = None,
    arch: str | None = None,
    progress: Progress | None = None,
    runs_dir: Path | None = None,
    memory: bool | None = None,
    tune: bool | None = None,
) -> tuple[dict[str, Any], RunDir]:
    """Optimize a task; returns the loop's output (best source, speedup, stop reason, attempts,
    and "tune": what tuning the best kernel found, agent.tune.after_run) and the run directory
    (under `runs_dir`, by default the data directory's runs/).
    `memory` False runs without the memory (None: as settings.memory.enabled says); `tune`
    False leaves the best kernel untuned (None: as settings.tune.enabled says; a kind whose
    kernels tune cannot build, a KernelBench problem's, is never tuned).
    Infrastructure failures raise KernelwrightError with the fix."""
    task = load_task(task_path)
    base = runs_dir or settings.data_dir / "runs"
    run = resumable(settings, task, base) if resume else None
    if gpu is None:  # the GPU first: without one, that is the line to read, not Ollama's
        from kernelwright.tools import nvml

        arch = arch or nvml.device_info().arch
    if model is None:
        model = make_model(settings)
        model.ensure_ready()
    mem = open_memory(settings, memory)
    own_gpu = gpu is None
    try:
        if gpu is None:
            gpu = local_gpu(settings)
        if run is None:
            run = RunDir.create(
                base,
                task.name,
                {"task": str(Path(task_path).resolve()), "model": settings.model, "budget": budget},
            )
        context = LoopContext(
            task=task,
            model=model,
            gpu=gpu,
            run=run,
            arch=arch or "sm_90",
            compile_backend=settings.compile_backend,
            progress=progress or (lambda event: None),
            store=mem.store if mem else None,
            graph=mem.graph if mem else None,
            pairs=settings.memory.pairs,
            pair_chars=settings.memory.pair_tokens * CHARS_PER_TOKEN,
            builds=BuildCache(settings.builds_dir),
        )
        config: Any = {"configurable": {"thread_id": run.path.name}, "recursion_limit": 100_000}
        start: LoopInput | None = None
        if not resume:
            start = LoopInput(
                task_path=str(task.path),
                max_candidates=budget,
                max_seconds=max_seconds,
                plateau_rounds=plateau,
                max_repairs=max_repairs,
            )
        with closing(sqlite3.connect(run.checkpoints, check_same_thread=False)) as conn:
            saver = SqliteSaver(
                conn, serde=JsonPlusSerializer(allowed_msgpack_modules=CHECKPOINT_TYPES)
            )
            # each step's checkpoint written before the next step starts: a run killed
            # mid-step (a dead batch worker, SIGKILL) resumes exactly where it was
            output = build(saver).invoke(start, config, context=context, durability="sync")
        if (settings.tune.enabled if tune is None else tune) and kind_of(task).tunable:
            output["tune"] = after_run(
                settings,
                cast(CudaTask, task),
                run,
                gpu,
                arch=context.arch,
                memory=memory,
                progress=lambda m: context.progress({"node": "tune", "message": m}),
            )
    finally:
        if own_gpu and gpu is not None:
            gpu.close()
        if mem is not None:
            mem.close()
    return output, run
