"""profile: measure the current best kernel (time, Nsight Compute metrics, bottleneck)."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from kernelwright.agent.context import LoopContext
from kernelwright.agent.kinds import kind_of
from kernelwright.agent.nodes.common import stopwatch
from kernelwright.agent.state import LoopState


def profile(state: LoopState, runtime: Runtime[LoopContext]) -> dict[str, Any]:
    ctx = runtime.context
    task, kind = ctx.task, kind_of(ctx.task)
    update: dict[str, Any] = {}
    with stopwatch() as took:
        if "best_source" not in state:  # the first visit: the original kernel against itself
            ctx.progress({"node": "profile", "message": "checking the original kernel"})
            report = ctx.gpu.check(task, task.reference_candidate())
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
                "best_compile": report.compile if kind.resources else None,
            }
            ctx.run.write_best(kind.original_best(task), None, kind.best_file)
        source = update.get("best_source", state.get("best_source", task.source))
        launch = update.get("best_launch", state.get("best_launch"))
        ctx.progress({"node": "profile", "message": "profiling the best kernel"})
        original = bool(update) or state.get("best_index", 0) == 0
        best = kind.best_candidate(task, ctx.run, source, launch, original)
        result = ctx.gpu.profile(task, best)
        if update and not result.available and not kind.profiled:  # say it once
            ctx.progress({"node": "profile", "message": result.reason})
    return {**update, "profile": result, "elapsed_s": took["s"]}
