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
from kernelwright.agent.settings import Settings
from kernelwright.agent.tune import remembered_tune, sidecar, tune, write_tuned
from kernelwright.memory.embeddings import CodeHashEmbedding
from kernelwright.memory.store import ChromaStore
from kernelwright.memory.tunings import TuneMemory
from kernelwright.tools import nvml
from kernelwright.tools import tune as space
from kernelwright.tools.builds import compiler_identity
from kernelwright.tools.compile import compile_in_sandbox
from kernelwright.tools.knobs import knob_values
from kernelwright.tools.results import CheckReport
from kernelwright.tools.spec import CompileOptions, CudaCandidate, CudaTask, LaunchSpec
from kernelwright.tools.task import load_candidate, load_task, reference_candidate
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


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One build cache for the module's tunes: a configuration is built once (the builds are
    real, and the tunes here build the same ones)."""
    return tmp_path_factory.mktemp("cache")


@pytest.fixture
def builds(cache_dir: Path) -> Any:
    from kernelwright.tools.builds import BuildCache

    return BuildCache(cache_dir / "builds")


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


class LandscapeGpu:
    """A GPU whose checks answer from what a candidate runs: its knobs' values and its block
    at the bench size (`speed` gives the speedup, or None for a wrong result)."""

    def __init__(self, speed: Any) -> None:
        self.speed = speed
        self.checked: list[CudaCandidate] = []

    def check(self, task: Any, cand: Any) -> CheckReport:
        self.checked.append(cand)
        values = knob_values(cand.source, cand.options.defines)
        _, block, _ = (cand.bound_launch or task.launch).resolve(task.bench)
        speed = self.speed(values, block, cand.options)
        return _timed(task, speed) if speed else report(task, "wrong", None, "output 'y' wrong")

    def close(self) -> None:
        pass


def test_knobs_and_the_space(gelu: Any) -> None:
    task, cand = gelu
    assert space.knobs(TILED) == [space.Knob("TILE", 4)]
    assert space.knobs("#ifndef lower\n#define lower 3\n#endif\n") == []  # not a knob's name
    assert space.Knob("TILE", 4).values() == (1, 2, 4, 8, 16)
    assert space.Knob("UNROLL", 1).values() == (1, 2, 4, 8)
    found = space.space(task, cand)
    # the kernel names no block knob and the task's grid divides by its block: block shapes too
    assert [d.name for d in found.dims] == ["TILE", "block.x", "maxrregcount", "ptxas"]
    assert found.dims[1].values == (64, 128, 256, 512, 1024)
    start = found.config(found.origin)
    assert start.apply(cand) == cand and start.describe() == "defaults"  # the start is as given
    moved = found.config((3, 1, 0, 0))
    assert moved.options.defines == (("TILE", 8),) and moved.describe() == "block 128, TILE=8"
    assert moved.launch is not None and moved.launch.grid == ("ceil_div(N, 128)",)
    assert not any(not found.config(p).options.exact for p in [found.origin, (0, 0, 1, 1)])
    numerics = space.space(task, cand, numerics=True)
    assert numerics.dims[-1].name == "numerics" and len(numerics.dims[-1].values) == 4


def test_block_shapes_follow_the_launch_or_the_kernels_knobs(gelu: Any) -> None:
    task, _ = gelu
    one = space.derived_block(task.launch, task.bench)
    assert one == LaunchSpec(block=("BLOCK_X",), grid=("ceil_div(N, BLOCK_X)",))
    matmul = load_task(EXAMPLES / "matmul")
    assert isinstance(matmul, CudaTask)
    two = space.derived_block(matmul.launch, matmul.bench)
    assert two is not None and two.block == ("BLOCK_X", "BLOCK_Y")
    assert two.grid == ("ceil_div(N, BLOCK_X)", "ceil_div(M, BLOCK_Y)")
    # a grid that does not divide by the block (faster gelu's 4 elements a thread): kept as is
    fixed = LaunchSpec(block=("256",), grid=("ceil_div(N, 1024)",))
    assert space.derived_block(fixed, task.bench) is None
    # a launch naming the kernel's knobs: the knobs are the way, no shape is derived
    for name in ("gelu", "matmul", "softmax", "transpose", "stencil", "rowsum"):
        t = load_task(EXAMPLES / name)
        faster = load_candidate(t, EXAMPLES / name / "candidates" / "faster.cu")
        assert isinstance(t, CudaTask) and isinstance(faster, CudaCandidate)
        assert faster.launch is not None and space.derived_block(faster.launch, t.bench) is None
        examples = space.space(t, faster)
        assert not any(d.name.startswith("block.") for d in examples.dims)
        # each knob at its default is the kernel as it was written: the start's own build
        assert examples.config(examples.origin).apply(faster) == faster
    mm = space.space(matmul, cand_of(matmul))
    too_big = mm.point({"block.x": 64, "block.y": 32})
    assert too_big is not None and "more than the GPU takes" in mm.problem(too_big)
    tiny = mm.point({"block.x": 8, "block.y": 1})
    assert tiny is not None and "too few" in mm.problem(tiny)
    assert mm.problem(mm.origin) == ""


def cand_of(task: CudaTask) -> CudaCandidate:
    cand = reference_candidate(task)
    assert isinstance(cand, CudaCandidate)
    return cand


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


def tile8_block128(values: dict[str, int], block: tuple[int, ...], options: Any) -> float:
    """TILE=8 at 128 threads is 1.10x faster than as given (the register caps and ptxas levels
    that build other code are slower)."""
    if options.maxrregcount or options.ptxas_level:
        return 0.9
    speed = {1: 0.8, 2: 0.9, 4: 1.0, 8: 1.05, 16: 0.97}[values["TILE"]]
    return speed * (1.05 if block == (128,) else 1.0)


def test_the_search_keeps_only_a_clear_gain_and_writes_it(
    gelu: Any, nvrtc: None, tmp_path: Path, builds: Any
) -> None:
    task, cand = gelu
    gpu = LandscapeGpu(tile8_block128)
    found = tune(task, cand, gpu, arch="sm_90", backend="nvrtc", budget=24, builds=builds)
    assert len(found.tried) <= 24 and found.improved
    assert found.best_config.describe() == "block 128, TILE=8"
    assert found.best.options == CompileOptions(defines=(("TILE", 8),))
    assert found.gain == pytest.approx(1.05 * 1.05)
    kept = [t.speedup or 0.0 for t in found.tried if t.kept]  # each 2% over the one before
    assert kept and all(b >= a * 1.02 for a, b in zip([1.0, *kept], kept, strict=False))
    # a register cap that builds what the kernel already builds is never checked
    assert any("same code as" in why for _, why in found.dropped)
    written = write_tuned(found.best, task.name, tmp_path)
    assert written.name == "tiled.tuned.cu" and written.read_text() == TILED
    again = load_candidate(task, written)  # the sidecar reads back as the same candidate
    assert isinstance(again, CudaCandidate)
    assert (again.options, again.launch) == (found.best.options, found.best.launch)
    assert "[compile]" in sidecar(found.best) and "[launch]" in sidecar(found.best)
    data = found.as_json(written)
    assert data["best"] == "block 128, TILE=8" and data["improved"] and data["tried"]


def test_a_kernel_written_for_one_block_drops_the_others_as_wrong(
    gelu: Any, nvrtc: None, builds: Any
) -> None:
    task, cand = gelu

    def fixed_block(values: dict[str, int], block: tuple[int, ...], options: Any) -> Any:
        return 1.0 if block == (256,) else None  # e.g. __shared__ float s[256]: wrong elsewhere

    gpu = LandscapeGpu(fixed_block)
    found = tune(task, cand, gpu, arch="sm_90", backend="nvrtc", budget=12, builds=builds)
    shapes = [t for t in found.tried if t.config.block]
    assert shapes and all(t.report.verdict == "wrong" and not t.kept for t in shapes)
    assert not found.improved and found.best == cand


def test_the_budget_leaves_the_rest_unchecked_and_a_wrong_start_is_refused(
    gelu: Any, nvrtc: None
) -> None:
    task, cand = gelu
    gpu = LandscapeGpu(lambda v, b, o: 0.9 if (v["TILE"], b) != (4, (256,)) else 1.0)
    found = tune(task, cand, gpu, arch="sm_90", backend="nvrtc", budget=1)
    assert len(found.tried) == 1 and found.left > 100 and not found.improved
    wrong = LandscapeGpu(lambda v, b, o: None)
    with pytest.raises(Exception, match="only a correct kernel is tuned"):
        tune(task, cand, wrong, arch="sm_90", backend="nvrtc")


def test_earlier_winners_on_this_arch_are_tried_first_and_each_check_is_remembered(
    gelu: Any, nvrtc: None, tmp_path: Path, cache_dir: Path
) -> None:
    task, cand = gelu
    settings = Settings(data_dir=tmp_path / "data", cache_dir=cache_dir)
    first = remembered_tune(
        settings, task, cand, LandscapeGpu(tile8_block128), arch="sm_90", run_id="gelu-tune-1"
    )
    assert first.improved
    store = ChromaStore.open(settings.memory_dir, embedding=CodeHashEmbedding())
    records = TuneMemory(store).records("sm_90")
    assert len(records) == len(first.tried) and all(r.arch == "sm_90" for r in records)
    won = [r for r in records if r.won]
    assert [r.config for r in won] == ["block 128, TILE=8"] and won[0].gain > 1.1
    assert TuneMemory(store).records("sm_80") == []  # per architecture
    gpu = LandscapeGpu(tile8_block128)
    again = remembered_tune(settings, task, cand, gpu, arch="sm_90", run_id="gelu-tune-2", budget=2)
    assert again.remembered == 1
    assert gpu.checked[1].options.defines == (("TILE", 8),)  # the winner, right after the start
    assert again.best_config.describe() == "block 128, TILE=8"
    elsewhere = LandscapeGpu(tile8_block128)
    remembered_tune(settings, task, cand, elsewhere, arch="sm_80", run_id="gelu-tune-3", budget=1)
    assert elsewhere.checked[1].options.defines != (("TILE", 8),)  # another arch: not tried first
    off = LandscapeGpu(tile8_block128)
    remembered_tune(settings, task, cand, off, arch="sm_90", run_id="x", budget=1, memory=False)
    assert off.checked[1].options.defines != (("TILE", 8),)


def test_the_command(
    gelu: Any, nvrtc: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache_dir: Path
) -> None:
    task, cand = gelu
    gpu = LandscapeGpu(tile8_block128)
    monkeypatch.setattr(options, "local_gpu", lambda settings, **kw: gpu)
    monkeypatch.setattr(nvml, "device_info", lambda *a: type("D", (), {"arch": "sm_90"})())
    (tmp_path / "config.toml").write_text("[tune]\nbudget = 30\n")
    env = {
        "KERNELWRIGHT_CONFIG": str(tmp_path / "config.toml"),
        "KERNELWRIGHT_DATA_DIR": str(tmp_path / "data"),
        "KERNELWRIGHT_CACHE_DIR": str(cache_dir),
    }
    args = ["tune", task.path, cand.path, "--json", "--backend", "nvrtc", "--no-memory"]
    result = CliRunner().invoke(app, args, env=env)
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["best"] == "block 128, TILE=8" and out["gain"] == pytest.approx(1.1025)
    assert Path(out["written"]).with_suffix(".toml").is_file()
    assert not (tmp_path / "data" / "memory").exists()  # --no-memory: nothing written
    table = CliRunner().invoke(app, ["tune", task.path, cand.path, "--budget", "3"], env=env)
    assert table.exit_code == 0, table.output
    assert "configurations checked" in table.stdout and "defaults (as given)" in table.stdout
    assert "nothing beat the kernel as given" in table.stdout or "kept" in table.stdout
    assert (tmp_path / "data" / "memory").is_dir()  # remembered by default
    problem = EXAMPLES / "kernelbench" / "relu_mlp.py"
    refused = CliRunner().invoke(app, ["tune", str(problem)], env=env)
    assert "tune searches a CUDA kernel's compile options" in str(refused.exception)


def test_the_builds_land_where_the_verifier_looks(gelu: Any, nvrtc: None, tmp_path: Path) -> None:
    from kernelwright.tools.builds import BuildCache

    task, cand = gelu
    cache = BuildCache(tmp_path / "builds")
    gpu = LandscapeGpu(tile8_block128)
    found = tune(task, cand, gpu, arch="sm_90", backend="nvrtc", budget=6, builds=cache)
    assert found.tried
    for t in found.tried:  # each checked configuration's build is there for its check
        _, hit = cache.find(
            cand.source, task.entry, "sm_90", "nvrtc", t.config.options.flags("nvrtc")
        )
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
