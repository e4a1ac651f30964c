"""The C++ task's row of the kinds table (agent/kinds.py): a run starts from the function itself
(its time on one core is the original's), its first proposal ports the function to CUDA
(prompts/port.yaml), later ones optimize the kernel as for a CUDA task, each checked beside the
run's first correct port; the run ends by writing the drop-in best_host.cu, checked end to end,
and the three speedups in the summary."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from kernelwright.agent.best_host import FILE, best_host
from kernelwright.agent.kernel_parts import as_candidate, profile_view
from kernelwright.agent.llm import Message
from kernelwright.agent.rundir import RunDir
from kernelwright.prompts.render import render
from kernelwright.tools.cpp import CppTask
from kernelwright.tools.cpp_candidates import CppKernel, HostFile, is_host_file
from kernelwright.tools.errors import TaskError
from kernelwright.tools.results import CheckReport, Speedups
from kernelwright.tools.spec import CudaCandidate, check_signature, parse_launch

PORT_PROMPT = "port"  # the first proposal's prompt, before any optimization
LoopState = Mapping[str, Any]


def prompt(task: CppTask, state: LoopState, values: dict[str, Any], launch: Any) -> list[Message]:
    """The port prompt until a port is verified (the best is still the C++ function), then the
    CUDA task's, on the best kernel."""
    if not state.get("best_index", 0):
        return render(
            PORT_PROMPT,
            task=task,
            launch=launch,
            source=state["best_source"],
            attempts=values["attempts"],
            max_attempts=values["max_attempts"],
            repair=values["repair"],
        )
    return render(
        "propose",
        task=prompt_view(task),
        launch=launch,
        source=state["best_source"],
        profile=profile_view(state.get("profile"), state.get("best_compile")),
        **values,
    )


def prompt_view(task: CppTask) -> CppTask:
    """The task as the CUDA prompt shows it: an output with a declared start (fill:V) is read
    and written, and the description says what it starts as."""
    started = [a for a in task.args if a.role == "out" and a.init.startswith("fill:")]
    kernel_args = task.kernel_args
    if not started:
        return task.model_copy(update={"args": kernel_args})
    args = tuple(a.model_copy(update={"role": "inout"}) if a in started else a for a in kernel_args)
    note = "; ".join(f"{a.name} starts as {a.init[5:]}" for a in started)
    words = f"{task.description.rstrip('.')}. " if task.description else ""
    return task.model_copy(update={"args": args, "description": f"{words}On entry: {note}."})


def first_port(task: CppTask, run: RunDir) -> CudaCandidate | None:
    """The run's first correct kernel, the GPU-side reference of every later check (None: the
    task's own port, or none yet)."""
    if task.port_source:
        return None
    for a in run.attempts():
        if a.verdict == "correct":
            launch = parse_launch(Path("port"), a.launch, set(task.bench)) if a.launch else None
            return CudaCandidate(path=f"attempt {a.index}", source=a.source, launch=launch)
    return None


def candidate(
    task: CppTask, run: RunDir, source: str, launch: dict[str, Any] | None, name: str
) -> CppKernel:
    kernel = as_candidate(task, source, launch, f"{name}.cu")
    port = first_port(task, run)
    return CppKernel(path=kernel.path, source=source, launch=kernel.launch, port=port)


def from_text(task: CppTask, text: str) -> CppKernel | HostFile:
    """A kernel a user pasted (chat, MCP), or a drop-in host file kernelwright wrote."""
    if is_host_file(text):
        return HostFile(path=FILE, source=text)
    check_signature(Path("candidate.cu"), text, task.function, task.kernel_args, Path(task.path))
    return CppKernel(path="candidate.cu", source=text, launch=None)


def original_best(task: CppTask) -> str:
    """What best.cu holds before a port is verified: the task's own port, else a note."""
    if task.port_source:
        return task.port_source
    return (
        f"// kernelwright: no CUDA port of {task.function}() is verified yet; the reference is "
        f"{Path(task.source_path).name}\n"
    )


def best_candidate(
    task: CppTask, run: RunDir, source: str, launch: dict[str, Any] | None, original: bool
) -> Any:
    """The best kernel to profile; before a port, the function itself (not profiled)."""
    if original:
        return task.reference_candidate()
    return candidate(task, run, source, launch, "best")


def loaded(task: CppTask) -> str:
    params = ", ".join(p.decl for p in task.params)
    bench = ", ".join(f"{k}={v}" for k, v in task.bench.items())
    return (
        f"{task.name}: {Path(task.source_path).name}, {task.function}({params}) in C++, bench "
        f"{bench}; optimize ports it to CUDA first"
    )


# --- the end of a run: the three speedups and best_host.cu --------------------------------------


def speedup_rows(s: Speedups) -> list[tuple[str, str]]:
    """The three speedups, each with what it is against: (label, text) rows for `check`, the
    summary, chat."""
    rows = []
    if s.cpu_core is not None and s.cpu_ms is not None:
        rows.append(
            (
                "vs one core",
                f"{s.cpu_core:.2f}x against the C++ function on one core (g++ -O3): "
                f"{s.cpu_ms:.4f} ms, median of {s.cpu_samples} calls",
            )
        )
    if s.end_to_end is not None and s.end_to_end_ms is not None:
        how = (
            "best_host.cu timed"
            if s.end_to_end_measured
            else f"the copies {s.copies_ms or 0:.4f} ms, timed, and the kernel"
        )
        below = (
            ": below 1x, the copies cost more than the C++ function takes; the kernel pays off "
            "where the data stays on the GPU"
            if s.end_to_end < 1
            else ""
        )
        rows.append(
            (
                "end to end",
                f"{s.end_to_end:.2f}x with the copies (allocate, copy in, kernel, copy back: "
                f"{s.end_to_end_ms:.4f} ms, {how}){below}",
            )
        )
    if s.port is not None:
        rows.append(
            (
                "vs first port",
                f"{s.port:.2f}x (IQR {s.port_iqr or 0:.3f}) against {s.port_is}, on the GPU, in "
                "paired rounds",
            )
        )
    return rows


Progress = Callable[[dict[str, Any]], None]


def finish(task: CppTask, gpu: Any, run: RunDir, state: LoopState, progress: Progress) -> list[str]:
    """The run's last step: the best kernel checked once more beside the first port (its three
    speedups), best_host.cu written and checked end to end. The summary's lines."""
    head = ["", "## The drop-in host function and the three speedups", ""]
    if not state.get("best_index", 0):
        return [*head, f"- no kernel was faster than {task.function}() on one core: no {FILE}"]
    source, launch = state["best_source"], state.get("best_launch")
    progress({"node": "finish", "message": "checking the best kernel beside the first port"})
    report = gpu.check(task, candidate(task, run, source, launch, "best"))
    kernel = report.speedups or Speedups()
    try:
        text = best_host(task, source, launch)
    except TaskError as exc:
        return [*head, *_rows(kernel, report), f"- {FILE}: not written: {exc.problem}"]
    path = run.path / FILE
    path.write_text(text)
    progress({"node": "finish", "message": f"checking {FILE} end to end"})
    host = gpu.check(task, HostFile(path=str(path), source=text))
    if host.ok and host.speedups is not None:
        kernel = kernel.model_copy(
            update={
                k: getattr(host.speedups, k)
                for k in ("end_to_end", "end_to_end_ms", "end_to_end_measured")
            }
        )
    said = (
        f"- {FILE}: {task.function}() with its own signature over the best kernel; checked end "
        + ("to end: correct" if host.ok else f"to end: {host.verdict}: {host.reason}")
    )
    return [*head, *_rows(kernel, report), said]


def _rows(s: Speedups, report: CheckReport) -> list[str]:
    if not report.ok:
        return [f"- the best kernel, checked once more: {report.verdict}: {report.reason}"]
    return [f"- {label}: {text}" for label, text in speedup_rows(s)]
