"""reflect: record the measured attempt, keep it only if it is verified and faster, and let the
model explain the outcome in a few sentences. The memory keeps the attempt, right or wrong, and
the reasoning graph learns its measured speedup."""

from __future__ import annotations

import difflib
from typing import Any

from langgraph.runtime import Runtime

from kernelwright.agent import experience
from kernelwright.agent.context import LoopContext
from kernelwright.agent.kinds import kind_of, profile_view
from kernelwright.agent.llm import Message
from kernelwright.agent.nodes.common import GAIN, beats, stopwatch
from kernelwright.agent.state import LoopState
from kernelwright.memory.techniques import catalogue
from kernelwright.prompts.render import render
from kernelwright.tools.results import Attempt


def _first_error(log: str) -> str:
    for line in log.splitlines():
        if "error" in line.lower():
            return line.strip()
    return log.strip().splitlines()[0] if log.strip() else "compile failed"


def reflect(state: LoopState, runtime: Runtime[LoopContext]) -> dict[str, Any]:
    ctx = runtime.context
    proposal, report = state.get("proposal"), state.get("report")
    if proposal is None:
        verdict, reason = "error", state.get("compile_log", "no candidate")
    elif report is None:
        verdict, reason = (
            "compile_error",
            f"does not compile: {_first_error(state.get('compile_log', ''))}",
        )
    else:
        verdict, reason = report.verdict, report.reason
    timing = report.timing if report is not None and report.ok else None
    speedup = timing.speedup if timing else None
    best = state.get("best_speedup", 1.0)
    kept = verdict == "correct" and speedup is not None and beats(speedup, best)
    choice = state.get("choice")
    tags = experience.known_tags(proposal.tags) if proposal else ()
    technique = experience.edge_tag(tags, choice) if proposal else ""
    gained = kept and speedup is not None and speedup >= best * GAIN
    explanation, model_s = "", 0.0
    best_file = kind_of(ctx.task).best_file
    if proposal is not None:
        diff = "".join(
            difflib.unified_diff(
                state["best_source"].splitlines(True),
                proposal.source.splitlines(True),
                best_file,
                best_file.replace("best", "candidate"),
            )
        )
        messages: list[Message] = render(
            "reflect",
            tags=list(tags),
            verdict=verdict,
            reason=reason,
            speedup=speedup,
            best_speedup=best,
            profile_before=profile_view(state.get("profile"), state.get("best_compile")),
            profile_after=None,
            diff=diff,
        )
        ctx.progress({"node": "reflect", "message": "explaining the outcome"})
        with stopwatch() as took:
            explanation = " ".join(ctx.model.complete(messages).split())
        model_s = took["s"]
    attempts = state.get("attempts", [])
    attempt = Attempt(
        index=len(attempts) + 1,
        parent=state.get("best_index", 0),
        tags=tags,
        rationale=proposal.rationale if proposal else "",
        source=proposal.source if proposal else "",
        launch=proposal.launch if proposal else None,
        verdict=verdict,
        reason=reason,
        speedup=speedup,
        speedup_iqr=timing.speedup_iqr if timing else None,
        candidate_ms=timing.candidate.median_ms if timing else None,
        repairs=state.get("repairs", 0),
        explanation=explanation,
        kept=kept,
        model_ms=state.get("model_ms", 0.0) + model_s * 1e3,
    )
    ctx.run.append_attempt(attempt)
    applied = state.get("applied", [])
    bottleneck = experience.bottleneck_of(state.get("profile"))
    step = experience.step_dict(applied, technique, bottleneck, best) if technique else None
    if proposal is not None:
        _remember(ctx, state, attempt, technique, applied, bottleneck, best, step)
    update: dict[str, Any] = {
        "attempts": [attempt],
        "proposal": None,
        "compiled": None,
        "report": None,
        "compile_log": "",
        "repairs": 0,
        "model_ms": 0.0,
        "elapsed_s": model_s,
        "rounds_without_gain": 0 if gained else state.get("rounds_without_gain", 0) + 1,
        "choice": None,
        "choices": [choice.model_copy(update={"attempt": attempt.index})] if choice else [],
    }
    if kept and proposal is not None and timing is not None:
        update.update(
            best_source=proposal.source,
            best_launch=proposal.launch,
            best_speedup=speedup,
            best_index=attempt.index,
            best_ms=timing.candidate.median_ms,
            best_compile=state.get("compiled"),
            floor_ms=timing.floor_ms if timing.floor_ms else state.get("floor_ms"),
            applied=sorted({*applied, *(t for t in tags if t in catalogue())}),
            path=[*state.get("path", []), step] if step else state.get("path", []),
        )
        ctx.run.write_best(proposal.source, proposal.launch, best_file)
    ctx.progress({"node": "reflect", "attempt": attempt, "best_speedup": speedup if kept else best})
    return update


def _remember(
    ctx: LoopContext,
    state: LoopState,
    attempt: Attempt,
    technique: str,
    applied: list[str],
    bottleneck: str,
    best: float,
    step: dict[str, Any] | None,
) -> None:
    """The attempt into the store (idempotent by run and index) and, when it names a technique,
    its measurement into the reasoning graph along the kept chain (saved at once)."""
    task = ctx.task
    if ctx.store is not None:
        where = experience.provenance(
            task, bottleneck, ctx.arch, ctx.model.name, ctx.run_id, technique, applied, best
        )
        ctx.store.add_many([(attempt, where)])
    if ctx.graph is not None and step is not None:
        experience.learn(ctx.graph, ctx.run_id, attempt, state.get("path", []), step)
