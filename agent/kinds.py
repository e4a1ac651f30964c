"""The task kinds as the loop and the doors see them: one row per kind, looked up by `task.kind`.

A kind's facts for the verifier live on its models in tools/ (tools/task.py says where); this
table holds what the loop and the doors do differently per kind: the propose prompt, how a reply
is read and repaired, what a candidate is made of, the best file's name, the code fence. A new
kind adds a row here (tests/agent/test_kinds.py checks every kind has one)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelwright.agent import kinds_cpp, replies, replies_kernelbench
from kernelwright.agent.kernel_parts import as_candidate, profile_view
from kernelwright.agent.llm import Message
from kernelwright.agent.replies import Proposal, ReplyError
from kernelwright.agent.rundir import RunDir
from kernelwright.prompts.render import render
from kernelwright.tools.errors import TaskError
from kernelwright.tools.kernelbench import KernelBenchCandidate, KernelBenchTask
from kernelwright.tools.spec import (
    CudaCandidate,
    CudaTask,
    check_signature,
)
from kernelwright.tools.task import Candidate, Task

LoopState = Mapping[str, Any]  # agent.state.LoopState, which imports the memory, as read here


@dataclass(frozen=True)
class Kind:
    fence: str  # the code fence's language, where the kernel is shown
    suffix: str  # a candidate file's suffix
    best_file: str  # the best kernel's file name in the run directory
    inherits_launch: bool  # a proposal without a launch keeps the best one
    launch: Callable[[Any], dict[str, Any] | None]  # the task's own launch, as a prompt shows it
    resources: bool  # its build reports registers and shared memory, for the prompts
    tunable: bool  # `tune` can search its compile options (the controller builds it)
    profiled: bool  # Nsight Compute profiles it (a KernelBench problem is timed only)
    # each try its own file: a KernelBench candidate is a file its worker imports
    file_per_try: bool
    # the propose prompt: (task, loop state, the values every kind's prompt takes, the launch
    # the candidate starts from) -> messages
    prompt: Callable[[Any, LoopState, dict[str, Any], Any], list[Message]]
    parse: Callable[[Any, str], Proposal]  # a model's reply, read (ReplyError if unusable)
    repair: Callable[[ReplyError], Message]  # the one repair round's message
    # a proposal as the verifier takes it: (task, run, source, launch, file name without suffix)
    candidate: Callable[[Any, RunDir, str, dict[str, Any] | None, str], Candidate]
    from_text: Callable[[Any, str], Candidate]  # a candidate a user pasted (chat, MCP)
    original_best: Callable[[Any], str]  # what the best file holds before a candidate wins
    # the best kernel to profile: (task, run, source, launch, still the original?)
    best_candidate: Callable[[Any, RunDir, str, dict[str, Any] | None, bool], Candidate]
    original_file: Callable[[Any], Path]  # the task's own kernel file
    loaded: Callable[[Any], str]  # what chat says of a task it loaded (plain text)
    # the prompt of a run's first proposals, until one is verified ("": `prompt`'s from the
    # start); `prompt` renders it
    first_prompt: str = ""
    # a run's last step beside its summary: (task, GPU, run, state, progress) -> the summary's
    # lines (a C++ task writes best_host.cu and checks it)
    finish: Callable[[Any, Any, RunDir, LoopState, Any], list[str]] = lambda *_: []


def kind_of(task: Task) -> Kind:
    return KINDS[task.kind]


# --- CUDA tasks: a kernel and its launch ---


def _cuda_prompt(
    task: CudaTask, state: LoopState, values: dict[str, Any], launch: Any
) -> list[Message]:
    return render(
        "propose",
        task=task,
        launch=launch,
        source=state["best_source"],
        profile=profile_view(state.get("profile"), state.get("best_compile")),
        **values,
    )


def _cuda_candidate(
    task: CudaTask, run: RunDir, source: str, launch: dict[str, Any] | None, name: str
) -> Candidate:
    return as_candidate(task, source, launch, f"{name}.cu")


def _cuda_from_text(task: CudaTask, text: str) -> Candidate:
    check_signature(Path("candidate.cu"), text, task.entry, task.args, Path(task.path))
    return CudaCandidate(path="candidate.cu", source=text, launch=None)


def _cuda_loaded(task: CudaTask) -> str:
    args = ", ".join(a.name for a in task.args)
    bench = ", ".join(f"{k}={v}" for k, v in task.bench.items())
    return f"{task.name}: {Path(task.source_path).name}, {task.entry}({args}), bench {bench}"


# --- KernelBench problems: a PyTorch Model, and a ModelNew with custom CUDA ---


def _kb_prompt(
    task: KernelBenchTask, state: LoopState, values: dict[str, Any], launch: Any
) -> list[Message]:
    return render(
        "propose_kernelbench",
        task=task,
        source=state["best_source"] if state.get("best_index", 0) else None,
        best_ms=state.get("best_ms"),
        **values,
    )


def _kb_candidate(
    task: KernelBenchTask, run: RunDir, source: str, launch: dict[str, Any] | None, name: str
) -> Candidate:
    return KernelBenchCandidate(path=str(run.write_candidate(name, source)), source=source)


def _kb_from_text(task: KernelBenchTask, text: str) -> Candidate:
    if "class ModelNew" not in text:
        raise TaskError("candidate.py", "ModelNew", "missing: a KernelBench candidate defines it")
    return KernelBenchCandidate(path="candidate.py", source=text)


def _kb_original_best(task: KernelBenchTask) -> str:
    """The problem with ModelNew naming its Model, so the file checks as a candidate."""
    return (
        task.source.rstrip()
        + "\n\n\n# kernelwright: no candidate has beaten the original yet\nModelNew = Model\n"
    )


def _kb_best_candidate(
    task: KernelBenchTask,
    run: RunDir,
    source: str,
    launch: dict[str, Any] | None,
    original: bool,
) -> Candidate:
    if original:
        return task.reference_candidate()
    return KernelBenchCandidate(path=str(run.best_file), source=source)


def _kb_loaded(task: KernelBenchTask) -> str:
    sizes = ", ".join(f"{k}={v}" for k, v in task.size_globals.items())
    return (
        f"{task.name} (KernelBench problem: Model, {sizes or 'no sizes'}); "
        "optimize writes a ModelNew with custom CUDA"
    )


KINDS: Mapping[str, Kind] = {
    "cuda": Kind(
        fence="cuda",
        suffix=".cu",
        best_file="best.cu",
        inherits_launch=True,
        launch=lambda task: task.launch.model_dump(),
        resources=True,
        tunable=True,
        profiled=True,
        file_per_try=False,
        prompt=_cuda_prompt,
        parse=lambda task, text: replies.parse_proposal(text, task.entry),
        repair=replies.repair_message,
        candidate=_cuda_candidate,
        from_text=_cuda_from_text,
        original_best=lambda task: task.source,
        best_candidate=lambda task, run, source, launch, original: _cuda_candidate(
            task, run, source, launch, "best"
        ),
        original_file=lambda task: Path(task.source_path),
        loaded=_cuda_loaded,
    ),
    "kernelbench": Kind(
        fence="python",
        suffix=".py",
        best_file="best.py",
        inherits_launch=False,
        launch=lambda task: None,
        resources=False,
        tunable=False,
        profiled=False,
        file_per_try=True,
        prompt=_kb_prompt,
        parse=lambda task, text: replies_kernelbench.parse_model_new(text),
        repair=replies_kernelbench.repair_message,
        candidate=_kb_candidate,
        from_text=_kb_from_text,
        original_best=_kb_original_best,
        best_candidate=_kb_best_candidate,
        original_file=lambda task: Path(task.path),
        loaded=_kb_loaded,
    ),
    "cpp": Kind(
        fence="cuda",
        suffix=".cu",
        best_file="best.cu",
        inherits_launch=True,
        launch=lambda task: task.launch.model_dump(),
        resources=True,
        tunable=False,  # its kernels' options: once it is a CUDA task of the user's own
        profiled=True,
        file_per_try=False,
        prompt=kinds_cpp.prompt,
        parse=lambda task, text: replies.parse_proposal(text, task.entry),
        repair=replies.repair_message,
        candidate=kinds_cpp.candidate,
        from_text=kinds_cpp.from_text,
        original_best=kinds_cpp.original_best,
        best_candidate=kinds_cpp.best_candidate,
        original_file=lambda task: Path(task.source_path),
        loaded=kinds_cpp.loaded,
        first_prompt=kinds_cpp.PORT_PROMPT,
        finish=kinds_cpp.finish,
    ),
}
