"""verify: check and time the compiled candidate in the sandbox against the original kernel."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from kernelwright.agent.context import LoopContext
from kernelwright.agent.kinds import kind_of
from kernelwright.agent.nodes.common import beats, stopwatch
from kernelwright.agent.state import LoopState


def verify(state: LoopState, runtime: Runtime[LoopContext]) -> dict[str, Any]:
    ctx = runtime.context
    task, proposal = ctx.task, state["proposal"]
    assert proposal is not None
    n = len(state.get("attempts", [])) + 1
    ctx.progress({"node": "verify", "message": f"verifying candidate {n}"})
    with stopwatch() as took:
        kind = kind_of(task)
        name = f"candidate-{n}" if kind.file_per_try else "candidate"
        candidate = kind.candidate(task, ctx.run, proposal.source, proposal.launch, name)
        report = ctx.gpu.check(task, candidate)
        best = state.get("best_speedup", 1.0)
        if report.ok and report.timing and beats(report.timing.speedup, best):
            # About to become the run's best: compute-sanitizer first. A race that happens to
            # give the right answer today is still a race; a sanitizer that did not finish on
            # it (a kernel that hangs only when watched) is no pass either (with_sanitizer).
            ctx.progress({"node": "verify", "message": f"sanitizing candidate {n}"})
            found = ctx.gpu.sanitize(task, candidate)
            report = report.with_sanitizer(found)
            if not found.available:  # not installed: kept as before, unwatched, and said so
                message = f"candidate {n} goes unsanitized: {found.reason}"
                ctx.progress({"node": "verify", "message": message})
    return {"report": report, "elapsed_s": took["s"]}
