"""The reasoning graph on disk: it persists, never counts an attempt twice, and runs that share
the directory add up."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from kernelwright.memory.graph_file import GraphFileError, SavedGraph, by_technique
from kernelwright.memory.reasoning import FAIL_LOG_SPEEDUP
from kernelwright.memory.store import Episode

MEM = "memory-bound"


def test_learned_statistics_persist(tmp_path: Path) -> None:
    saved = SavedGraph.in_dir(tmp_path)
    assert saved.graph.edges == {} and not saved.path.exists()
    assert saved.learn("r1", 1, lambda g: g.update((), "coalescing", MEM, True, 2.0))
    assert saved.learn("r1", 2, lambda g: g.update(("coalescing",), "unroll", MEM, False, None))
    again = SavedGraph.in_dir(tmp_path)
    assert again.graph.to_dict() == saved.graph.to_dict()
    stats = again.graph.peek((), "coalescing", MEM)
    assert (stats.attempts, stats.successes) == (1, 1)
    assert again.graph.peek(("coalescing",), "unroll", MEM).sum_log_speedup == FAIL_LOG_SPEEDUP
    assert again.learned == {"r1": 2}
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".graph-")] == []


def test_an_attempt_is_learned_once(tmp_path: Path) -> None:
    saved = SavedGraph.in_dir(tmp_path)
    assert saved.learn("r1", 1, lambda g: g.update((), "unroll", MEM, True, 1.2))
    assert not saved.learn("r1", 1, lambda g: g.update((), "unroll", MEM, True, 1.2))
    assert SavedGraph.in_dir(tmp_path).graph.peek((), "unroll", MEM).attempts == 1


def test_processes_sharing_the_file_add_up(tmp_path: Path) -> None:
    code = f"""
import sys
from kernelwright.memory.graph_file import SavedGraph
saved = SavedGraph.in_dir({str(tmp_path)!r})
for i in range(1, 31):
    saved.learn(sys.argv[1], i, lambda g: g.update((), "fusion", "latency-bound", True, 1.1))
"""
    procs = [subprocess.Popen([sys.executable, "-c", code, f"run{n}"]) for n in range(3)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    saved = SavedGraph.in_dir(tmp_path)
    assert saved.graph.peek((), "fusion", "latency-bound").attempts == 90
    assert saved.learned == {"run0": 30, "run1": 30, "run2": 30}


def test_a_damaged_file_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "reasoning_graph.json").write_text('{"edges": [{"state": ')
    with pytest.raises(GraphFileError, match="not a reasoning graph") as err:
        SavedGraph.in_dir(tmp_path)
    assert "\n" not in str(err.value)


def test_imported_attempts_teach_their_own_step(tmp_path: Path) -> None:
    saved = SavedGraph.in_dir(tmp_path)
    episodes = [
        Episode(
            id="a:1",
            source="",
            bottleneck=MEM,
            technique="coalescing",
            verdict="correct",
            speedup=3.0,
        ),
        Episode(
            id="a:2",
            source="",
            bottleneck=MEM,
            technique="unroll",
            state=("coalescing",),
            verdict="correct",
            speedup=3.3,
            parent_speedup=3.0,
        ),
        Episode(
            id="a:3",
            source="",
            bottleneck=MEM,
            technique="fusion",
            state=("coalescing",),
            verdict="wrong",
            parent_speedup=3.0,
        ),
        Episode(id="b:1", source="", bottleneck=MEM, verdict="correct", speedup=2.0),  # no step
    ]
    assert saved.learn_episodes(episodes) == 3
    g = SavedGraph.in_dir(tmp_path).graph
    assert g.peek((), "coalescing", MEM).sum_log_speedup == pytest.approx(1.0986, abs=1e-4)
    assert g.peek(("coalescing",), "unroll", MEM).sum_log_speedup == pytest.approx(0.0953, abs=1e-4)
    assert g.peek(("coalescing",), "fusion", MEM).successes == 0
    totals = by_technique(g)
    assert set(totals) == {("coalescing", MEM), ("unroll", MEM), ("fusion", MEM)}
    assert totals[("fusion", MEM)].attempts == 1


def test_a_non_finite_log_speedup_is_never_learned_or_written(tmp_path: Path) -> None:
    saved = SavedGraph.in_dir(tmp_path)
    saved.learn("r", 1, lambda g: g.record((), "unroll", MEM, True, math.inf))
    saved.learn("r", 2, lambda g: g.record((), "unroll", MEM, True, math.nan))
    saved.learn_episodes(
        [
            Episode(
                id="a:1",
                source="",
                bottleneck=MEM,
                technique="unroll",
                verdict="correct",
                speedup=math.inf,
            )
        ]
    )
    saved.learn("r", 3, lambda g: g.update((), "unroll", MEM, True, 2.0))
    text = saved.path.read_text()
    assert "Infinity" not in text and "NaN" not in text
    stats = SavedGraph.in_dir(tmp_path).graph.peek((), "unroll", MEM)
    assert stats.attempts == 1 and stats.sum_log_speedup == pytest.approx(math.log(2.0))


def test_a_file_with_non_finite_statistics_is_read_without_them(tmp_path: Path) -> None:
    rows = [
        {"state": [], "tag": "unroll", "bottleneck": MEM, "attempts": 1, "successes": 1}
        | {"sum_log_speedup": value}
        for value in (math.inf, 0.5)
    ]
    rows[1]["tag"] = "coalescing"
    (tmp_path / "reasoning_graph.json").write_text(json.dumps({"version": 1, "edges": rows}))
    saved = SavedGraph.in_dir(tmp_path)
    assert saved.graph.dropped == 1 and list(by_technique(saved.graph)) == [("coalescing", MEM)]
    assert saved.clean() == 1  # rewritten without it
    assert "Infinity" not in saved.path.read_text()
    assert SavedGraph.in_dir(tmp_path).graph.dropped == 0 and saved.clean() == 0
