"""Contrastive pairs: a faster correct attempt beside a slower or wrong related one."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelwright.memory.contrastive import as_prompt, pairs, within_budget
from kernelwright.memory.store import ChromaStore
from tests.memory.test_store import GEMM, NAIVE, SHARED, WARP, WHERE, attempt

SOFTMAX = """extern "C" __global__ void softmax(const float* x, float* y, int m, int n) {
    int row = blockIdx.x;
    float mx = -1e30f;
    for (int i = 0; i < n; ++i) mx = fmaxf(mx, x[row * n + i]);
    float s = 0.0f;
    for (int i = 0; i < n; ++i) s += expf(x[row * n + i] - mx);
    for (int i = 0; i < n; ++i) y[row * n + i] = expf(x[row * n + i] - mx) / s;
}"""


@pytest.fixture
def store(tmp_path: Path) -> ChromaStore:
    s = ChromaStore.open(tmp_path)
    # an earlier run on the same task: shared memory helped, the warp version broke, then won
    s.add(attempt(1, SHARED, speedup=3.0, tags=("shared-memory",)), run_id="old", **WHERE)
    s.add(
        attempt(2, WARP.replace("n / 4", "n"), "wrong", parent=1, reason="max abs err 3.2"),
        run_id="old",
        **WHERE,
    )
    s.add(attempt(3, WARP, speedup=6.0, parent=1, tags=("warp-shuffle",)), run_id="old", **WHERE)
    # another task, another op class: only as a fallback by similarity
    other = {**WHERE, "task_signature": "matmul", "op_class": "gemm", "bottleneck": "compute-bound"}
    s.add(attempt(1, GEMM, speedup=1.0), run_id="mm", **other)
    s.add(
        attempt(2, GEMM.replace("++i", "i += 2"), "wrong", parent=1, reason="wrong"),
        run_id="mm",
        **other,
    )
    return s


def test_pairs_from_the_store_are_real_contrasts(store: ChromaStore) -> None:
    got = pairs(
        store,
        task_signature=WHERE["task_signature"],
        op_class="reduction",
        bottleneck="memory-bound",
        source=NAIVE,
        run_attempts=[],
        k=3,
    )
    assert got, "no pairs from a store holding faster and wrong attempts"
    first = got[0]
    assert first.origin == "same class"
    assert first.faster.source == WARP and first.faster.speedup == pytest.approx(6.0)
    assert first.slower.source == SHARED  # its parent: what one step changed
    for p in got:
        assert p.faster.verdict == "correct" and p.faster.speedup is not None
        slower_ok = p.slower.verdict == "correct" and p.slower.speedup is not None
        assert not slower_ok or p.faster.speedup > p.slower.speedup
        assert p.faster.task_signature == p.slower.task_signature  # related: one task
    broke = next(p for p in got if p.slower.verdict == "wrong" and p.origin == "same class")
    assert broke.faster.source == SHARED and broke.slower.reason == "max abs err 3.2"
    assert [p.origin for p in got] == sorted(
        (p.origin for p in got), key=["this run", "same class", "similar"].index
    )


def test_this_run_comes_first_and_is_not_repeated(store: ChromaStore) -> None:
    run = [
        attempt(1, SOFTMAX.replace("expf", "__expf"), speedup=1.4, tags=("fast-math",)),
        attempt(2, SOFTMAX.replace("float s", "double s"), "wrong", parent=1, reason="too slow"),
    ]
    # the run's attempts are stored as they are made: they must not come back twice
    for a in run:
        store.add(a, run_id="now", **WHERE)
    got = pairs(
        store,
        task_signature=WHERE["task_signature"],
        op_class="reduction",
        bottleneck="memory-bound",
        source=SOFTMAX,
        run_attempts=run,
        k=5,
    )
    assert got[0].origin == "this run"
    assert got[0].faster.source == run[0].source and got[0].slower.source == run[1].source
    run_sources = {a.source for a in run}
    for p in got[1:]:
        assert {p.faster.source, p.slower.source}.isdisjoint(run_sources)
    assert len(got) <= 5


def test_no_pairs_without_a_faster_correct_one(tmp_path: Path) -> None:
    s = ChromaStore.open(tmp_path)
    s.add(attempt(1, NAIVE, "wrong", reason="nan"), run_id="r", **WHERE)
    s.add(attempt(2, SHARED, "compile_error", reason="error: x"), run_id="r", **WHERE)
    assert (
        pairs(
            s,
            task_signature="t",
            op_class="reduction",
            bottleneck="memory-bound",
            source=NAIVE,
            run_attempts=[],
        )
        == []
    )
    # two correct ones within noise of each other are no contrast either
    run = [attempt(1, NAIVE, speedup=1.00), attempt(2, SHARED, speedup=1.02, parent=1)]
    assert (
        pairs(s, task_signature="t", op_class="x", bottleneck="y", source=NAIVE, run_attempts=run)
        == []
    )


def test_budget_and_prompt_format(store: ChromaStore) -> None:
    got = pairs(
        store,
        task_signature=WHERE["task_signature"],
        op_class="reduction",
        bottleneck="memory-bound",
        source=NAIVE,
        run_attempts=[],
        k=3,
    )
    assert len(got) >= 2
    assert within_budget(got, 10**6) == got
    one = within_budget(got, got[0].chars)
    assert one == [got[0]]
    assert within_budget(got, 50) == []
    assert sum(p.chars for p in within_budget(got, 2000)) <= 2000
    rendered = as_prompt(got)
    assert rendered[0] == {
        "origin": "same class",
        "task": WHERE["task_signature"],
        "faster": {"source": WARP, "speedup": 6.0},
        "slower": {"source": SHARED, "speedup": 3.0, "reason": "correct but slower"},
    }
    wrong = next(r for r in rendered if r["slower"]["speedup"] is None)
    assert set(wrong) == {"origin", "task", "faster", "slower"} and set(wrong["slower"]) == {
        "source",
        "speedup",
        "reason",
    }
    assert wrong["slower"]["reason"] == "wrong: max abs err 3.2"
