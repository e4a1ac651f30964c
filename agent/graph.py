"""The optimization loop as a LangGraph StateGraph: this module only wires nodes and routers.

profile -> propose -> compile -> verify -> reflect -> propose   (keep searching)
              ^          | error (bounded repairs)   |-> profile   (a new best: measure it)
              +----------+                           +-> finish    (budget, plateau, roofline)
"""

from __future__ import annotations

from typing import Literal

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer

from kernelwright.agent.context import LoopContext
from kernelwright.agent.nodes.common import should_stop
from kernelwright.agent.nodes.compile import compile_candidate
from kernelwright.agent.nodes.finish import finish
from kernelwright.agent.nodes.profile import profile
from kernelwright.agent.nodes.propose import propose
from kernelwright.agent.nodes.reflect import reflect
from kernelwright.agent.nodes.verify import verify
from kernelwright.agent.state import LoopInput, LoopOutput, LoopState


def after_profile(state: LoopState) -> Literal["propose", "finish"]:
    return "finish" if state.get("stop_reason") else "propose"


def after_propose(state: LoopState) -> Literal["compile", "reflect"]:
    return "compile" if state.get("proposal") is not None else "reflect"


def after_compile(state: LoopState) -> Literal["verify", "propose", "reflect"]:
    compiled = state.get("compiled")
    if compiled is not None and compiled.ok:
        return "verify"
    return "propose" if state.get("repairs", 0) <= state["max_repairs"] else "reflect"


def after_reflect(state: LoopState) -> Literal["profile", "propose", "finish"]:
    if should_stop(state):
        return "finish"
    last = state["attempts"][-1]
    return "profile" if last.kept else "propose"


def build(checkpointer: Checkpointer = None) -> CompiledStateGraph:
    graph = StateGraph(
        LoopState, context_schema=LoopContext, input_schema=LoopInput, output_schema=LoopOutput
    )
    graph.add_node("profile", profile)
    graph.add_node("propose", propose)
    graph.add_node("compile", compile_candidate)
    graph.add_node("verify", verify)
    graph.add_node("reflect", reflect)
    graph.add_node("finish", finish)
    graph.add_edge(START, "profile")
    graph.add_conditional_edges("profile", after_profile)
    graph.add_conditional_edges("propose", after_propose)
    graph.add_conditional_edges("compile", after_compile)
    graph.add_edge("verify", "reflect")
    graph.add_conditional_edges("reflect", after_reflect)
    graph.add_edge("finish", END)
    return graph.compile(checkpointer=checkpointer)
