"""finish: say why the run stopped, write the summary, hand back the best kernel."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from kernelwright.agent.context import LoopContext
from kernelwright.agent.experience import TechniqueChoice
from kernelwright.agent.nodes.common import best_name, should_stop
from kernelwright.agent.state import LoopState
from kernelwright.memory.reasoning import EdgeStats, ReasoningGraph
from kernelwright.tools.results import Attempt


def finish(state: LoopState, runtime: Runtime[LoopContext]) -> dict[str, Any]:
    ctx = runtime.context
    reason = should_stop(state) or "stopped"
    graph = ctx.graph.graph if ctx.graph is not None else None
    text = summary(ctx.task.name, ctx.model.name, reason, state, graph, best_name(ctx.task))
    ctx.run.write_summary(text)
    ctx.progress({"node": "finish", "message": reason})
    return {"stop_reason": reason}


def _cell(text: str, width: int = 70) -> str:
    text = " ".join(text.split()).replace("|", "/")
    return text if len(text) <= width else text[: width - 1] + "…"


def _stats(visits: float, success: float, mean_log: float) -> str:
    return f"{visits:g}, {success:.0%}, {mean_log:+.3f}"


def outcome(a: Attempt) -> str:
    speed = f" {a.speedup:.2f}x" if a.speedup is not None else ""
    return f"{a.verdict}{speed}" + (", kept" if a.kept else "")


def search_table(
    choices: list[TechniqueChoice], attempts: list[Attempt], graph: ReasoningGraph | None
) -> list[str]:
    """The search's choices, the edge's statistics then and now, and what came of each."""
    by_index = {a.index: a for a in attempts}
    lines = [
        "## The search: MCGS over the reasoning graph",
        "",
        "Statistics of the chosen edge (from the techniques the kernel had, for its bottleneck):"
        " visits (the prior counts as one), success rate, mean log-speedup per step.",
        "",
        "| # | chose | bottleneck | kernel had | when chosen | now | applied | outcome |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for c in choices:
        now: EdgeStats | None = graph.peek(c.state, c.tag, c.bottleneck) if graph else None
        a = by_index.get(c.attempt)
        lines.append(
            f"| {c.attempt} | {c.tag} | {c.bottleneck} | {', '.join(c.state) or '(original)'} | "
            f"{_stats(c.visits, c.success_rate, c.mean_log_speedup)} | "
            + (_stats(now.visits, now.success_rate, now.mean_log_speedup) if now else "")
            + f" | {', '.join(a.tags) if a and a.tags else '-'} | {outcome(a) if a else ''} |"
        )
    return lines


def summary(
    task: str,
    model: str,
    reason: str,
    state: LoopState,
    graph: ReasoningGraph | None = None,
    best_file: str = "best.cu",
) -> str:
    """The run's Markdown summary (pure); `graph` gives the search's statistics as they are now."""
    attempts: list[Attempt] = state.get("attempts", [])
    best = state.get("best_speedup", 1.0)
    lines = [
        f"# kernelwright run: {task}",
        "",
        f"- model: {model}",
        f"- stopped: {reason}",
        f"- best: {best:.2f}x over the original (attempt {state.get('best_index', 0)}), "
        f"in {best_file}" + (" with its launch in best.toml" if state.get("best_launch") else ""),
        f"- candidates: {len(attempts)}, of which verified correct: "
        f"{sum(a.verdict == 'correct' for a in attempts)}",
        f"- time: {state.get('elapsed_s', 0.0):.0f} s",
        f"- techniques in the best kernel: {', '.join(state.get('applied', [])) or 'none named'}",
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
    choices = state.get("choices", [])
    if choices:
        lines += ["", *search_table(choices, attempts, graph)]
    return "\n".join(lines) + "\n"
