"""compile: the candidate's signature and launch, then NVRTC (or nvcc) in a worker process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langgraph.runtime import Runtime

from kernelwright.agent.context import LoopContext
from kernelwright.agent.nodes.common import as_candidate, stopwatch
from kernelwright.agent.state import LoopState
from kernelwright.tools.compile import compile_in_sandbox
from kernelwright.tools.errors import TaskError
from kernelwright.tools.spec import CudaTask, check_signature


def compile_candidate(state: LoopState, runtime: Runtime[LoopContext]) -> dict[str, Any]:
    ctx = runtime.context
    task, proposal = ctx.task, state["proposal"]
    assert isinstance(task, CudaTask) and proposal is not None
    ctx.progress({"node": "compile", "message": "compiling"})
    with stopwatch() as took:
        try:
            check_signature(
                Path("candidate.cu"), proposal.source, task.entry, task.args, Path(task.path)
            )
            as_candidate(task, proposal.source, proposal.launch)
        except TaskError as exc:
            return {
                "compiled": None,
                "compile_log": f"error: {exc.field}: {exc.problem}",
                "repairs": state.get("repairs", 0) + 1,
            }
        result = compile_in_sandbox(proposal.source, task.entry, ctx.arch, ctx.compile_backend)
    if result.ok:
        return {"compiled": result, "compile_log": "", "elapsed_s": took["s"]}
    return {
        "compiled": result,
        "compile_log": result.log[-4000:],
        "repairs": state.get("repairs", 0) + 1,
        "elapsed_s": took["s"],
    }
