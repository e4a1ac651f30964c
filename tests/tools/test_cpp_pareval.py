"""`kernelwright import pareval` on a small tree in ParEval's layout (tests/fixtures/
pareval_fake: four problems of our own, one with a struct argument): the problems that convert
become cpp tasks whose references run on the CPU, and the rest are listed with the reason."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from kernelwright.agent.doors.cli_import import import_app
from kernelwright.tools.cpp import load_cpp_task
from kernelwright.tools.cpp_pareval import convert, problems
from kernelwright.tools.cpp_reference import ReferenceTrial, reference_outputs
from kernelwright.tools.errors import TaskError
from tests.conftest import FIXTURES
from tests.tools.test_cpp import cpp_cache, inputs_of, needs_gxx

__all__ = ["cpp_cache"]

FAKE = FIXTURES / "pareval_fake"


def test_the_fake_tree_converts_three_problems_and_skips_the_struct(tmp_path: Path) -> None:
    report = convert(FAKE, tmp_path)
    names = [c.name for c in report.converted]
    assert names == ["00_transform_scale_from", "01_histogram_parity_counts", "02_graph_max_degree"]
    (skipped,) = report.skipped
    assert skipped.name == "03_geometry_farthest_point"
    assert "parameter 'points'" in skipped.reason and "Point is a struct" in skipped.reason
    assert not (tmp_path / "03_geometry_farthest_point").exists()

    scale = load_cpp_task(tmp_path / "00_transform_scale_from" / "00_transform_scale_from.toml")
    assert scale.function == "scaleFrom"  # correctScaleFrom, named as the prompt names it
    assert [(a.name, a.role) for a in scale.args] == [
        ("alpha", "scalar"),
        ("x", "inout"),
        ("start", "scalar"),
    ]
    alpha, x, start = scale.args
    assert alpha.value == "0.5" and x.init == "uniform:-5:5" and x.shape == ("N",)
    assert start.value == "(N // 3)"  # rand() % x.size(): a third of it
    assert scale.bench == {"N": 1 << 20} and {"N": 64} in scale.checks

    parity = load_cpp_task(
        tmp_path / "01_histogram_parity_counts" / "01_histogram_parity_counts.toml"
    )
    assert parity.compare == "exact"
    xs, bins = parity.args
    assert (xs.init, bins.role, bins.init, bins.shape) == (
        "randint:0:1000",
        "out",
        "fill:0",
        ("2",),
    )
    assert parity.params[1].kind == "array" and parity.params[1].extent == 2

    graph = load_cpp_task(tmp_path / "02_graph_max_degree" / "02_graph_max_degree.toml")
    assert graph.bench == {"N": 2048}  # the CUDA size
    assert graph.returns == "int" and graph.result is not None
    assert graph.result.name == "degree"  # the name the driver gives it
    assert graph.inputs_python.endswith("inputs.py:make")
    assert [a.shape for a in graph.args if a.role == "in"] == [("N * N",)]
    assert graph.launch.grid == ("ceil_div(N * N, 256)",)  # one thread per input element


@needs_gxx
def test_the_converted_references_run_on_the_cpu(tmp_path: Path, cpp_cache: Path) -> None:
    report = convert(FAKE, tmp_path)
    for converted in report.converted:
        task = load_cpp_task(converted.toml)
        trials = [ReferenceTrial(dict(s), 9) for s in task.checks]
        results = reference_outputs(task, trials, cpp_cache)
        for trial, result in zip(trials, results, strict=True):
            n = trial.sizes["N"]
            if task.function == "scaleFrom":
                x = inputs_of(task, trial.sizes, 9)["x"]
                want = x.copy()
                want[n // 3 :] *= 0.5
                np.testing.assert_array_equal(result.outputs["x"], want)
            elif task.function == "parityCounts":
                x = inputs_of(task, trial.sizes, 9)["x"]
                assert result.outputs["bins"].tolist() == [
                    int((x % 2 == 0).sum()),
                    int((x % 2).sum()),
                ]
            else:
                (degree,) = result.outputs["degree"].tolist()
                assert 0 < degree < n  # an undirected graph without self loops


def test_a_tree_that_is_not_pareval_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(TaskError, match="not a ParEval clone"):
        problems(tmp_path)


def _app() -> typer.Typer:
    app = typer.Typer()
    app.add_typer(import_app, name="import")
    return app


def test_the_command_writes_the_tasks_and_lists_what_it_skipped(tmp_path: Path) -> None:
    out = tmp_path / "tasks"
    result = CliRunner().invoke(
        _app(), ["import", "pareval", str(FAKE), "--out", str(out), "--json"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [c["name"] for c in data["converted"]] == [
        "00_transform_scale_from",
        "01_histogram_parity_counts",
        "02_graph_max_degree",
    ]
    assert data["skipped"][0]["name"] == "03_geometry_farthest_point"
    assert "struct" in data["skipped"][0]["reason"]
    assert sorted(p.name for p in out.iterdir()) == [
        "00_transform_scale_from",
        "01_histogram_parity_counts",
        "02_graph_max_degree",
    ]
    text = CliRunner().invoke(_app(), ["import", "pareval", str(FAKE), "--out", str(out)])
    assert text.exit_code == 0
    assert "3 of 4 problems converted" in text.stdout
    assert "03_geometry_farthest_point" in text.stdout


def test_the_command_refuses_a_path_that_is_not_a_clone(tmp_path: Path) -> None:
    result = CliRunner().invoke(_app(), ["import", "pareval", str(tmp_path)])
    assert result.exit_code == 2
    assert "not a ParEval clone" in result.output
