"""The optimization loop's state: what goes in, what comes out, and what flows between nodes.

Values are frozen pydantic models; only the lists of attempts and of the search's choices, and
the elapsed time, accumulate.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from kernelwright.agent.experience import TechniqueChoice
from kernelwright.agent.replies import Proposal
from kernelwright.tools.results import Attempt, CheckReport, CompileResult, ProfileResult


class LoopInput(TypedDict):
    task_path: str
    max_candidates: int  # budget by candidates
    max_seconds: float  # budget by wall time (model and GPU included)
    plateau_rounds: int  # stop after this many candidates without a 2% gain
    max_repairs: int  # compile repairs per candidate


class LoopOutput(TypedDict, total=False):
    best_source: str
    best_launch: dict[str, Any] | None
    best_speedup: float
    stop_reason: str
    applied: list[str]
    attempts: list[Attempt]
    choices: list[TechniqueChoice]


class LoopState(LoopInput, total=False):
    attempts: Annotated[list[Attempt], operator.add]
    choices: Annotated[list[TechniqueChoice], operator.add]  # the search's, one per candidate
    elapsed_s: Annotated[float, operator.add]
    best_source: str
    best_launch: dict[str, Any] | None
    best_speedup: float  # of the best kernel over the original; 1.0 for the original
    best_index: int  # its attempt index (0: the original)
    best_ms: float | None
    best_compile: CompileResult | None  # the best kernel's resource report
    floor_ms: float | None  # roofline: the least time the bench size could take
    profile: ProfileResult | None
    proposal: Proposal | None  # the candidate in flight
    compile_log: str  # the last compile error, for a repair
    compiled: CompileResult | None
    report: CheckReport | None
    repairs: int
    model_ms: float
    rounds_without_gain: int
    stop_reason: str
    applied: list[str]  # the catalogue techniques the best kernel has (the graph's state)
    path: list[dict[str, Any]]  # the kept steps from the original to it: state, tag, ...
    choice: TechniqueChoice | None  # the search's choice for the candidate in flight
