"""Worked examples from the memory: a verified step's before and after, found again for the same
technique on a similar task (the same GPU architecture first), carried by export and import."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kernelwright.memory import worked
from kernelwright.memory.store import ChromaStore, Provenance
from kernelwright.memory.worked import Side, WorkedExample, choose, clip, from_memory
from tests.memory.test_store import GEMM, NAIVE, SHARED, WARP, attempt

SIG = "rowsum(f32[M,N])->f32[M]"


def where(run_id: str, technique: str, **kw: Any) -> Provenance:
    fields: dict[str, Any] = dict(
        task_signature=SIG,
        op_class="reduction",
        bottleneck="memory-bound",
        arch="sm_90",
        model="scripted",
        run_id=run_id,
        technique=technique,
        kind="cuda",
        original_source=NAIVE,
    )
    return Provenance(**{**fields, **kw})


def a_run(store: ChromaStore, run_id: str = "r1", **kw: Any) -> None:
    """The original (NAIVE), then SHARED (3x, tagged smem-tiling), then WARP from SHARED (6x
    over the original, 2x the step, warp-shuffle), then a wrong try at unrolling."""
    store.add_many(
        [
            (attempt(1, SHARED, speedup=3.0), where(run_id, "smem-tiling", **kw)),
            (
                attempt(2, WARP, speedup=6.0, parent=1),
                where(run_id, "warp-shuffle", state=("smem-tiling",), parent_speedup=3.0, **kw),
            ),
            (
                attempt(3, WARP + "\n// broken", "wrong", parent=2),
                where(run_id, "unroll", parent_speedup=6.0, **kw),
            ),
        ]
    )


@pytest.fixture
def store(tmp_path: Path) -> ChromaStore:
    return ChromaStore.open(tmp_path / "memory")


def pick(store: ChromaStore, technique: str, arch: str = "sm_90", **kw: Any) -> Any:
    return choose(
        from_memory(store, technique, kw.get("kind", "cuda"), NAIVE),
        kw.get("shipped", ()),
        technique=technique,
        kind=kw.get("kind", "cuda"),
        task_signature=kw.get("task_signature", SIG),
        op_class=kw.get("op_class", "reduction"),
        arch=arch,
    )


def test_a_step_from_the_original_keeps_the_original_as_its_before(store: ChromaStore) -> None:
    a_run(store)
    meta = store.collection.get(ids=["r1:1", "r1:2", "r1:3"])["metadatas"]
    assert meta is not None
    assert meta[0]["before_source"] == NAIVE  # its parent is no stored attempt
    assert "before_source" not in meta[1]  # its parent, r1:1, holds its before
    assert "before_source" not in meta[2]  # wrong: no worked example
    assert meta[0]["kind"] == "cuda" and "original_source" not in meta[0]
    found = pick(store, "smem-tiling")
    assert found.origin == "memory" and found.id == "r1:1"
    assert (found.before.source, found.after.source) == (NAIVE, SHARED)
    assert found.speedup == pytest.approx(3.0) and found.arch == "sm_90"


def test_a_later_step_takes_its_before_from_the_stored_parent(store: ChromaStore) -> None:
    a_run(store)
    found = pick(store, "warp-shuffle")
    assert (found.before.source, found.after.source) == (SHARED, WARP)
    assert found.speedup == pytest.approx(2.0)  # over its parent, not over the original
    assert pick(store, "unroll") is None  # the only unroll step was wrong


def test_a_step_that_gained_too_little_is_no_example(store: ChromaStore) -> None:
    store.add_many([(attempt(1, SHARED, speedup=1.03), where("r1", "smem-tiling"))])
    assert pick(store, "smem-tiling") is None
    meta = store.collection.get(ids=["r1:1"])["metadatas"]
    assert meta is not None and "before_source" not in meta[0]


def test_a_step_that_changed_only_the_launch_shows_nothing(store: ChromaStore) -> None:
    store.add_many([(attempt(1, NAIVE + "\n", speedup=2.0), where("r1", "block-size"))])
    assert pick(store, "block-size") is None  # the store keeps no launch: nothing to see


def test_a_step_whose_parent_was_deleted_is_left_out(store: ChromaStore) -> None:
    a_run(store)
    store.delete(["r1:1"])
    assert pick(store, "warp-shuffle") is None


def test_the_same_architecture_comes_first(store: ChromaStore) -> None:
    a_run(store, "old", arch="sm_80")
    faster = WARP.replace("acc += v.x", "acc += (v.x")
    store.add_many(
        [
            (attempt(1, SHARED, speedup=3.0), where("new", "smem-tiling")),
            (
                attempt(2, faster.replace("v.w;", "v.w);"), speedup=4.5, parent=1),
                where("new", "warp-shuffle", parent_speedup=3.0),
            ),
        ]
    )
    # sm_80's step gained 2x, this GPU's 1.5x: this GPU's is shown here, sm_80's there
    assert pick(store, "warp-shuffle", "sm_90").id == "new:2"
    assert pick(store, "warp-shuffle", "sm_80").id == "old:2"


def shipped_pair(technique: str, op_class: str, lines: int = 10, speedup: float | None = None):
    return WorkedExample(
        id=f"shipped-{op_class}-{lines}",
        origin="shipped",
        technique=technique,
        kind="cuda",
        task_signature=f"{op_class}(f32[N])->f32[N]",
        op_class=op_class,
        before=Side(source="\n".join(f"// before {i}" for i in range(lines))),
        after=Side(source="\n".join(f"// after {i}" for i in range(lines))),
        speedup=speedup,
        gpu="NVIDIA H100 80GB HBM3" if speedup else "",
        arch="sm_90" if speedup else "",
    )


def test_a_similar_task_first_then_shipped_then_any(store: ChromaStore) -> None:
    gemm = {"task_signature": "matmul", "op_class": "gemm", "original_source": GEMM}
    store.add_many(
        [(attempt(1, GEMM + "\n// tiled", speedup=2.0), where("mm", "smem-tiling", **gemm))]
    )
    reduction = shipped_pair("smem-tiling", "reduction")
    # the memory's step was on a matrix product: the shipped one on a reduction wins
    assert pick(store, "smem-tiling", shipped=[reduction]).id == reduction.id
    # with no shipped pair for a similar task, the memory's other task beats another shipped one
    elementwise = shipped_pair("smem-tiling", "elementwise")
    assert pick(store, "smem-tiling", shipped=[elementwise]).id == "mm:1"
    a_run(store)  # now the memory holds a step on this very task
    assert pick(store, "smem-tiling", shipped=[reduction]).id == "r1:1"


def test_shipped_pairs_measured_and_whole_first() -> None:
    args: dict[str, Any] = dict(
        technique="unroll", kind="cuda", task_signature="x", op_class="reduction", arch="sm_90"
    )
    unmeasured = shipped_pair("unroll", "reduction")
    measured = shipped_pair("unroll", "reduction", speedup=1.2)
    assert choose([], [unmeasured, measured], **args) == measured
    long = shipped_pair("unroll", "reduction", lines=80, speedup=1.5)
    assert choose([], [long, measured], **args) == measured  # a whole kernel beats a cut one
    assert choose([], [long], **args) == long


def test_only_pairs_of_the_tasks_kind(store: ChromaStore) -> None:
    kb = {"task_signature": "kernelbench:relu_mlp()", "op_class": "gemm", "kind": "kernelbench"}
    store.add_many([(attempt(1, "class ModelNew: pass", speedup=2.0), where("kb", "fusion", **kb))])
    assert pick(store, "fusion") is None
    assert pick(store, "fusion", kind="kernelbench").after.source == "class ModelNew: pass"
    assert (
        choose([], [shipped_pair("fusion", "reduction")], **{**KB_ARGS, "technique": "fusion"})
        is None
    )


KB_ARGS: dict[str, Any] = dict(kind="kernelbench", task_signature="k", op_class="gemm", arch="")


def test_clip_keeps_sixty_lines_and_counts_the_rest() -> None:
    source = "\n".join(f"line {i}" for i in range(75)) + "\n"
    text, hidden = clip(source)
    assert text.splitlines()[-1] == "line 59" and len(text.splitlines()) == 60 and hidden == 15
    assert clip("a\nb\n") == ("a\nb", 0)
    view = worked.as_prompt(
        shipped_pair("unroll", "reduction", lines=75), task_signature="t", op_class="gemm", arch=""
    )
    assert view["before"]["hidden"] == 15 and len(view["after"]["source"].splitlines()) == 60
    assert view["relation"] == "another kind of task" and view["measured"] is False


def test_labels_say_how_a_pair_was_measured(store: ChromaStore) -> None:
    a_run(store)
    here = pick(store, "warp-shuffle")
    view = worked.as_prompt(here, task_signature=SIG, op_class="reduction", arch="sm_90")
    assert view["gpu"] == "an sm_90 GPU, as here" and view["relation"] == "this task"
    assert view["speedup"] == pytest.approx(2.0) and view["measured"] is True
    there = worked.as_prompt(here, task_signature="other", op_class="reduction", arch="sm_80")
    assert (
        there["gpu"] == "an sm_90 GPU (this one: sm_80)" and there["relation"] == "a similar task"
    )
    shipped = shipped_pair("unroll", "reduction", speedup=1.25)
    assert worked.where_measured(shipped, "sm_90") == "NVIDIA H100 80GB HBM3 (sm_90)"
    assert "measured 1.25x on NVIDIA H100" in worked.label(shipped, "sm_90")
    plain = shipped_pair("unroll", "reduction")
    assert worked.where_measured(plain, "sm_90") == "" and "illustration" in worked.label(plain, "")


def test_export_and_import_carry_the_pairs(store: ChromaStore, tmp_path: Path) -> None:
    a_run(store)
    assert store.export_jsonl(tmp_path / "m.jsonl") == 3
    other = ChromaStore.open(tmp_path / "other")
    assert len(other.import_jsonl(tmp_path / "m.jsonl")) == 3
    for technique in ("smem-tiling", "warp-shuffle"):
        mine, theirs = pick(store, technique), pick(other, technique)
        assert theirs is not None and theirs == mine


def test_an_older_export_without_kind_is_read_as_its_signature_says(tmp_path: Path) -> None:
    import json

    store = ChromaStore.open(tmp_path / "a")
    a_run(store)
    store.export_jsonl(tmp_path / "m.jsonl")
    rows = [json.loads(line) for line in (tmp_path / "m.jsonl").read_text().splitlines()]
    for r in rows:
        del r["metadata"]["kind"]  # what an export before worked examples holds
    (tmp_path / "old.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    other = ChromaStore.open(tmp_path / "b")
    assert {e.kind for e in other.import_jsonl(tmp_path / "old.jsonl")} == {"cuda"}
    assert pick(other, "warp-shuffle") is not None
