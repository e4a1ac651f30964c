"""verify: check and time the compiled candidate in the sandbox against the original kernel."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from kernelwright.agent.context import LoopContext
from kernelwright.agent.nodes.common import as_candidate, stopwatch
from kernelwright.agent.state import LoopState
from kernelwright.tools.spec import CudaTask


def verify(state: LoopState, runtime: Runtime[LoopContext]) -> dict[str, Any]:
    ctx = runtime.context
    task, proposal = ctx.task, state["proposal"]
    assert isinstance(task, CudaTask) and proposal is not None
    ctx.progress(
        {"node": "verify", "message": f"verifying candidate {len(state.get('attempts', [])) + 1}"}
    )
    with stopwatch() as took:
        report = ctx.gpu.check(task, as_candidate(task, proposal.source, proposal.launch))
    return {"report": report, "elapsed_s": took["s"]}
