"""`kernelwright memory stats | search | export | import` through typer's CliRunner, on a real
ChromaDB directory; bad input is one line on stderr and exit code 2."""

from __future__ import annotations

import json
import math
import os
import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from kernelwright.agent.doors.cli import app
from kernelwright.agent.doors.cli_memory import memory_app
from kernelwright.memory.embeddings import CodeHashEmbedding
from kernelwright.memory.graph_file import SavedGraph
from kernelwright.memory.store import ChromaStore, Provenance
from tests.conftest import chroma_open
from tests.memory.test_store import GEMM, NAIVE, SHARED, WARP, attempt

runner = CliRunner()
ROWSUM = Provenance(
    task_signature="rowsum(f32[M,N])->f32[M]",
    op_class="reduction",
    bottleneck="memory-bound",
    arch="sm_90",
    model="qwen2.5-coder:7b",
    run_id="rowsum-1",
)


@pytest.fixture(autouse=True)
def settings_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for key in list(os.environ):
        if key.startswith("KERNELWRIGHT_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("KERNELWRIGHT_CONFIG", os.devnull)
    monkeypatch.setenv("KERNELWRIGHT_DATA_DIR", str(tmp_path / "data"))
    return tmp_path / "data" / "memory"


def fill(memory: Path) -> ChromaStore:
    """What two runs left: a rowsum run (coalescing, then warp-shuffle, then a wrong one) and
    a matmul attempt that did not compile."""
    store = ChromaStore.open(memory, embedding=CodeHashEmbedding())
    store.add_many(
        [
            (
                attempt(1, SHARED, speedup=3.0, tags=("coalescing",)),
                ROWSUM.model_copy(update={"technique": "coalescing"}),
            ),
            (
                attempt(2, WARP, speedup=6.0, parent=1, tags=("coalescing", "warp-shuffle")),
                ROWSUM.model_copy(
                    update={
                        "technique": "warp-shuffle",
                        "state": ("coalescing",),
                        "parent_speedup": 3.0,
                    }
                ),
            ),
            (
                attempt(3, WARP.replace("n / 4", "n"), "wrong", parent=2, tags=("unroll",)),
                ROWSUM.model_copy(
                    update={
                        "technique": "unroll",
                        "state": ("coalescing", "warp-shuffle"),
                        "parent_speedup": 6.0,
                    }
                ),
            ),
            (
                attempt(1, GEMM, "compile_error", tags=("smem-tiling",), reason="error: x"),
                ROWSUM.model_copy(
                    update={
                        "task_signature": "matmul(f32[M,K], f32[K,N])->f32[M,N]",
                        "op_class": "gemm",
                        "bottleneck": "compute-bound",
                        "run_id": "matmul-1",
                        "technique": "smem-tiling",
                    }
                ),
            ),
        ]
    )
    return store


def one_error_line(result: Result) -> str:
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


def test_stats_shows_attempts_tasks_techniques_bottlenecks_and_the_search(
    settings_env: Path,
) -> None:
    fill(settings_env).close()
    saved = SavedGraph.in_dir(settings_env)
    saved.learn("rowsum-1", 1, lambda g: g.update((), "coalescing", "memory-bound", True, 3.0))
    result = runner.invoke(app, ["memory", "stats"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert chroma_open() == []  # the command let its store go
    text = result.stdout
    assert text.startswith("4 attempts on 2 tasks (correct 2, wrong 1, compile_error 1)")
    assert "GPUs: sm_90 4" in text
    row = next(ln for ln in text.splitlines() if "│ warp-shuffle " in ln)
    assert row.split("│")[2:6] == [
        "        1 ",
        "    100% ",
        "        6.00x ",
        " 6.00x ",
    ], row
    assert "Bottlenecks" in text and "compute-bound" in text
    assert "rowsum(f32[M,N])->f32[M]" in text
    search = text.split("The search's statistics")[1]
    row = next(ln for ln in search.splitlines() if "coalescing" in ln)
    assert "memory-bound" in row and "100%" in row and "+1.099" in row  # log 3

    as_json = json.loads(runner.invoke(memory_app, ["stats", "--json"]).stdout)
    assert as_json["total"] == 4 and as_json["by_task"]["rowsum(f32[M,N])->f32[M]"]["count"] == 3
    assert as_json["by_bottleneck"]["compute-bound"]["correct"] == 0
    assert as_json["search"] == [
        {
            "technique": "coalescing",
            "bottleneck": "memory-bound",
            "attempts": 1,
            "successes": 1,
            "mean_log_speedup": pytest.approx(1.0986, abs=1e-4),
        }
    ]


def test_stats_of_an_empty_memory(settings_env: Path) -> None:
    result = runner.invoke(memory_app, ["stats"])
    assert result.exit_code == 0
    assert "0 attempts on 0 tasks" in result.stdout and "nothing learned yet" in result.stdout


def test_search_by_source_and_by_file(settings_env: Path, tmp_path: Path) -> None:
    fill(settings_env)
    result = runner.invoke(memory_app, ["search", WARP, "-n", "2", "--json"])
    assert result.exit_code == 0, result.output
    hits = json.loads(result.stdout)
    assert len(hits) == 2 and hits[0]["id"] == "rowsum-1:2"
    assert hits[0]["technique"] == "warp-shuffle" and hits[0]["state"] == ["coalescing"]
    kernel = tmp_path / "k.cu"
    kernel.write_text(GEMM)
    long_line = " ".join(["float a0 = 0.0f;"] * 40) + "\n" + GEMM  # no file name is this long
    assert runner.invoke(memory_app, ["search", long_line, "-n", "1"]).exit_code == 0
    table = runner.invoke(memory_app, ["search", str(kernel), "-n", "1"], env={"COLUMNS": "200"})
    assert table.exit_code == 0 and "matmul-1:1" in table.stdout and "compile_error" in table.stdout


def test_export_then_import_into_a_fresh_memory(settings_env: Path, tmp_path: Path) -> None:
    source = fill(settings_env)
    file = tmp_path / "memory.jsonl"
    result = runner.invoke(memory_app, ["export", str(file)])
    assert result.exit_code == 0 and "exported 4 attempts" in result.stdout
    assert len(file.read_text().splitlines()) == 4

    fresh = tmp_path / "fresh"
    env = {"KERNELWRIGHT_MEMORY__DIR": str(fresh)}
    result = runner.invoke(memory_app, ["import", str(file)], env=env)
    assert result.exit_code == 0, result.output
    assert "imported 4 new attempts" in result.stdout and "learned from 4 of them" in result.stdout
    copy = ChromaStore.open(fresh, embedding=CodeHashEmbedding())
    assert copy.count() == 4 and copy.stats() == source.stats()
    assert copy.search(NAIVE, n=1)[0].id == source.search(NAIVE, n=1)[0].id
    # the search on the new machine learned each attempt's own step
    graph = SavedGraph.in_dir(fresh).graph
    step = graph.peek(("coalescing",), "warp-shuffle", "memory-bound")
    assert step.attempts == 1 and step.sum_log_speedup == pytest.approx(0.6931, abs=1e-4)
    assert graph.peek(("coalescing", "warp-shuffle"), "unroll", "memory-bound").successes == 0
    again = runner.invoke(memory_app, ["import", str(file)], env=env)
    assert "imported 0 new attempts" in again.stdout
    assert (
        SavedGraph.in_dir(fresh)
        .graph.peek(("coalescing",), "warp-shuffle", "memory-bound")
        .attempts
        == 1
    )


def test_import_a_missing_file(tmp_path: Path) -> None:
    line = one_error_line(runner.invoke(memory_app, ["import", str(tmp_path / "nope.jsonl")]))
    assert line == f"error: import {tmp_path / 'nope.jsonl'}: no such file"


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        ('{"id": "a", "source": "x", "metadata": {}', "not valid JSON: Expecting ',' delimiter"),
        ('["a", "x"]', 'expected an object with exactly "id", "source" and "metadata"'),
        (
            '{"id": "a", "source": "x", "metadata": {"tags": ["a"]}}',
            '"metadata" must be an object of strings, numbers and booleans',
        ),
    ],
    ids=["truncated", "not-an-object", "nested-metadata"],
)
def test_import_names_the_bad_line(
    settings_env: Path, tmp_path: Path, bad: str, problem: str
) -> None:
    fill(settings_env)
    file = tmp_path / "m.jsonl"
    assert runner.invoke(memory_app, ["export", str(file)]).exit_code == 0
    lines = file.read_text().splitlines()
    file.write_text("\n".join([*lines[:2], bad, *lines[2:]]) + "\n")
    line = one_error_line(runner.invoke(memory_app, ["import", str(file)]))
    assert line == f"error: import {file}: record 3: {problem}"
    assert ChromaStore.open(settings_env).count() == 4  # nothing half-imported


def test_export_to_a_missing_directory(tmp_path: Path) -> None:
    line = one_error_line(runner.invoke(memory_app, ["export", str(tmp_path / "no" / "m.jsonl")]))
    assert "does not exist" in line


def test_unreachable_server_is_one_line() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    result = runner.invoke(memory_app, ["stats"], env={"KERNELWRIGHT_MEMORY__URL": url})
    line = one_error_line(result)
    assert f"memory server {url} not reachable" in line and "chroma run" in line


def test_a_bad_setting_is_one_line() -> None:
    result = runner.invoke(memory_app, ["stats"], env={"KERNELWRIGHT_MEMORY__EMBEDDING": "bert"})
    line = one_error_line(result)
    assert "memory.embedding" in line and "KERNELWRIGHT_MEMORY__EMBEDDING" in line


def test_another_embedding_than_the_store_was_built_with(settings_env: Path) -> None:
    fill(settings_env)  # built with the code hash
    from kernelwright.memory.embeddings import OllamaEmbedding
    from kernelwright.memory.store import StoreUnavailable

    with pytest.raises(StoreUnavailable, match="built with the embedding kernelwright-code-hash"):
        ChromaStore.open(settings_env, embedding=OllamaEmbedding())


def test_optimize_shows_the_search_in_its_progress_and_final_report() -> None:
    from rich.console import Console

    from kernelwright.agent.experience import TechniqueChoice
    from kernelwright.agent.formats import search_event_line, search_table

    choice = TechniqueChoice(
        tag="coalescing",
        bottleneck="memory-bound",
        state=(),
        attempts=2,
        visits=3,
        success_rate=0.5,
        mean_log_speedup=0.2,
        attempt=1,
    )
    shown = search_event_line(
        {"node": "propose", "message": f"search: {choice.line}", "choice": choice}
    )
    assert shown == (
        "search: coalescing for memory-bound (2 measured: 3 visits, 50% success, "
        "mean log-speedup +0.200)"
    )
    assert search_event_line({"node": "compile", "message": "compiling"}) is None
    done = attempt(1, SHARED, speedup=1.5, tags=("coalescing", "block-per-row"))
    done = done.model_copy(update={"kept": True})
    table = search_table({"choices": [choice], "attempts": [done]})
    assert table is not None
    console = Console(record=True, width=200)
    console.print(table)
    row = next(ln for ln in console.export_text().splitlines() if "coalescing" in ln)
    cells = [c.strip() for c in row.split("│")[1:-1]]
    assert cells == [
        "1",
        "coalescing",
        "memory-bound",
        "(original)",
        "3, 50%, +0.200",
        "coalescing, block-per-row",
        "correct 1.50x kept",
    ]
    assert search_table({"choices": [], "attempts": [done]}) is None


# --- a bad record is refused whole; a store an older version poisoned still works ---


def strict_json(text: str) -> object:
    """JSON as the standard has it: no NaN, Infinity or -Infinity."""

    def refuse(name: str) -> object:
        raise AssertionError(f"non-standard JSON constant {name}")

    return json.loads(text, parse_constant=refuse)


def exported(settings_env: Path, tmp_path: Path) -> list[str]:
    fill(settings_env)
    file = tmp_path / "memory.jsonl"
    assert runner.invoke(memory_app, ["export", str(file)]).exit_code == 0
    return file.read_text().splitlines()


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"index": "ten"}, 'index: expected an integer, got "ten"'),
        ({"index": True}, "index: expected an integer, got true"),
        ({"index": -1}, "index: out of range: -1"),
        ({"speedup": "fast"}, 'speedup: expected a number, got "fast"'),
        ({"speedup": math.inf}, "speedup: not a finite number"),
        ({"speedup": -math.inf}, "speedup: not a finite number"),
        ({"speedup": math.nan}, "speedup: not a finite number"),
        ({"parent_speedup": math.inf}, "parent_speedup: not a finite number"),
        ({"speedup_log": math.nan}, "speedup_log: not a finite number"),
        ({"kept": "yes"}, 'kept: expected true or false, got "yes"'),
        ({"verdict": 1}, "verdict: expected a string, got 1"),
        ({"seen_on": math.inf}, "seen_on: not a finite number"),  # a key this version lacks
        ({"verdict": None}, "missing verdict"),
    ],
    ids=lambda v: "-".join(f"{k}={v[k]}" for k in v) if isinstance(v, dict) else None,
)
def test_import_refuses_a_file_with_one_bad_record_and_writes_nothing(
    settings_env: Path, tmp_path: Path, change: dict[str, object], problem: str
) -> None:
    lines = exported(settings_env, tmp_path)
    row = json.loads(lines[2])
    row["metadata"] = {k: v for k, v in {**row["metadata"], **change}.items() if v is not None}
    file = tmp_path / "bad.jsonl"
    file.write_text("\n".join([*lines[:2], json.dumps(row), *lines[3:]]) + "\n")
    fresh = tmp_path / "fresh"
    result = runner.invoke(
        memory_app, ["import", str(file)], env={"KERNELWRIGHT_MEMORY__DIR": str(fresh)}
    )
    assert one_error_line(result) == f"error: import {file}: record 3: {problem}"
    assert result.stdout == ""
    assert ChromaStore.open(fresh, embedding=CodeHashEmbedding()).count() == 0  # all or nothing
    assert not (fresh / "reasoning_graph.json").exists()  # the search learned nothing either


def test_import_names_a_record_without_fields_or_with_an_overflowing_number(
    settings_env: Path, tmp_path: Path
) -> None:
    lines = exported(settings_env, tmp_path)
    file = tmp_path / "bad.jsonl"
    fresh = {"KERNELWRIGHT_MEMORY__DIR": str(tmp_path / "fresh")}
    file.write_text("\n".join([*lines[:2], '{"id": "x:1", "source": "s", "metadata": {}}']))
    assert one_error_line(runner.invoke(memory_app, ["import", str(file)], env=fresh)) == (
        f"error: import {file}: record 3: missing task_signature, op_class, bottleneck, arch, "
        "model, run_id, tags, verdict, reason, speedup, index, parent, kept"
    )
    assert '"speedup": 3.0' in lines[0]
    file.write_text(
        "\n".join([*lines[1:3], lines[0].replace('"speedup": 3.0', '"speedup": 1e999')])
    )
    assert one_error_line(runner.invoke(memory_app, ["import", str(file)], env=fresh)) == (
        f"error: import {file}: record 3: speedup: not a finite number"
    )
    assert ChromaStore.open(tmp_path / "fresh", embedding=CodeHashEmbedding()).count() == 0


def test_import_takes_nothing_back_when_the_graph_cannot_learn(
    settings_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kernelwright.memory.graph_file import GraphFileError

    lines = exported(settings_env, tmp_path)
    file = tmp_path / "m.jsonl"
    file.write_text("\n".join(lines) + "\n")

    def cannot(self: SavedGraph, episodes: object) -> int:
        raise GraphFileError(f"{self.path}: cannot update: disk full")

    monkeypatch.setattr(SavedGraph, "learn_episodes", cannot)
    fresh = tmp_path / "fresh"
    result = runner.invoke(
        memory_app, ["import", str(file)], env={"KERNELWRIGHT_MEMORY__DIR": str(fresh)}
    )
    assert "cannot update: disk full" in one_error_line(result)
    assert ChromaStore.open(fresh, embedding=CodeHashEmbedding()).count() == 0


def poison(memory: Path) -> ChromaStore:
    """What an import by an older version left behind: records kernelwright never writes."""
    store = fill(memory)
    got = store.collection.get(ids=["rowsum-1:1"], include=["metadatas"])["metadatas"]
    assert got is not None
    good = dict(got[0])
    store.collection.add(
        ids=["old:1", "old:2"],
        documents=[NAIVE, NAIVE + "\n"],
        metadatas=[
            {**good, "run_id": "old", "index": "ten"},
            {**good, "run_id": "old", "speedup": "fast", "kept": "yes"},
        ],
    )
    return store


def one_warning_line(result: Result) -> str:
    assert result.exit_code == 0, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("warning: "), result.stderr
    return lines[0]


def test_a_poisoned_store_still_searches_exports_and_sums_up(
    settings_env: Path, tmp_path: Path
) -> None:
    poison(settings_env)
    hits = runner.invoke(memory_app, ["search", NAIVE, "-n", "5", "--json"])
    warning = one_warning_line(hits)
    assert "skipped 2 stored attempts that are not valid" in warning
    assert "memory prune --invalid" in warning
    ids = [h["id"] for h in strict_json(hits.stdout)]  # type: ignore[union-attr]
    assert sorted(ids) == ["matmul-1:1", "rowsum-1:1", "rowsum-1:2", "rowsum-1:3"]
    nearest = runner.invoke(memory_app, ["search", NAIVE, "-n", "1"], env={"COLUMNS": "200"})
    assert (
        "old:" not in nearest.stdout
        and nearest.stdout.count("rowsum-1:") + nearest.stdout.count("matmul-1:") == 1
    )
    one_warning_line(nearest)

    file = tmp_path / "m.jsonl"
    exported_ = runner.invoke(memory_app, ["export", str(file)])
    assert 'old:1: index: expected an integer, got "ten"' in one_warning_line(exported_)
    assert "exported 4 attempts" in exported_.stdout
    assert [json.loads(ln)["id"] for ln in file.read_text().splitlines()].count("old:1") == 0

    stats = runner.invoke(memory_app, ["stats", "--json"])
    one_warning_line(stats)
    assert strict_json(stats.stdout)["total"] == 4  # type: ignore[index]
    one_warning_line(runner.invoke(memory_app, ["stats"]))

    pruned = runner.invoke(memory_app, ["prune", "--invalid", "--yes"])
    assert pruned.exit_code == 0, pruned.output
    assert "deleted 2 stored attempts" in pruned.stdout
    clean = runner.invoke(memory_app, ["search", NAIVE, "-n", "5", "--json"])
    assert clean.exit_code == 0 and clean.stderr == "" and len(strict_json(clean.stdout)) == 4  # type: ignore[arg-type]


def test_a_graph_an_older_import_left_infinity_in_is_standard_json_again(
    settings_env: Path,
) -> None:
    fill(settings_env)
    saved = SavedGraph.in_dir(settings_env)
    saved.learn("rowsum-1", 1, lambda g: g.update((), "coalescing", "memory-bound", True, 3.0))
    data = json.loads(saved.path.read_text())
    data["edges"].append(
        {
            "state": [],
            "tag": "unroll",
            "bottleneck": "memory-bound",
            "attempts": 1,
            "successes": 1,
            "sum_log_speedup": math.inf,
        }
    )
    saved.path.write_text(json.dumps(data))  # `Infinity`, as an older `memory import` wrote
    result = runner.invoke(memory_app, ["stats", "--json"])
    warning = one_warning_line(result)
    assert "1 edge" in warning and "not finite" in warning
    got = strict_json(result.stdout)
    assert [row["technique"] for row in got["search"]] == ["coalescing"]  # type: ignore[index]
    one_warning_line(runner.invoke(memory_app, ["stats"], env={"COLUMNS": "200"}))

    deleted = runner.invoke(memory_app, ["delete", "rowsum-1:3"])
    assert deleted.exit_code == 0, deleted.output
    assert "1 edge" in deleted.stdout  # the reasoning graph was rewritten without it
    on_disk = strict_json(saved.path.read_text())
    assert [e["tag"] for e in on_disk["edges"]] == ["coalescing"]  # type: ignore[index]
    assert runner.invoke(memory_app, ["stats", "--json"]).stderr == ""


# --- delete and prune ---


def test_delete_by_id(settings_env: Path) -> None:
    fill(settings_env)
    result = runner.invoke(memory_app, ["delete", "rowsum-1:3", "matmul-1:1"])
    assert result.exit_code == 0, result.output
    assert "deleted 2 stored attempts" in result.stdout
    store = ChromaStore.open(settings_env, embedding=CodeHashEmbedding())
    assert sorted(store.collection.get(include=[])["ids"]) == ["rowsum-1:1", "rowsum-1:2"]

    unknown = runner.invoke(memory_app, ["delete", "rowsum-1:1", "nope:1"])
    assert one_error_line(unknown) == "error: delete: no stored attempt nope:1; nothing deleted"
    assert store.count() == 2

    as_json = runner.invoke(memory_app, ["delete", "rowsum-1:1", "--json"])
    assert as_json.exit_code == 0, as_json.output
    assert strict_json(as_json.stdout) == {"deleted": ["rowsum-1:1"], "graph_edges_dropped": 0}
    assert store.count() == 1


def fill_dated(memory: Path) -> ChromaStore:
    """fill()'s undated runs and three attempts of runs named as `optimize` names them."""
    store = fill(memory)
    early = ROWSUM.model_copy(update={"run_id": "rowsum-20240105-101500"})
    late = ROWSUM.model_copy(update={"run_id": "rowsum-20250301-090000-2"})
    store.add_many(
        [
            (attempt(1, NAIVE, speedup=1.0), early),
            (attempt(2, SHARED, speedup=2.0), early),
            (attempt(1, WARP, speedup=4.0), late),
        ]
    )
    return store


def test_prune_needs_a_filter_and_a_real_date(settings_env: Path) -> None:
    store = fill_dated(settings_env)
    line = one_error_line(runner.invoke(memory_app, ["prune", "--yes"]))
    assert line.startswith("error: prune: name what to delete with --run, --task, --before")
    line = one_error_line(runner.invoke(memory_app, ["prune", "--before", "2025-13-01", "--yes"]))
    assert line == "error: prune: --before takes a date as YYYY-MM-DD, not '2025-13-01'"
    assert store.count() == 7


def test_prune_before_a_date_keeps_undated_runs(settings_env: Path) -> None:
    store = fill_dated(settings_env)
    result = runner.invoke(memory_app, ["prune", "--before", "2025-01-01", "--yes", "--json"])
    assert result.exit_code == 0, result.output
    assert strict_json(result.stdout) == {
        "deleted": ["rowsum-20240105-101500:1", "rowsum-20240105-101500:2"],
        "undated_kept": 4,
        "graph_edges_dropped": 0,
    }
    assert store.count() == 5
    text = runner.invoke(memory_app, ["prune", "--before", "2025-03-02", "--yes"])
    assert text.exit_code == 0, text.output
    assert "deleted 1 stored attempt" in text.stdout
    assert "kept 4 stored attempts whose run id has no date" in text.stdout
    assert store.count() == 4


def test_prune_by_run_and_task(settings_env: Path) -> None:
    store = fill_dated(settings_env)
    by_task = runner.invoke(memory_app, ["prune", "--task", "matmul", "--yes", "--json"])
    assert strict_json(by_task.stdout)["deleted"] == ["matmul-1:1"]  # type: ignore[index]
    both = runner.invoke(
        memory_app,
        ["prune", "--task", "rowsum(f32[M,N])->f32[M]", "--run", "rowsum-1", "--yes"],
    )
    assert both.exit_code == 0 and "deleted 3 stored attempts" in both.stdout
    assert store.count() == 3
    none = runner.invoke(memory_app, ["prune", "--run", "nobody", "--yes"])
    assert none.exit_code == 0 and "no stored attempts match" in none.stdout
    assert store.count() == 3


def test_prune_asks_first(settings_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = fill_dated(settings_env)
    piped = runner.invoke(memory_app, ["prune", "--run", "rowsum-1"])  # stdin is not a terminal
    assert "3 stored attempts would be deleted" in piped.stdout
    assert one_error_line(piped) == (
        "error: prune: not deleting without --yes (stdin is not a terminal); nothing deleted"
    )
    assert store.count() == 7

    monkeypatch.setattr("kernelwright.agent.doors.cli_memory._interactive", lambda: True)
    declined = runner.invoke(memory_app, ["prune", "--run", "rowsum-1"], input="n\n")
    assert declined.exit_code == 0 and "nothing deleted" in declined.stdout
    assert store.count() == 7
    agreed = runner.invoke(memory_app, ["prune", "--run", "rowsum-1"], input="y\n")
    assert agreed.exit_code == 0 and "deleted 3 stored attempts" in agreed.stdout
    assert store.count() == 4


def test_reading_or_failing_commands_leave_no_memory_behind(settings_env: Path) -> None:
    """On a fresh machine, stats, search, export and a refused import make no memory
    directory: they see an empty memory."""
    runner = CliRunner()
    assert runner.invoke(app, ["memory", "stats", "--json"]).exit_code == 0
    assert runner.invoke(app, ["memory", "search", "float4 loads"]).exit_code == 0
    out = settings_env.parent / "out.jsonl"
    settings_env.parent.mkdir(parents=True, exist_ok=True)
    assert runner.invoke(app, ["memory", "export", str(out)]).exit_code == 0
    bad = settings_env.parent / "bad.jsonl"
    bad.write_text('{"id": "r:1", "document": "x", "metadata": {"speedup": "fast"}}\n')
    assert runner.invoke(app, ["memory", "import", str(bad)]).exit_code == 2
    assert not settings_env.exists()


def test_export_and_import_carry_the_worked_examples(settings_env: Path, tmp_path: Path) -> None:
    fill(settings_env)
    shown = runner.invoke(memory_app, ["examples", "warp-shuffle", "--json"])
    assert shown.exit_code == 0, shown.output
    mine = [e for e in json.loads(shown.stdout) if e["origin"] == "memory"]
    assert [(e["id"], e["before"], e["after"]) for e in mine] == [("rowsum-1:2", SHARED, WARP)]
    assert mine[0]["speedup"] == pytest.approx(2.0) and mine[0]["arch"] == "sm_90"
    file = tmp_path / "memory.jsonl"
    assert runner.invoke(memory_app, ["export", str(file)]).exit_code == 0
    env = {"KERNELWRIGHT_MEMORY__DIR": str(tmp_path / "fresh")}
    assert runner.invoke(memory_app, ["import", str(file)], env=env).exit_code == 0
    there = runner.invoke(memory_app, ["examples", "Warp-shuffle reductions", "--json"], env=env)
    assert [e for e in json.loads(there.stdout) if e["origin"] == "memory"] == mine
    table = runner.invoke(memory_app, ["examples"], env={**env, "COLUMNS": "200"})
    row = next(ln for ln in table.stdout.splitlines() if "rowsum-1:2" in ln)
    assert "warp-shuffle" in row and "memory" in row and "2.00x" in row and "sm_90" in row
    assert "not measured" in table.stdout or "NVIDIA" in table.stdout  # the shipped ones
    assert "no technique 'teleport'" in one_error_line(
        runner.invoke(memory_app, ["examples", "teleport"])
    )
