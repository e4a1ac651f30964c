"""The reasoning graph and MCGS: merged states, learned statistics, UCT, and the synthetic race."""

from __future__ import annotations

import json
import math

import pytest

from kernelwright.evals.bench_mcgs import compare
from kernelwright.memory.mcgs import search, select
from kernelwright.memory.reasoning import FAIL_LOG_SPEEDUP, ReasoningGraph, state_key
from kernelwright.memory.techniques import Technique

MEM = "memory-bound"


def tech(tag: str, prior: float, requires: tuple[str, ...] = ()) -> Technique:
    return Technique(
        tag=tag,
        name=tag,
        when="w",
        pitfalls="p",
        helps=(MEM,),
        prior={MEM: prior, "compute-bound": 0.0, "latency-bound": 0.0},
        requires=requires,
    )


def small(*techniques: Technique) -> ReasoningGraph:
    return ReasoningGraph({t.tag: t for t in techniques})


def test_two_orders_reach_one_node() -> None:
    graph = ReasoningGraph()
    graph.update([], "coalescing", MEM, True, 1.5)
    graph.update(["coalescing"], "unroll", MEM, True, 1.1)
    graph.update([], "unroll", MEM, True, 1.05)
    graph.update(["unroll"], "coalescing", MEM, True, 1.6)
    assert graph.states == {(), ("coalescing",), ("unroll",), ("coalescing", "unroll")}
    graph.update(["unroll", "coalescing"], "fusion", MEM, True, 1.3)
    assert graph.peek(["coalescing", "unroll"], "fusion", MEM).attempts == 1


def test_search_measures_each_set_once() -> None:
    graph = small(tech("a", 0.1), tech("b", 0.2), tech("c", 0.0), tech("d", 0.05))
    seen: list[tuple[str, ...]] = []

    def evaluate(sequence: tuple[str, ...]) -> float:
        seen.append(state_key(sequence))
        return 1.0 + 0.1 * len(sequence)

    result = search(graph, (), MEM, evaluate, budget=100, depth=2)
    assert len(seen) == len(set(seen)) == result.evaluations == 4 + 6  # not 4 + 12 orders
    assert len(result.best) == 2


def test_statistics_update_after_attempts() -> None:
    graph = ReasoningGraph()
    prior = graph.peek([], "coalescing", MEM)
    assert prior.attempts == 0 and prior.visits == 1.0 and prior.mean_log_speedup == 0.35

    after = graph.update([], "coalescing", MEM, True, 2.0)
    assert (after.attempts, after.successes, after.visits) == (1, 1, 2.0)
    assert after.mean_log_speedup == pytest.approx((0.35 + math.log(2.0)) / 2)
    assert after.success_rate == pytest.approx(0.75)

    before = after.mean_log_speedup
    failed = graph.update([], "coalescing", MEM, False, None)
    assert failed.attempts == 2 and failed.success_rate == pytest.approx(1.5 / 3)
    assert failed.mean_log_speedup == pytest.approx((0.35 + math.log(2.0) + FAIL_LOG_SPEEDUP) / 3)
    assert failed.mean_log_speedup < before
    # other bottlenecks and states are untouched
    assert graph.peek([], "coalescing", "compute-bound").attempts == 0
    assert graph.visits([], MEM) == 2 and graph.visits(["coalescing"], MEM) == 0


def test_uct_tries_an_unvisited_promising_edge_then_exploits_the_best() -> None:
    graph = small(tech("a", 0.3), tech("b", 0.1), tech("c", 0.0))
    assert select(graph, [], MEM) == "a"  # the prior decides before anything is measured
    for _ in range(3):
        graph.update([], "a", MEM, True, 1.0)  # a turns out to do nothing
    assert select(graph, [], MEM) == "b"  # unvisited, and its prior is the better one
    for _ in range(10):
        graph.update([], "b", MEM, True, 1.8)
    picks = set()
    for _ in range(20):
        tag = select(graph, [], MEM)
        assert tag is not None
        picks.add(tag)
        graph.update([], tag, MEM, True, 1.8 if tag == "b" else 1.0)
    assert picks == {"b"}


def test_requires_and_applied_techniques_are_respected() -> None:
    graph = small(tech("base", 0.0), tech("top", 0.4, requires=("base",)), tech("x", 0.1))
    assert "top" not in graph.options([])
    assert select(graph, [], MEM) == "x"
    assert select(graph, ["x"], MEM) == "base"
    assert select(graph, ["base"], MEM) == "top"
    assert select(graph, ["base", "top", "x"], MEM) is None

    orders: list[tuple[str, ...]] = []

    def evaluate(sequence: tuple[str, ...]) -> float:
        orders.append(sequence)
        return 1.2

    search(graph, (), MEM, evaluate, budget=50, depth=3)
    assert all(s.index("base") < s.index("top") for s in orders if "top" in s)


def test_failed_candidates_teach_the_graph() -> None:
    graph = small(tech("bad", 0.3), tech("good", 0.1))

    def evaluate(sequence: tuple[str, ...]) -> float | None:
        return None if "bad" in sequence else 1.5

    result = search(graph, (), MEM, evaluate, budget=10, depth=1)
    assert result.best == ("good",) and result.best_speedup == pytest.approx(1.5)
    assert graph.peek([], "bad", MEM).success_rate < 0.5
    bad, good = graph.peek([], "bad", MEM), graph.peek([], "good", MEM)
    assert bad.mean_log_speedup < good.mean_log_speedup


def test_to_dict_from_dict_round_trip() -> None:
    graph = ReasoningGraph()
    graph.update([], "coalescing", MEM, True, 1.7)
    graph.update(["coalescing"], "vector-access-16b", MEM, False, None)
    graph.update(["coalescing"], "vector-access-16b", "compute-bound", True, 0.9)
    data = json.loads(json.dumps(graph.to_dict()))
    again = ReasoningGraph.from_dict(data)
    assert again.to_dict() == graph.to_dict()
    assert again.states == graph.states
    for state in graph.states:
        for bottleneck in (MEM, "compute-bound"):
            assert again.stats(state, bottleneck) == graph.stats(state, bottleneck)


def test_mcgs_needs_at_most_half_the_evaluations_of_random_choice() -> None:
    mcgs, rand = compare(range(12))
    print(f"MCGS {mcgs:.1f} vs random {rand:.1f} evaluations")
    assert mcgs <= 0.5 * rand


def test_backpropagate_along_a_kept_path_never_blames_the_steps_that_held() -> None:
    from kernelwright.memory.mcgs import Step, backpropagate

    a, b = tech("a", 0.1), tech("b", 0.1)
    path = [Step((), "a", MEM, 0.0), Step(("a",), "b", MEM, math.log(2.0))]
    loop, tree = small(a, b), small(a, b)
    backpropagate(loop, path, None, kept=True)  # b broke the kernel that a made 2x faster
    backpropagate(tree, path, None)  # plain MCTS: the failure below counts against a too
    assert loop.peek((), "a", MEM).sum_log_speedup == pytest.approx(math.log(2.0))
    assert tree.peek((), "a", MEM).sum_log_speedup == pytest.approx(
        math.log(2.0) + FAIL_LOG_SPEEDUP
    )
    for g in (loop, tree):
        assert g.peek(("a",), "b", MEM).successes == 0
        assert g.peek(("a",), "b", MEM).sum_log_speedup == pytest.approx(FAIL_LOG_SPEEDUP)
    backpropagate(loop, path, math.log(3.0), kept=True)  # a later success credits a as well
    assert loop.peek((), "a", MEM).sum_log_speedup == pytest.approx(math.log(2.0) + math.log(3.0))
    assert loop.peek(("a",), "b", MEM).sum_log_speedup == pytest.approx(
        FAIL_LOG_SPEEDUP + math.log(1.5)
    )
