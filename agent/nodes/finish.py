"""finish: say why the run stopped, write the summary, hand back the best kernel."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from kernelwright.agent.context import LoopContext
from kernelwright.agent.nodes.common import should_stop
from kernelwright.agent.state import LoopState
from kernelwright.tools.results import Attempt


def finish(state: LoopState, runtime: Runtime[LoopContext]) -> dict[str, Any]:
    ctx = runtime.context
    reason = should_stop(state) or "stopped"
    ctx.run.write_summary(summary(ctx.task.name, ctx.model.name, reason, state))
    ctx.progress({"node": "finish", "message": reason})
    return {"stop_reason": reason}


def _cell(text: str, width: int = 70) -> str:
    text = " ".join(text.split()).replace("|", "/")
    return text if len(text) <= width else text[: width - 1] + "…"


def summary(task: str, model: str, reason: str, state: LoopState) -> str:
    """The run's Markdown summary (pure)."""
    attempts: list[Attempt] = state.get("attempts", [])
    best = state.get("best_speedup", 1.0)
    lines = [
        f"# kernelwright run: {task}",
        "",
        f"- model: {model}",
        f"- stopped: {reason}",
        f"- best: {best:.2f}x over the original (attempt {state.get('best_index', 0)}), "
        "in best.cu" + (" with its launch in best.toml" if state.get("best_launch") else ""),
        f"- candidates: {len(attempts)}, of which verified correct: "
        f"{sum(a.verdict == 'correct' for a in attempts)}",
        f"- time: {state.get('elapsed_s', 0.0):.0f} s",
        "",
        "| # | from | techniques | verdict | speedup | kept | reason / explanation |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for a in attempts:
        speed = f"{a.speedup:.2f}x" if a.speedup is not None else ""
        note = a.explanation or a.reason
        lines.append(
            f"| {a.index} | {a.parent} | {', '.join(a.tags) or '-'} | {a.verdict} | "
            f"{speed} | {'yes' if a.kept else ''} | {_cell(note)} |"
        )
    return "\n".join(lines) + "\n"
