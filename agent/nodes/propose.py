"""propose: the search picks the technique to apply, the memory adds contrastive pairs, and the
model writes one candidate (source, launch, technique tags, rationale), or repairs the last one
from its compile log. Replies are parsed tolerantly, with one repair round. A KernelBench
problem gets its own prompt and its candidate is a Python file defining ModelNew."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langgraph.runtime import Runtime

from kernelwright.agent import experience, replies, replies_kernelbench
from kernelwright.agent.context import LoopContext
from kernelwright.agent.llm import Message
from kernelwright.agent.nodes.common import profile_view, stopwatch
from kernelwright.agent.replies import Proposal, ReplyError
from kernelwright.agent.state import LoopState
from kernelwright.memory.contrastive import as_prompt
from kernelwright.memory.signature import op_class
from kernelwright.memory.techniques import catalogue
from kernelwright.prompts.render import render
from kernelwright.tools.kernelbench import KernelBenchTask
from kernelwright.tools.spec import CudaTask
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


def _messages(
    state: LoopState,
    ctx: LoopContext,
    choice: experience.TechniqueChoice | None,
    pending: Proposal | None,
    repairing: bool,
) -> list[Message]:
    """The propose prompt: CUDA's, or the KernelBench variant."""
    task = ctx.task
    technique = experience.technique_view(choice) if choice else None
    repair = (
        {"source": pending.source, "log": state["compile_log"]} if repairing and pending else None
    )
    contrastive = [] if repairing else _pairs(state, ctx, task)
    if isinstance(task, KernelBenchTask):
        return render(
            "propose_kernelbench",
            task=task,
            source=state["best_source"] if state.get("best_index", 0) else None,
            speedup=state.get("best_speedup", 1.0),
            best_ms=state.get("best_ms"),
            technique=technique,
            techniques=list(catalogue()),
            attempts=state.get("attempts", []),
            max_attempts=ctx.history,
            contrastive=contrastive,
            repair=repair,
        )
    best_launch = state.get("best_launch") or task.launch.model_dump()
    launch = (pending.launch or best_launch) if repairing and pending else best_launch
    return render(
        "propose",
        task=task,
        launch=launch,
        source=state["best_source"],
        speedup=state.get("best_speedup", 1.0),
        profile=profile_view(state.get("profile"), state.get("best_compile")),
        technique=technique,
        techniques=list(catalogue()),
        example="",
        attempts=state.get("attempts", []),
        max_attempts=ctx.history,
        contrastive=contrastive,
        repair=repair,
    )


def _parser(task: Task) -> tuple[Callable[[str], Proposal], Callable[[ReplyError], Message]]:
    """How a reply is read for this task, and the repair round's message."""
    if isinstance(task, CudaTask):
        entry = task.entry
        return (lambda text: replies.parse_proposal(text, entry)), replies.repair_message
    return replies_kernelbench.parse_model_new, replies_kernelbench.repair_message


def propose(state: LoopState, runtime: Runtime[LoopContext]) -> dict[str, Any]:
    ctx = runtime.context
    pending = state.get("proposal")
    repairing = bool(state.get("compile_log")) and pending is not None
    choice = state.get("choice") if repairing else _search(state, ctx)
    messages = _messages(state, ctx, choice, pending, repairing)
    parse, repair_message = _parser(ctx.task)
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
            proposal = parse(reply)
        except ReplyError as first:
            retry = [*messages, {"role": "assistant", "content": reply}, repair_message(first)]
            try:
                proposal = parse(ctx.model.complete(retry))
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
    if proposal.launch is None and isinstance(ctx.task, CudaTask):  # the launch it started from
        proposal = proposal.model_copy(update={"launch": state.get("best_launch")})
    if not repairing:
        update.update(repairs=0, compile_log="")
    return {**update, "proposal": proposal}
