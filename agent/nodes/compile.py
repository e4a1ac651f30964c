"""compile: for a CUDA task, the candidate's signature and launch, then NVRTC (or nvcc) in a
worker process; for a KernelBench problem, a check of the Python that runs none of it (syntax,
ModelNew and its constructor), the real build being left to the verifier's worker."""

from __future__ import annotations

import ast
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langgraph.runtime import Runtime

from kernelwright.agent.context import LoopContext
from kernelwright.agent.nodes.common import as_candidate, stopwatch
from kernelwright.agent.replies import Proposal
from kernelwright.agent.state import LoopState
from kernelwright.tools.builds import cached_build
from kernelwright.tools.compile import compile_in_sandbox
from kernelwright.tools.errors import TaskError
from kernelwright.tools.kernelbench import KernelBenchTask
from kernelwright.tools.results import CompileResult
from kernelwright.tools.spec import CudaTask, check_signature


def compile_candidate(state: LoopState, runtime: Runtime[LoopContext]) -> dict[str, Any]:
    ctx = runtime.context
    task, proposal = ctx.task, state["proposal"]
    assert proposal is not None
    ctx.progress({"node": "compile", "message": "compiling"})
    with stopwatch() as took:
        try:
            result = BUILDS[task.kind](ctx, task, proposal)
        except TaskError as exc:  # a signature or a launch the task cannot take
            return {
                "compiled": None,
                "compile_log": f"error: {exc.field}: {exc.problem}",
                "repairs": state.get("repairs", 0) + 1,
            }
    if result.ok:
        return {"compiled": result, "compile_log": "", "elapsed_s": took["s"]}
    return {
        "compiled": result,
        "compile_log": result.log[-4000:],
        "repairs": state.get("repairs", 0) + 1,
        "elapsed_s": took["s"],
    }


def _cuda(ctx: LoopContext, task: CudaTask, proposal: Proposal) -> CompileResult:
    """The kernel's signature and launch against the task's (TaskError if they do not fit),
    then its build."""
    check_signature(Path("candidate.cu"), proposal.source, task.entry, task.args, Path(task.path))
    as_candidate(task, proposal.source, proposal.launch)
    return _build(ctx, proposal.source, task.entry)


def _kernelbench(ctx: LoopContext, task: KernelBenchTask, proposal: Proposal) -> CompileResult:
    return check_model_new(proposal.source, task.source)


def _build(ctx: LoopContext, source: str, entry: str) -> CompileResult:
    """The compile worker's build, kept in the build cache the verifier reads (same source,
    arch and compiler: the check does not build it again)."""
    arch, backend = ctx.arch, ctx.compile_backend
    return cached_build(ctx.builds, source, entry, arch, backend, compiler=compile_in_sandbox)[0]


def check_model_new(source: str, problem: str) -> CompileResult:
    """A KernelBench candidate read, never run (the controller imports no candidate code):
    Python syntax, a top-level class ModelNew, and a constructor that takes what Model's does."""
    t0 = time.perf_counter()

    def result(log: str = "") -> CompileResult:
        ms = (time.perf_counter() - t0) * 1e3
        return CompileResult(ok=not log, backend="python", arch="", duration_ms=ms, log=log)

    try:
        tree = ast.parse(source, filename="candidate.py")
    except SyntaxError as exc:
        where = f"candidate.py, line {exc.lineno}" if exc.lineno else "candidate.py"
        text = f"\n    {exc.text.rstrip()}" if exc.text and exc.text.strip() else ""
        return result(f"{where}: error: SyntaxError: {exc.msg}{text}")
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    aliased = any(
        isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "ModelNew" for t in n.targets)
        for n in tree.body
    )
    if "ModelNew" not in classes and not aliased:
        return result(
            "candidate.py: error: no top-level class ModelNew(torch.nn.Module) is defined"
        )
    model_new = classes.get("ModelNew")
    try:
        model = next(
            n for n in ast.parse(problem).body if isinstance(n, ast.ClassDef) and n.name == "Model"
        )
    except (SyntaxError, StopIteration):
        return result()
    want, got = _init_arity(model), _init_arity(model_new) if model_new else None
    if want is not None and got is not None and (got[0] > want[1] or got[1] < want[0]):
        return result(
            f"candidate.py, line {model_new.lineno if model_new else 0}: error: "
            f"ModelNew.__init__ takes {_span(got)} argument(s) but Model.__init__ takes "
            f"{_span(want)}: ModelNew is built with the same arguments, get_init_inputs()"
        )
    return result()


def _init_arity(cls: ast.ClassDef) -> tuple[float, float] | None:
    """How many positional arguments (self aside) the class's own __init__ takes: (least,
    most); None where it defines none (it inherits one) or takes *args."""
    init = next(
        (n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None
    )
    if init is None or init.args.vararg is not None:
        return None
    params = [*init.args.posonlyargs, *init.args.args][1:]
    return float(max(0, len(params) - len(init.args.defaults))), float(len(params))


def _span(arity: tuple[float, float]) -> str:
    least, most = int(arity[0]), int(arity[1])
    return str(least) if least == most else f"{least} to {most}"


# What "compile" means for each kind of task, by task.kind
BUILDS: dict[str, Callable[[LoopContext, Any, Proposal], CompileResult]] = {
    "cuda": _cuda,
    "kernelbench": _kernelbench,
    # a C++ task's candidates are kernels, as its CUDA view (tools/cpp.py) takes them
    "cpp": lambda ctx, task, proposal: _cuda(ctx, task.worker_task(), proposal),
}
