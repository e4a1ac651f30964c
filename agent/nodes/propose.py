"""propose: the search picks the technique to apply, the memory adds contrastive pairs, and the
model writes one candidate (source, launch, technique tags, rationale), or repairs the last one
from its compile log. Replies are parsed tolerantly, with one repair round."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from kernelwright.agent import experience
from kernelwright.agent.context import LoopContext
from kernelwright.agent.llm import Message
from kernelwright.agent.nodes.common import profile_view, stopwatch
from kernelwright.agent.replies import ReplyError, parse_proposal, repair_message
from kernelwright.agent.state import LoopState
from kernelwright.memory.contrastive import as_prompt
from kernelwright.memory.techniques import catalogue
from kernelwright.prompts.render import render
from kernelwright.tools.spec import CudaTask


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
    choice = experience.choose(ctx.graph.graph, applied, bottleneck, tried)
    if choice is not None:
        ctx.progress({"node": "propose", "message": f"search: {choice.line}", "choice": choice})
    return choice


def _pairs(state: LoopState, ctx: LoopContext, task: CudaTask) -> list[dict[str, Any]]:
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


def propose(state: LoopState, runtime: Runtime[LoopContext]) -> dict[str, Any]:
    ctx = runtime.context
    task = ctx.task
    assert isinstance(task, CudaTask)
    pending = state.get("proposal")
    repairing = bool(state.get("compile_log")) and pending is not None
    best_launch = state.get("best_launch") or task.launch.model_dump()
    launch = (pending.launch or best_launch) if repairing and pending else best_launch
    choice = state.get("choice") if repairing else _search(state, ctx)
    messages: list[Message] = render(
        "propose",
        task=task,
        launch=launch,
        source=state["best_source"],
        speedup=state.get("best_speedup", 1.0),
        profile=profile_view(state.get("profile"), state.get("best_compile")),
        technique=experience.technique_view(choice) if choice else None,
        techniques=list(catalogue()),
        example="",
        attempts=state.get("attempts", []),
        max_attempts=ctx.history,
        contrastive=[] if repairing else _pairs(state, ctx, task),
        repair={"source": pending.source, "log": state["compile_log"]}
        if repairing and pending
        else None,
    )
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
            proposal = parse_proposal(reply, task.entry)
        except ReplyError as first:
            retry = [*messages, {"role": "assistant", "content": reply}, repair_message(first)]
            try:
                proposal = parse_proposal(ctx.model.complete(retry), task.entry)
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
    if proposal.launch is None:  # no launch given: the one of the kernel it started from
        proposal = proposal.model_copy(update={"launch": state.get("best_launch")})
    if not repairing:
        update.update(repairs=0, compile_log="")
    return {**update, "proposal": proposal}
