"""`kernelwright tune`: the space a kernel's compile options span, configurations that change
nothing dropped before any GPU time, the keep rule, and the search end to end with recorded
verifier reports (no GPU: the builds are real, on the CPU; the checks are replayed)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kernelwright.agent import options
from kernelwright.agent.doors.cli import app
from kernelwright.agent.tune import sidecar, tune, write_tuned
from kernelwright.tools import nvml
from kernelwright.tools import tune as space
from kernelwright.tools.backend import ReplayGpu
from kernelwright.tools.builds import compiler_identity
from kernelwright.tools.compile import compile_in_sandbox
from kernelwright.tools.results import CheckReport
from kernelwright.tools.spec import CompileOptions, CudaCandidate, CudaTask
from kernelwright.tools.task import load_candidate, load_task
from tests.agent.test_graph import report
from tests.conftest import EXAMPLES

# gelu with Kernel Tuner's knob: TILE elements per thread (a grid-stride loop: any grid works)
TILED = """#ifndef TILE
#define TILE 4
#endif
extern "C" __global__ void gelu(const float* x, float* y, int n)
{
    int start = (blockIdx.x * blockDim.x + threadIdx.x) * TILE;
    int stride = gridDim.x * blockDim.x * TILE;
    for (int base = start; base < n; base += stride) {
        #pragma unroll
        for (int j = 0; j < TILE; ++j) {
            int i = base + j;
            if (i < n) {
                float v = x[i];
                float inner = 0.7978845608028654f * (v + 0.044715f * v * v * v);
                y[i] = 0.5f * v * (1.0f + tanhf(inner));
            }
        }
    }
}
"""


@pytest.fixture
def nvrtc() -> None:
    if compiler_identity("nvrtc") is None:
        pytest.skip("NVRTC is not installed")


@pytest.fixture
def gelu(tmp_path: Path) -> tuple[CudaTask, CudaCandidate]:
    shutil.copytree(EXAMPLES / "gelu", tmp_path / "gelu")
    (tmp_path / "gelu" / "tiled.cu").write_text(TILED)
    task = load_task(tmp_path / "gelu")
    assert isinstance(task, CudaTask)
    cand = load_candidate(task, tmp_path / "gelu" / "tiled.cu")
    assert isinstance(cand, CudaCandidate)
    return task, cand


def _timed(task: CudaTask, speedup: float, iqr: float = 0.01) -> CheckReport:
    r = report(task, "correct", speedup)
    assert r.timing is not None
    return r.model_copy(update={"timing": r.timing.model_copy(update={"speedup_iqr": iqr})})


def test_knobs_and_the_space() -> None:
    assert space.knobs(TILED) == [space.Knob("TILE", 4)]
    assert space.knobs("#ifndef lower\n#define lower 3\n#endif\n") == []  # not a knob's name
    assert space.Knob("TILE", 4).values() == (1, 2, 4, 8, 16)
    assert space.Knob("UNROLL", 1).values() == (1, 2, 4, 8)
    configs = space.space(TILED)
    assert configs[0] == CompileOptions()  # the default first
    assert [c.defines for c in configs[1:5]] == [(("TILE", v),) for v in (1, 2, 8, 16)]
    assert not any(not c.exact for c in configs)  # approximations only when asked
    assert sum(not c.exact for c in space.space(TILED, numerics=True)) == 3


def test_the_keep_rule_wants_two_percent_and_spreads_apart(gelu: Any) -> None:
    task, _ = gelu
    best = _timed(task, 1.00, 0.02)
    assert space.beats(_timed(task, 1.05, 0.02), best)
    assert not space.beats(_timed(task, 1.015, 0.0), best)  # under 2%
    assert not space.beats(_timed(task, 1.03, 0.04), best)  # 2% but the spreads overlap
    assert not space.beats(report(task, "wrong", None), best)


@pytest.mark.parametrize("backend", ["nvrtc", "nvcc"])
def test_configurations_that_change_nothing_are_dropped_unchecked(gelu: Any, backend: str) -> None:
    if compiler_identity(backend) is None:
        pytest.skip(f"{backend} is not installed")
    task, cand = gelu

    def build(config: CompileOptions) -> Any:
        return compile_in_sandbox(
            cand.source, task.entry, "sm_90", backend, flags=config.flags(backend)
        )

    configs = [
        CompileOptions(),
        CompileOptions(maxrregcount=255),
        CompileOptions(defines=(("TILE", 8),)),
    ]
    kept, dropped = space.distinct(configs, build)
    # a cap above what the kernel uses builds the same code (nvcc's cubins differ in their notes:
    # the comparison is of the machine code and the resources)
    assert kept == [configs[0], configs[2]]
    assert dropped == [(configs[1], "same code as defaults")]
    _, why = space.distinct(
        [CompileOptions()], lambda c: compile_in_sandbox("x", "gelu", "sm_90", backend)
    )[1][0]
    assert "does not compile" in why


def _replay(task: CudaTask, cand: CudaCandidate, speeds: dict[CompileOptions, Any]) -> ReplayGpu:
    gpu = ReplayGpu()
    for config, rep in speeds.items():
        gpu.add(task, cand.model_copy(update={"options": config}), rep)
    return gpu


def test_the_search_keeps_only_a_clear_gain_and_writes_it(
    gelu: Any, nvrtc: None, tmp_path: Path
) -> None:
    task, cand = gelu
    tile = {v: CompileOptions(defines=(("TILE", v),)) for v in (1, 2, 8, 16)}
    speeds = {
        CompileOptions(): _timed(task, 1.00),
        tile[1]: _timed(task, 0.80),
        tile[2]: report(task, "wrong", None, "output 'y' wrong"),
        tile[8]: _timed(task, 1.10),
        tile[16]: _timed(task, 1.11),  # under 2% over TILE=8: the earlier stays
        CompileOptions(ptxas_level=1): _timed(task, 0.95),
    }
    gpu = _replay(task, cand, speeds)
    found = tune(task, cand, gpu, arch="sm_90", backend="nvrtc", budget=20)
    tried = {space.describe(t.config): (t.report.verdict, t.kept) for t in found.tried}
    assert tried["TILE=8"] == ("correct", True) and tried["TILE=16"] == ("correct", False)
    assert tried["TILE=2"] == ("wrong", False) and not tried["TILE=1"][1]
    assert found.best.options == tile[8] and found.improved
    assert found.gain == pytest.approx(1.10)
    assert all("maxrregcount" not in space.describe(t.config) for t in found.tried)  # no-ops
    written = write_tuned(found.best, task.name, tmp_path)
    assert written.name == "tiled.tuned.cu" and written.read_text() == TILED
    again = load_candidate(task, written)  # the sidecar reads back as the same candidate
    assert again.options == tile[8]
    assert "[compile]" in sidecar(found.best)


def test_the_budget_leaves_the_rest_unchecked_and_a_wrong_start_is_refused(
    gelu: Any, nvrtc: None
) -> None:
    task, cand = gelu
    gpu = _replay(task, cand, {CompileOptions(): _timed(task, 1.0)})
    gpu.add(
        task,
        cand.model_copy(update={"options": CompileOptions(defines=(("TILE", 1),))}),
        _timed(task, 0.9),
    )
    found = tune(task, cand, gpu, arch="sm_90", backend="nvrtc", budget=1)
    assert len(found.tried) == 1 and found.left >= 4 and not found.improved
    wrong = _replay(task, cand, {CompileOptions(): report(task, "wrong", None, "bad")})
    with pytest.raises(Exception, match="only a correct kernel is tuned"):
        tune(task, cand, wrong, arch="sm_90", backend="nvrtc")


def test_the_command(
    gelu: Any, nvrtc: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    task, cand = gelu
    tile8 = CompileOptions(defines=(("TILE", 8),))
    speeds = {CompileOptions(): _timed(task, 1.0), tile8: _timed(task, 1.2)}
    gpu = _replay(task, cand, speeds)
    for v in (1, 2, 16):
        gpu.add(
            task,
            cand.model_copy(update={"options": CompileOptions(defines=(("TILE", v),))}),
            _timed(task, 0.9),
        )
    gpu.add(
        task, cand.model_copy(update={"options": CompileOptions(ptxas_level=1)}), _timed(task, 0.9)
    )
    monkeypatch.setattr(options, "local_gpu", lambda settings, **kw: gpu)
    monkeypatch.setattr(nvml, "device_info", lambda *a: type("D", (), {"arch": "sm_90"})())
    (tmp_path / "config.toml").touch()
    env = {
        "KERNELWRIGHT_CONFIG": str(tmp_path / "config.toml"),
        "KERNELWRIGHT_DATA_DIR": str(tmp_path / "data"),
    }
    args = ["tune", task.path, cand.path, "--json", "--backend", "nvrtc"]
    result = CliRunner().invoke(app, args, env=env)
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["best"] == "TILE=8" and out["gain"] == pytest.approx(1.2)
    assert Path(out["written"]).with_suffix(".toml").is_file()
    problem = EXAMPLES / "kernelbench" / "relu_mlp.py"
    refused = CliRunner().invoke(app, ["tune", str(problem)], env=env)
    assert "tune searches a CUDA kernel's compile options" in str(refused.exception)


def test_the_builds_land_where_the_verifier_looks(gelu: Any, nvrtc: None, tmp_path: Path) -> None:
    from kernelwright.tools.builds import BuildCache

    task, cand = gelu
    gpu = _replay(task, cand, {CompileOptions(): _timed(task, 1.0)})
    for v in (1, 2, 8, 16):
        config = CompileOptions(defines=(("TILE", v),))
        gpu.add(task, cand.model_copy(update={"options": config}), _timed(task, 0.9))
    gpu.add(
        task, cand.model_copy(update={"options": CompileOptions(ptxas_level=1)}), _timed(task, 0.9)
    )
    cache = BuildCache(tmp_path / "builds")
    found = tune(task, cand, gpu, arch="sm_90", backend="nvrtc", builds=cache)
    for t in found.tried:  # each checked configuration's build is there for its check
        _, hit = cache.find(cand.source, task.entry, "sm_90", "nvrtc", t.config.flags("nvrtc"))
        assert hit is not None


def test_a_knob_that_changes_only_data_is_not_dropped(nvrtc: None) -> None:
    # SCALE reaches only an initialized table: the code is the same, what it reads is not
    source = (
        "#ifndef SCALE\n#define SCALE 2\n#endif\n"
        "__device__ float table[4] = {SCALE, SCALE + 1, SCALE + 2, SCALE + 3};\n"
        'extern "C" __global__ void k(float* x) { x[threadIdx.x] *= table[threadIdx.x & 3]; }\n'
    )

    def build(config: CompileOptions) -> Any:
        return compile_in_sandbox(source, "k", "sm_90", "nvrtc", flags=config.flags("nvrtc"))

    configs = [CompileOptions(), CompileOptions(defines=(("SCALE", 8),))]
    kept, dropped = space.distinct(configs, build)
    assert kept == configs and not dropped
