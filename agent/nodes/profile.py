"""profile: measure the current best kernel (time, Nsight Compute metrics, bottleneck)."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from kernelwright.agent.context import LoopContext
from kernelwright.agent.nodes.common import as_candidate, stopwatch
from kernelwright.agent.state import LoopState
from kernelwright.tools.spec import CudaTask
from kernelwright.tools.task import reference_candidate


def profile(state: LoopState, runtime: Runtime[LoopContext]) -> dict[str, Any]:
    ctx = runtime.context
    task = ctx.task
    assert isinstance(task, CudaTask)
    update: dict[str, Any] = {}
    with stopwatch() as took:
        if "best_source" not in state:  # the first visit: the original kernel against itself
            ctx.progress({"node": "profile", "message": "checking the original kernel"})
            report = ctx.gpu.check(task, reference_candidate(task))
            if not report.ok or report.timing is None:
                return {"stop_reason": f"the task's own kernel fails its check: {report.reason}"}
            update = {
                "best_source": task.source,
                "best_launch": None,
                "best_speedup": 1.0,
                "best_index": 0,
                "best_ms": report.timing.reference.median_ms,
                "floor_ms": report.timing.floor_ms,
                "rounds_without_gain": 0,
                "repairs": 0,
                "compile_log": "",
                "best_compile": report.compile,
            }
            ctx.run.write_best(task.source, None)
        source = update.get("best_source", state.get("best_source", task.source))
        launch = update.get("best_launch", state.get("best_launch"))
        ctx.progress({"node": "profile", "message": "profiling the best kernel"})
        result = ctx.gpu.profile(task, as_candidate(task, source, launch, "best.cu"))
    return {**update, "profile": result, "elapsed_s": took["s"]}
