"""`kernelwright memory stats | search | export | import` through typer's CliRunner, on a real
ChromaDB directory; bad input is one line on stderr and exit code 2."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from kernelwright.agent.cli import app
from kernelwright.agent.cli_memory import memory_app
from kernelwright.memory.embeddings import CodeHashEmbedding
from kernelwright.memory.graph_file import SavedGraph
from kernelwright.memory.store import ChromaStore, Provenance
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
    monkeypatch.setenv("KERNELWRIGHT_CONFIG", str(tmp_path / "absent.toml"))
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
    fill(settings_env)
    saved = SavedGraph.in_dir(settings_env)
    saved.learn("rowsum-1", 1, lambda g: g.update((), "coalescing", "memory-bound", True, 3.0))
    result = runner.invoke(app, ["memory", "stats"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
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
    assert "nope.jsonl: no such file" in line


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        ('{"id": "a", "source": "x", "metadata": {}', "not valid JSON"),
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
    assert f"{file} line 3: {problem}" in line
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

    from kernelwright.agent.cli_memory import progress_line, search_report
    from kernelwright.agent.experience import TechniqueChoice

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
    shown = progress_line(
        {"node": "propose", "message": f"search: {choice.line}", "choice": choice}
    )
    assert shown == (
        "  search: coalescing for memory-bound (2 measured: 3 visits, 50% success, "
        "mean log-speedup +0.200)"
    )
    assert progress_line({"node": "compile", "message": "compiling"}) is None
    done = attempt(1, SHARED, speedup=1.5, tags=("coalescing", "block-per-row"))
    done = done.model_copy(update={"kept": True})
    table = search_report({"choices": [choice], "attempts": [done]})
    assert table is not None
    console = Console(record=True, width=200)
    console.print(table)
    row = next(ln for ln in console.export_text().splitlines() if "coalescing" in ln)
    cells = [c.strip() for c in row.split("│")[1:-1]]
    assert cells == [
        "1",
        "coalescing",
        "memory-bound",
        "3",
        "50%",
        "+0.200",
        "coalescing, block-per-row",
        "correct 1.50x kept",
    ]
    assert search_report({"choices": [], "attempts": [done]}) is None
