"""finish: say why the run stopped, write the summary, hand back the best kernel."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from kernelwright.agent.context import LoopContext
from kernelwright.agent.experience import TechniqueChoice
from kernelwright.agent.formats import clip, markdown_table, search_rows
from kernelwright.agent.kinds import kind_of
from kernelwright.agent.nodes.common import should_stop
from kernelwright.agent.state import LoopState
from kernelwright.memory.reasoning import ReasoningGraph
from kernelwright.tools.results import Attempt


def finish(state: LoopState, runtime: Runtime[LoopContext]) -> dict[str, Any]:
    ctx = runtime.context
    reason = should_stop(state) or "stopped"
    graph = ctx.graph.graph if ctx.graph is not None else None
    kind = kind_of(ctx.task)
    text = summary(ctx.task.name, ctx.model.name, reason, state, graph, kind.best_file)
    more = kind.finish(ctx.task, ctx.gpu, ctx.run, state, ctx.progress)  # a kind's last step
    ctx.run.write_summary(text + "".join(f"{line}\n" for line in more))
    ctx.progress({"node": "finish", "message": reason})
    return {"stop_reason": reason}


def search_table(
    choices: list[TechniqueChoice], attempts: list[Attempt], graph: ReasoningGraph | None
) -> list[str]:
    """The search's choices, the edge's statistics then and now, and what came of each."""
    header, rows = search_rows(choices, attempts, graph)
    return [
        "## The search: MCGS over the reasoning graph",
        "",
        "Statistics of the chosen edge (from the techniques the kernel had, for its bottleneck):"
        " visits (the prior counts as one), success rate, mean log-speedup per step.",
        "",
        *markdown_table(header, rows),
    ]


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
            f"{speed} | {'yes' if a.kept else ''} | {clip(note, 70, cell=True)} |"
        )
    choices = state.get("choices", [])
    if choices:
        lines += ["", *search_table(choices, attempts, graph)]
    return "\n".join(lines) + "\n"
