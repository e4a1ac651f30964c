"""profile: measure the current best kernel (time, Nsight Compute metrics, bottleneck)."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from kernelwright.agent.context import LoopContext
from kernelwright.agent.nodes.common import (
    best_name,
    candidate_for,
    original_best,
    stopwatch,
)
from kernelwright.agent.state import LoopState
from kernelwright.tools.kernelbench import KernelBenchCandidate
from kernelwright.tools.spec import CudaTask
from kernelwright.tools.task import reference_candidate


def profile(state: LoopState, runtime: Runtime[LoopContext]) -> dict[str, Any]:
    ctx = runtime.context
    task = ctx.task
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
                "best_compile": report.compile if isinstance(task, CudaTask) else None,
            }
            ctx.run.write_best(original_best(task), None, best_name(task))
        source = update.get("best_source", state.get("best_source", task.source))
        launch = update.get("best_launch", state.get("best_launch"))
        ctx.progress({"node": "profile", "message": "profiling the best kernel"})
        if isinstance(task, CudaTask):
            best = candidate_for(task, ctx.run, source, launch, "best")
        elif update or state.get("best_index", 0) == 0:
            best = reference_candidate(task)
        else:
            best = KernelBenchCandidate(path=str(ctx.run.best_file), source=source)
        result = ctx.gpu.profile(task, best)
        if update and not result.available and not isinstance(task, CudaTask):  # say it once
            ctx.progress({"node": "profile", "message": result.reason})
    return {**update, "profile": result, "elapsed_s": took["s"]}
