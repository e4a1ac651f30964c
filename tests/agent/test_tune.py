"""`kernelwright tune`: the space a kernel's compile options span, configurations that change
nothing dropped before any GPU time, the keep rule, and the search end to end with recorded
verifier reports (no GPU: the builds are real, on the CPU; the checks are replayed)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, cast

import pytest
from typer.testing import CliRunner

from kernelwright.agent import options
from kernelwright.agent.doors.cli import app
from kernelwright.agent.settings import Settings
from kernelwright.agent.tune import remembered_tune, sidecar, tune, tune_markdown, write_tuned
from kernelwright.memory.embeddings import CodeHashEmbedding
from kernelwright.memory.store import ChromaStore
from kernelwright.memory.tunings import TuneMemory
from kernelwright.tools import numerics, nvml
from kernelwright.tools import tune as space
from kernelwright.tools.builds import compiler_identity
from kernelwright.tools.compile import compile_in_sandbox
from kernelwright.tools.knobs import knob_values
from kernelwright.tools.results import CheckReport, SanitizeResult
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

    def sanitize(self, task: Any, cand: Any) -> SanitizeResult:
        return SanitizeResult(available=False, reason="compute-sanitizer is not installed")

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
    names = ["TILE", "block.x", "maxrregcount", "ptxas", "launch_bounds"]
    assert [d.name for d in found.dims] == names
    assert found.dims[1].values == (64, 128, 256, 512, 1024)
    assert found.dims[4].values == (None, 1, 2, 4, 8)  # none, or the fewest blocks an SM holds
    start = found.config(found.origin)
    assert start.apply(cand) == cand and start.describe() == "defaults"  # the start is as given
    moved = found.config((3, 1, 0, 0, 0))
    assert moved.options.defines == (("TILE", 8),) and moved.describe() == "block 128, TILE=8"
    assert moved.launch is not None and moved.launch.grid == ("ceil_div(N, 128)",)
    assert not any(not found.config(p).options.exact for p in [found.origin, (0, 0, 1, 1, 2)])


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
    written, kept = write_tuned(found.best, task.name, tmp_path)
    assert written.name == "tiled.tuned.cu" and written.read_text() == TILED and kept is None
    again = load_candidate(task, written)  # the sidecar reads back as the same candidate
    assert isinstance(again, CudaCandidate)
    assert (again.options, again.launch) == (found.best.options, found.best.launch)
    assert "[compile]" in sidecar(found.best) and "[launch]" in sidecar(found.best)
    data = found.as_json(written)
    assert data["best"] == "block 128, TILE=8" and data["improved"] and data["tried"]
    # the same again rewrites it; a different one keeps the earlier beside it, never lost
    assert write_tuned(found.best, task.name, tmp_path) == (written, None)
    edited = TILED.replace("TILE", "TILE ", 1)
    written.write_text(edited)
    again_written, kept = write_tuned(found.best, task.name, tmp_path)
    assert again_written == written and written.read_text() == TILED
    assert kept == tmp_path / "tiled.tuned.1.cu" and kept.read_text() == edited
    assert kept.with_suffix(".toml").read_text() == sidecar(found.best)
    written.write_text(edited + "// twice\n")
    assert write_tuned(found.best, task.name, tmp_path)[1] == tmp_path / "tiled.tuned.2.cu"
    written.unlink()  # a sidecar alone: kept, and said as what it is
    kept = write_tuned(found.best, task.name, tmp_path)[1]
    assert kept == tmp_path / "tiled.tuned.3.toml" and kept.exists()
    assert not (tmp_path / "tiled.tuned.3.cu").exists()


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
    winner = gpu.checked[1]
    assert winner.options.defines == (("TILE", 8),)  # the winner, right after the start
    assert again.best_config.describe() == "block 128, TILE=8"
    # the search's own first step may move TILE alone: the winner is TILE=8 at 128 threads
    elsewhere = LandscapeGpu(tile8_block128)
    remembered_tune(settings, task, cand, elsewhere, arch="sm_80", run_id="gelu-tune-3", budget=1)
    assert elsewhere.checked[1] != winner  # another arch: not tried first
    off = LandscapeGpu(tile8_block128)
    remembered_tune(settings, task, cand, off, arch="sm_90", run_id="x", budget=1, memory=False)
    assert off.checked[1] != winner


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
    assert out["numerics"].startswith("numerics not tried: not asked for")
    assert Path(out["written"]).with_suffix(".toml").is_file()
    assert not (tmp_path / "data" / "memory").exists()  # --no-memory: nothing written
    table = CliRunner().invoke(app, ["tune", task.path, cand.path, "--budget", "3"], env=env)
    assert table.exit_code == 0, table.output
    assert "configurations checked" in table.stdout and "defaults (as given)" in table.stdout
    assert "nothing beat the kernel as given" in table.stdout or "kept" in table.stdout
    assert (tmp_path / "data" / "memory").is_dir()  # remembered by default
    asked = CliRunner().invoke(app, ["tune", task.path, cand.path, "--budget", "3", "--numerics"],
                               env=env)  # fmt: skip
    assert asked.exit_code == 0, asked.output
    assert "numerics tried: flush to zero, approximate division and sqrt; not fast math" in (
        " ".join(asked.stdout.split())
    )
    assert "numerics" not in table.stdout  # not asked: nothing said of them
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


# many live values: what ptxas does with them depends on the registers it may use
HUNGRY = """extern "C" __global__ void gelu(const float* x, float* y, int n)
{
    float acc[48];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    #pragma unroll
    for (int j = 0; j < 48; ++j) acc[j] = x[(i + j * 977) % n];
    float s = 0.f;
    #pragma unroll
    for (int r = 0; r < 4; ++r)
    #pragma unroll
    for (int j = 0; j < 48; ++j) s += acc[j] * acc[(j * 7 + r) % 48];
    if (i < n) y[i] = s;
}
"""
OWN_BOUNDS = HUNGRY.replace("__global__ void", "__global__ void __launch_bounds__(256, 2)")


def bounds(threads: int, blocks: int, **kw: Any) -> CompileOptions:
    return CompileOptions(max_threads_per_block=threads, min_blocks_per_sm=blocks, **kw)


def test_launch_bounds_follow_each_configurations_block(gelu: Any, tmp_path: Path) -> None:
    task, cand = gelu
    found = space.space(task, cand)
    lb = [d.name for d in found.dims].index("launch_bounds")
    at = {d.name: i for i, d in enumerate(found.dims)}
    point = list(found.origin)
    point[lb] = found.dims[lb].values.index(2)
    as_given = found.config(tuple(point))  # the task's block: 256 threads
    assert as_given.options == bounds(256, 2) and as_given.launch is None
    assert as_given.describe() == "launch bounds (256, 2)"
    assert as_given.options.flags("nvrtc") == (
        "--ptxas-options=--maxntid=256",
        "--ptxas-options=--minnctapersm=2",
    )
    point[at["block.x"]] = found.dims[at["block.x"]].values.index(128)
    smaller = found.config(tuple(point))
    assert (
        smaller.options == bounds(128, 2)
        and smaller.describe() == "block 128, launch bounds (128, 2)"
    )
    point[lb] = 0
    assert found.config(tuple(point)).options == CompileOptions()  # none: no bounds
    # a block the kernel's knobs set: the bounds follow the knobs (matmul's TX x TY threads)
    matmul = load_task(EXAMPLES / "matmul")
    faster = load_candidate(matmul, EXAMPLES / "matmul" / "candidates" / "faster.cu")
    assert isinstance(matmul, CudaTask) and isinstance(faster, CudaCandidate)
    mm = space.space(matmul, faster)
    tx, ty = knob_values(faster.source)["TX"], knob_values(faster.source)["TY"]
    wide = mm.point({"launch_bounds": 4, "TX": tx * 2})
    assert wide is not None and mm.config(wide).options.max_threads_per_block == 2 * tx * ty
    # a block that names a size: a held-out size could launch more, so no bounds are searched
    sized = task.model_copy(update={"launch": LaunchSpec(block=("min(N, 256)",), grid=("1",))})
    assert "launch_bounds" not in [d.name for d in space.space(sized, cand).dims]
    # bounds a sidecar sets as tune would are the start's own point; others stay as written
    tuned = cand.model_copy(update={"options": bounds(256, 4)})
    again = space.space(task, tuned)
    assert again.config(again.origin).apply(tuned) == tuned
    assert "max_threads_per_block = 256\nmin_blocks_per_sm = 4\n" in sidecar(tuned)
    back = load_candidate(task, write_tuned(tuned, task.name, tmp_path)[0])  # as written, read
    assert isinstance(back, CudaCandidate) and back.options == bounds(256, 4)
    own = cand.model_copy(update={"options": CompileOptions(max_threads_per_block=512)})
    assert "launch_bounds" not in [d.name for d in space.space(task, own).dims]


@pytest.mark.parametrize("backend", ["nvrtc", "nvcc"])
def test_launch_bounds_build_real_cubins_and_those_ptxas_ignores_are_dropped(
    backend: str,
) -> None:
    if compiler_identity(backend) is None:
        pytest.skip(f"{backend} is not installed")

    def builder(source: str) -> Any:
        def build(config: CompileOptions) -> Any:
            return compile_in_sandbox(source, "gelu", "sm_90", backend, flags=config.flags(backend))

        return build

    capped = builder(HUNGRY)(bounds(256, 8))[0]  # 8 blocks of 256 threads: 32 registers each
    assert capped.ok and capped.registers is not None and capped.registers <= 32
    configs = [
        CompileOptions(),
        bounds(256, 8),
        bounds(1024, 4),  # 4096 threads: more than an SM holds, ptxas ignores them
        CompileOptions(maxrregcount=64),
        bounds(256, 8, maxrregcount=64),  # beside a register cap ptxas ignores the bounds
    ]
    kept, dropped = space.distinct(configs, builder(HUNGRY))
    assert kept == [configs[0], configs[1], configs[3]]
    assert dropped == [
        (configs[2], "same code as defaults"),
        (configs[4], "same code as maxrregcount 64"),
    ]
    # a kernel with its own __launch_bounds__: ptxas keeps them, and the options build nothing new
    configs = [CompileOptions(), bounds(256, 1), bounds(256, 8)]
    kept, dropped = space.distinct(configs, builder(OWN_BOUNDS))
    assert (
        kept == [CompileOptions()] and [why for _, why in dropped] == ["same code as defaults"] * 2
    )


def test_launch_bounds_are_searched_alone_and_never_over_a_kernels_own(
    gelu: Any, nvrtc: None, builds: Any
) -> None:
    task, cand = gelu
    plain = cand.model_copy(update={"source": HUNGRY})
    gpu = LandscapeGpu(lambda v, b, o: 1.0)  # nothing is faster: the origin's neighbours, then more
    found = tune(task, plain, gpu, arch="sm_90", backend="nvrtc", budget=12, builds=builds)
    checked = [t for t in found.tried if t.config.options.max_threads_per_block]
    assert checked and all(t.report.ok for t in checked)
    # beside a register cap ptxas ignores them: such a point is passed over, never built
    lb = space.space(task, plain)
    both = lb.point({"maxrregcount": 64, "launch_bounds": 2})
    assert both is not None and "ptxas ignores them" in lb.problem(both)
    assert not any(o.max_threads_per_block and o.maxrregcount for o in map(_options, gpu.checked))
    # a kernel's own __launch_bounds__ win over the options (the same code: see the builds
    # above): no bounds are searched for it
    own = cand.model_copy(update={"source": OWN_BOUNDS})
    assert "launch_bounds" not in [d.name for d in space.space(task, own).dims]
    gpu = LandscapeGpu(lambda v, b, o: 1.0)
    found = tune(task, own, gpu, arch="sm_90", backend="nvrtc", budget=4, builds=builds)
    assert found.tried and not any(c.options.max_threads_per_block for c in gpu.checked)


def _options(cand: CudaCandidate) -> CompileOptions:
    return cand.options


def test_a_configuration_that_does_not_build_is_dropped_not_failed(
    gelu: Any, nvrtc: None, builds: Any
) -> None:
    task, cand = gelu
    refusing = cand.model_copy(update={"source": "#if TILE > 8\n#error too big\n#endif\n" + TILED})
    gpu = LandscapeGpu(tile8_block128)  # TILE=8 is faster: the search steps on to 16
    found = tune(task, refusing, gpu, arch="sm_90", backend="nvrtc", budget=24, builds=builds)
    refused = [(c, why) for c, why in found.dropped if ("TILE", 16) in c.options.defines]
    assert refused and all(why.startswith("does not compile") for _, why in refused)
    assert not any(("TILE", 16) in t.config.options.defines for t in found.tried)
    assert found.improved and found.best.options.defines == (("TILE", 8),)


def _task(tmp_path: Path, out_dtype: str = "float32", tolerance: str = "") -> CudaTask:
    """A one-output elementwise task written to disk: y = x * 2 in `out_dtype`."""
    ctype = {"float32": "float", "float64": "double", "int32": "int"}[out_dtype]
    folder = tmp_path / f"twice_{out_dtype}"
    folder.mkdir(parents=True)
    (folder / "twice.cu").write_text(
        f'extern "C" __global__ void twice(const float* x, {ctype}* y, int n)\n'
        "{\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        f"    if (i < n) y[i] = ({ctype})(x[i] * 2.0f);\n}}\n"
    )
    (folder / "twice.toml").write_text(
        'entry = "twice"\n[sizes]\nbench = { N = 4096 }\nchecks = [ { N = 1000 } ]\n'
        '[[args]]\nname = "x"\ndtype = "float32"\nshape = ["N"]\nrole = "in"\n'
        f'[[args]]\nname = "y"\ndtype = "{out_dtype}"\nshape = ["N"]\nrole = "out"\n'
        '[[args]]\nname = "n"\ndtype = "int32"\nrole = "scalar"\nvalue = "N"\n'
        '[launch]\nblock = [256]\ngrid = ["ceil_div(N, 256)"]\n' + tolerance
    )
    task = load_task(folder)
    assert isinstance(task, CudaTask)
    return task


def test_numerics_only_where_the_tasks_tolerance_allows_them(tmp_path: Path) -> None:
    def allowed(task: Any, source: str | None = None) -> list[str]:
        return numerics.allowed(task, task.source if source is None else source)[0]

    everything = ["flush to zero", "approximate division and sqrt", "fast math"]
    # loose enough: softmax's expf errs up to 123 ulp under fast math, within its rtol 2e-5
    for name in ("softmax", "matmul", "rowsum", "stencil", "transpose"):
        assert allowed(load_task(EXAMPLES / name)) == everything, name
    # gelu's tanhf becomes __tanhf (relative error 2^-11), over float32's default 1e-5
    gelu = load_task(EXAMPLES / "gelu")
    assert allowed(gelu) == everything[:2]
    why = numerics.allowed(gelu, gelu.source)[1]
    assert why.startswith("numerics tried: flush to zero, approximate division and sqrt; not ")
    assert "fast math" in why and "tanhf" in why and "rtol 1e-05" in why
    assert allowed(gelu, "// tanhf(x) in a comment\n" + load_task(EXAMPLES / "matmul").source)
    # sinf has no bound over its whole range (__sinf's holds on [-pi, pi])
    assert allowed(load_task(EXAMPLES / "softmax"), "y = sinf(x);") == everything[:2]
    # tight: under 2 ulp relative and no absolute slack; exact: integers, or a C++ task's word
    tight = _task(tmp_path, tolerance="[tolerance]\natol = 0.0\nrtol = 1e-7\n")
    assert allowed(tight) == []
    assert "not flush to zero" in numerics.allowed(tight, tight.source)[1]
    # float64's default rtol 1e-10 is under every relative bound; its atol 1e-10 is over a flush's
    assert allowed(_task(tmp_path, "float64")) == ["flush to zero"]
    loose64 = _task(tmp_path / "l", "float64", "[tolerance]\natol = 1e-3\nrtol = 1e-3\n")
    assert allowed(loose64) == everything
    ints = _task(tmp_path, "int32", "[tolerance]\natol = 1.0\nrtol = 1.0\n")
    assert numerics.allowed(ints, ints.source) == (
        [],
        "numerics not tried: outputs compared exactly (output 'y' is int32)",
    )
    minmax = load_task(EXAMPLES / "cpp" / "minmax")  # float outputs, compare = "exact"
    assert numerics.allowed(minmax, "") == (
        [],
        "numerics not tried: outputs compared exactly (the task says so)",
    )


def test_the_numerics_dimension_holds_what_the_gate_allows(gelu: Any, tmp_path: Path) -> None:
    task, cand = gelu
    found = space.space(task, cand, numerics=True)
    assert found.dims[-1].name == "numerics"
    assert found.dims[-1].values == ("exact", "flush to zero", "approximate division and sqrt")
    assert found.numerics.startswith("numerics tried: flush to zero")
    assert space.space(task, cand).numerics == ""  # not asked
    tight = _task(tmp_path, tolerance="[tolerance]\natol = 0.0\nrtol = 1e-7\n")
    none = space.space(tight, cast(CudaCandidate, reference_candidate(tight)), numerics=True)
    assert "numerics" not in [d.name for d in none.dims]
    assert none.numerics.startswith("numerics not tried; not flush to zero")
    # a kernel built with an approximation keeps its own, to come back from
    fast = cand.model_copy(update={"options": CompileOptions(fast_math=True)})
    kept = space.space(task, fast, numerics=True)
    assert kept.dims[-1].values == (
        "exact",
        "fast math",
        "flush to zero",
        "approximate division and sqrt",
    )
    assert kept.config(kept.origin).apply(fast) == fast


def test_a_tune_says_in_one_line_why_numerics_were_not_tried(
    tmp_path: Path, nvrtc: None, builds: Any
) -> None:
    task = _task(tmp_path, tolerance="[tolerance]\natol = 0.0\nrtol = 1e-7\n")
    cand = cast(CudaCandidate, reference_candidate(task))
    gpu = LandscapeGpu(lambda v, b, o: 1.0)
    found = tune(
        task, cand, gpu, arch="sm_90", backend="nvrtc", budget=4, numerics=True, builds=builds
    )
    data = found.as_json()
    assert data["numerics"].startswith("numerics not tried; not flush to zero (")
    assert "\n" not in data["numerics"] and all(c.options.exact for c in gpu.checked)
    assert f"- {data['numerics']}" in tune_markdown(data)
    plain = tune(task, cand, gpu, arch="sm_90", backend="nvrtc", budget=1, builds=builds)
    assert plain.as_json()["numerics"].startswith("numerics not tried: not asked for")


class RacyWhenTunedGpu(LandscapeGpu):
    """Every configuration but the start's is faster and passes the checks; compute-sanitizer
    finds a race in every one but the start's, or (`racy`) only in those `racy` picks."""

    def __init__(self, racy: Any = None) -> None:
        super().__init__(tile8_block128)
        self.sanitized: list[Any] = []
        self.racy = racy or (lambda cand: cand.options.defines != () or cand.launch is not None)

    def sanitize(self, task: Any, cand: Any) -> SanitizeResult:
        self.sanitized.append(cand)
        bad = self.racy(cand)
        return SanitizeResult(available=True, ok=not bad, reason="racecheck: 1 hazard" * bad)


def test_a_configuration_is_sanitized_before_it_is_kept(
    gelu: Any, nvrtc: None, builds: Any
) -> None:
    """tune kept a configuration on a plain check, and the run's best.toml took it, with no
    compute-sanitizer: new machine code, and a race that gives the right answer in the trials
    is still a race (a review found it, twenty-eighth session). Racy everywhere: nothing is
    kept, each kept one is refused in turn down to the kernel as given."""
    task, cand = gelu
    gpu = RacyWhenTunedGpu()
    found = tune(task, cand, gpu, arch="sm_90", backend="nvrtc", budget=24, builds=builds)
    assert gpu.sanitized and not found.improved and found.best is cand
    assert not any(t.kept for t in found.tried)
    refused = [t for t in found.tried if t.report.verdict == "wrong"]
    assert refused and all("racecheck" in t.report.reason for t in refused)


def test_a_clean_best_is_sanitized_once(gelu: Any, nvrtc: None, builds: Any) -> None:
    task, cand = gelu
    gpu = RacyWhenTunedGpu(racy=lambda cand: False)
    found = tune(task, cand, gpu, arch="sm_90", backend="nvrtc", budget=24, builds=builds)
    assert found.improved and len(gpu.sanitized) == 1 and gpu.sanitized[0] is found.best
