"""Monte Carlo Graph Search over the reasoning graph (DESIGN.md, Memory: MCGS).

Selection by UCT on the graph's edge statistics (the catalogue prior counts as one visit),
expansion of one new state, evaluation by measurement (the GPU in the real system, a function
in tests), and back-propagation of log-speedup along the path. States are sets, so two orders
of the same techniques reach one node and are measured once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass

from kernelwright.memory.reasoning import (
    FAIL_LOG_SPEEDUP,
    EdgeStats,
    ReasoningGraph,
    StateKey,
    state_key,
)

C_EXPLORE = 0.1  # log-speedups of good steps are ~0.1-0.4, so exploration is on that scale
Evaluate = Callable[[tuple[str, ...]], float | None]


@dataclass(frozen=True)
class SearchResult:
    best: tuple[str, ...]  # the technique sequence of the fastest state measured
    best_speedup: float
    evaluations: int


def uct(stats: EdgeStats, parent_visits: int, c: float = C_EXPLORE) -> float:
    """Mean log-speedup plus an exploration bonus that grows with the parent's visits."""
    return stats.mean_log_speedup + c * math.sqrt(math.log(parent_visits + 1) / stats.visits)


def select(
    graph: ReasoningGraph,
    state: Iterable[str],
    bottleneck: str,
    c: float = C_EXPLORE,
    skip: Collection[str] = (),
) -> str | None:
    """The next technique by UCT: not applied yet, prerequisites met, not in `skip`."""
    key = state_key(state)
    parent_visits = graph.visits(key, bottleneck)
    scored = [
        (uct(graph.peek(key, tag, bottleneck), parent_visits, c), tag)
        for tag in graph.options(key)
        if tag not in skip
    ]
    return max(scored, key=lambda pair: pair[0])[1] if scored else None  # ties: first tag


def search(
    graph: ReasoningGraph,
    root: Iterable[str],
    bottleneck: str,
    evaluate: Evaluate,
    budget: int,
    *,
    depth: int = 4,
    c: float = C_EXPLORE,
    until: float | None = None,
) -> SearchResult:
    """Runs MCGS from `root` for at most `budget` evaluations (or until a speedup >= `until`).

    `evaluate(sequence)` measures the root kernel with `sequence` applied and returns its
    speedup over the root, or None when the candidate is wrong.
    """
    root_key = state_key(root)
    value: dict[StateKey, float | None] = {root_key: 0.0}  # log-speedup over root; None: wrong
    done: set[StateKey] = set()  # measurements are final: nothing new below these states
    best: tuple[str, ...] = ()
    best_log = 0.0
    evaluations = 0
    while evaluations < budget and root_key not in done:
        state, path = root_key, []
        sequence: tuple[str, ...] = ()
        while len(sequence) < depth:
            tag = select(graph, state, bottleneck, c, _done_tags(graph, state, done))
            if tag is None:
                break
            path.append((state, tag))
            sequence = (*sequence, tag)
            state = graph.child(state, tag)
            if state not in value:  # expansion and evaluation
                speedup = evaluate(sequence)
                evaluations += 1
                log = None if speedup is None else math.log(max(speedup, 1e-3))
                value[state] = log
                if log is not None and log > best_log:
                    best, best_log = sequence, log
                break
            if value[state] is None:
                break
        if value[state] is None or len(sequence) >= depth:
            done.add(state)
        for seen in [state, *(parent for parent, _ in reversed(path))]:
            if seen not in done and _done_tags(graph, seen, done) != set(graph.options(seen)):
                break
            done.add(seen)  # wrong, at full depth, or all its children are done
        if path:
            _backpropagate(graph, path, state, value, bottleneck)
        if until is not None and best_log >= math.log(until):
            break
    return SearchResult(best, math.exp(best_log), evaluations)


def _done_tags(graph: ReasoningGraph, state: StateKey, done: set[StateKey]) -> set[str]:
    return {tag for tag in graph.options(state) if graph.child(state, tag) in done}


def _backpropagate(
    graph: ReasoningGraph,
    path: list[tuple[StateKey, str]],
    leaf: StateKey,
    value: dict[StateKey, float | None],
    bottleneck: str,
) -> None:
    steps = [Step(state, tag, bottleneck, value[state] or 0.0) for state, tag in path]
    backpropagate(graph, steps, value[leaf])


@dataclass(frozen=True)
class Step:
    """One edge on a path from the root: applying `tag` to the kernel in `state`, whose
    log-speedup over the root was `value`, when `bottleneck` limited it."""

    state: StateKey
    tag: str
    bottleneck: str
    value: float


def backpropagate(
    graph: ReasoningGraph, path: Sequence[Step], leaf: float | None, *, kept: bool = False
) -> None:
    """Each edge on the path learns the log-speedup from its own state to the leaf (the root's
    log-speedup of what the last step made, None when it was wrong). The last edge fails when
    the leaf is wrong, which counts as FAIL_LOG_SPEEDUP below the state it started from.

    `kept`: the path's states are kernels the caller keeps (an optimization loop never loses
    its best), so an earlier edge learns at least what its own step achieved: a wrong or slower
    candidate further down does not make the step that led there look worse."""
    if not path:
        return
    ok = leaf is not None
    if leaf is None:
        leaf = path[-1].value + FAIL_LOG_SPEEDUP
    for i, step in enumerate(path):
        last = i == len(path) - 1
        reached = leaf if last or not kept else max(leaf, path[i + 1].value)
        graph.record(step.state, step.tag, step.bottleneck, ok or not last, reached - step.value)
