"""propose: the search picks the technique to apply, the memory adds contrastive pairs and a
worked example of the technique (a verified before/after pair), and the model writes one
candidate (source, launch, technique tags, rationale), or repairs the last one from its
compile log. Replies are parsed tolerantly, with one repair round. A KernelBench
problem gets its own prompt and its candidate is a Python file defining ModelNew."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from kernelwright.agent import experience
from kernelwright.agent.context import LoopContext
from kernelwright.agent.kinds import kind_of
from kernelwright.agent.llm import Message
from kernelwright.agent.nodes.common import stopwatch
from kernelwright.agent.replies import Proposal, ReplyError
from kernelwright.agent.state import LoopState
from kernelwright.memory import worked
from kernelwright.memory.contrastive import as_prompt
from kernelwright.memory.signature import op_class, task_signature
from kernelwright.memory.techniques import catalogue
from kernelwright.tools.task import Task


def _search(state: LoopState, ctx: LoopContext) -> experience.TechniqueChoice | None:
    """The technique for the next candidate, shown in the progress with its statistics."""
    if ctx.graph is None:
        return None
    applied = state.get("applied", [])
    bottleneck = experience.bottleneck_of(state.get("profile"))
    tried = [
        c.tag
        for c in state.get("choices", [])
        if list(c.state) == sorted(applied) and c.bottleneck == bottleneck
    ]
    choice = experience.choose(
        ctx.graph.graph, applied, bottleneck, tried, state["best_source"], op_class(ctx.task)
    )
    if choice is not None:
        ctx.progress({"node": "propose", "message": f"search: {choice.line}", "choice": choice})
    return choice


def _pairs(state: LoopState, ctx: LoopContext, task: Task) -> list[dict[str, Any]]:
    if ctx.store is None:
        return []
    found = experience.pairs_for(
        ctx.store,
        task,
        experience.bottleneck_of(state.get("profile")),
        state["best_source"],
        state.get("attempts", []),
        ctx.pairs,
        ctx.pair_chars,
    )
    if found:
        here = sum(p.origin == "this run" for p in found)
        ctx.progress(
            {
                "node": "propose",
                "message": f"memory: {len(found)} contrastive pair(s), {here} from this run, "
                f"{len(found) - here} from earlier runs",
                "pairs": len(found),
            }
        )
    return as_prompt(found)


def _worked(
    state: LoopState, ctx: LoopContext, choice: experience.TechniqueChoice | None
) -> dict[str, Any] | None:
    """The chosen technique's worked example for the prompt, shown in the progress."""
    if choice is None:
        return None
    found = experience.worked_example(ctx.store, ctx.task, choice, state["best_source"], ctx.arch)
    if found is None:
        return None
    ctx.progress(
        {
            "node": "propose",
            "message": f"example: {worked.label(found, ctx.arch)}",
            "worked_example": found.id,
        }
    )
    return worked.as_prompt(
        found, task_signature=task_signature(ctx.task), op_class=op_class(ctx.task), arch=ctx.arch
    )


def _messages(
    state: LoopState,
    ctx: LoopContext,
    choice: experience.TechniqueChoice | None,
    pending: Proposal | None,
    repairing: bool,
) -> list[Message]:
    """The propose prompt of the task's kind."""
    task = ctx.task
    technique = experience.technique_view(choice) if choice else None
    repair = (
        {"source": pending.source, "log": state["compile_log"]} if repairing and pending else None
    )
    values = {
        "speedup": state.get("best_speedup", 1.0),
        "technique": technique,
        "techniques": list(catalogue()),
        "attempts": state.get("attempts", []),
        "max_attempts": ctx.history,
        "contrastive": [] if repairing else _pairs(state, ctx, task),
        "worked_example": None if repairing else _worked(state, ctx, choice),
        "repair": repair,
    }
    kind = kind_of(task)
    launch = None
    if kind.inherits_launch:
        best_launch = state.get("best_launch") or kind.launch(task)
        launch = (pending.launch or best_launch) if repairing and pending else best_launch
    return kind.prompt(task, state, values, launch)


def propose(state: LoopState, runtime: Runtime[LoopContext]) -> dict[str, Any]:
    ctx = runtime.context
    pending = state.get("proposal")
    repairing = bool(state.get("compile_log")) and pending is not None
    kind = kind_of(ctx.task)
    # A kind that starts with a port (C++ to CUDA) picks no technique until a port is kept:
    # the port's gain over one CPU core would be credited to whatever the search had picked.
    porting = bool(kind.first_prompt) and not state.get("best_index", 0)
    choice = state.get("choice") if repairing or porting else _search(state, ctx)
    messages = _messages(state, ctx, choice, pending, repairing)
    n = len(state.get("attempts", [])) + 1
    ctx.progress(
        {
            "node": "propose",
            "message": f"candidate {n}: " + ("repairing" if repairing else "writing"),
        }
    )
    with stopwatch() as took:
        reply = ctx.model.complete(messages)
        try:
            proposal = kind.parse(ctx.task, reply)
        except ReplyError as first:
            retry = [*messages, {"role": "assistant", "content": reply}, kind.repair(first)]
            try:
                proposal = kind.parse(ctx.task, ctx.model.complete(retry))
            except ReplyError as second:
                proposal = None
                problem = f"no usable kernel in the reply: {second}"
    update: dict[str, Any] = {
        "model_ms": state.get("model_ms", 0.0) + took["s"] * 1e3,
        "elapsed_s": took["s"],
        "choice": choice,
    }
    if proposal is None:
        return {**update, "proposal": None, "compile_log": problem}
    if proposal.launch is None and kind.inherits_launch:  # the launch it started from
        proposal = proposal.model_copy(update={"launch": state.get("best_launch")})
    if not repairing:
        update.update(repairs=0, compile_log="")
    return {**update, "proposal": proposal}
