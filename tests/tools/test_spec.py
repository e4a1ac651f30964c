"""Task and candidate files: the examples load, and every malformed file is refused with an
error that names the file and the field."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kernelwright.tools.errors import TaskError
from kernelwright.tools.kernelbench import KernelBenchTask
from kernelwright.tools.spec import CompileOptions, CudaTask
from kernelwright.tools.task import load_candidate, load_task
from tests.conftest import EXAMPLES

TASKS = ["gelu", "rowsum", "softmax", "matmul", "stencil", "transpose"]


@pytest.mark.parametrize("name", TASKS)
def test_example_loads_from_dir_toml_and_cu(name: str) -> None:
    d = EXAMPLES / name
    tasks = [load_task(d), load_task(d / f"{name}.toml"), load_task(d / f"{name}.cu")]
    assert all(isinstance(t, CudaTask) for t in tasks)
    assert tasks[0] == tasks[1] == tasks[2]
    task = tasks[0]
    assert task.entry == name and task.checks and task.bench
    assert task.reference_python.endswith("reference.py:reference")


@pytest.mark.parametrize("name", TASKS)
def test_example_candidates_load(name: str) -> None:
    task = load_task(EXAMPLES / name)
    cands = sorted((EXAMPLES / name / "candidates").glob("*.cu"))
    assert {c.name for c in cands} >= {"faster.cu", "wrong.cu"}
    for path in cands:
        cand = load_candidate(task, path)
        sidecar = path.with_suffix(".toml")
        if sidecar.is_file():
            assert cand.launch is not None
            assert cand.launch != task.launch  # faster.toml brings its own grid
        else:
            assert cand.launch is None


def test_faster_launch_is_read_from_sidecar() -> None:
    task = load_task(EXAMPLES / "gelu")
    cand = load_candidate(task, EXAMPLES / "gelu" / "candidates" / "faster.cu")
    assert cand.launch is not None and cand.bound_launch is not None
    # the launch names the kernel's knobs; at their defaults it is the launch it always was
    assert cand.launch.block == ("BLOCK",)
    assert cand.bound_launch.resolve({"N": 4096}) == ((4,), (256,), 0)
    tuned = cand.model_copy(update={"options": CompileOptions(defines=(("ITEMS", 2),))})
    assert tuned.bound_launch is not None and tuned.bound_launch.resolve({"N": 4096}) == (
        (2,),
        (256,),
        0,
    )
    assert tuned.worker_job(task.path)["launch"]["grid"] == ("ceil_div(N, 4 * 256 * 2)",)


def test_a_launch_may_name_knobs_and_a_tune_table_limits_them(tmp_path: Path) -> None:
    task = load_task(EXAMPLES / "gelu")
    shutil.copy(EXAMPLES / "gelu" / "candidates" / "faster.cu", tmp_path / "cand.cu")
    sidecar = tmp_path / "cand.toml"
    sidecar.write_text(
        '[launch]\nblock = ["BLOCK"]\ngrid = ["ceil_div(N, BLOCK)"]\n'
        "[compile]\ndefines = { BLOCK = 128 }\n[tune]\nBLOCK = [512, 128]\n"
    )
    cand = load_candidate(task, tmp_path / "cand.cu")
    assert cand.tune_values == (("BLOCK", (128, 512)),)
    assert cand.bound_launch is not None
    assert cand.bound_launch.resolve({"N": 1024}) == ((8,), (128,), 0)  # the define's value
    bad = {
        '[launch]\nblock = ["TILE"]\ngrid = ["N"]\n': r"launch.block: .*unknown size 'TILE'",
        '[launch]\nblock = ["BLOCK"]\ngrid = ["N"]\n[tune]\nTILE = [1]\n': (
            r"cand.toml: tune: TILE: not a knob of the kernel \(#ifndef TILE; its knobs: BLOCK"
        ),
        "[tune]\nBLOCK = [0, 64]\n": r"tune: BLOCK: expected a list of positive integers",
        "tune = 3\n": r"tune: expected a table",
        '[launch]\nblock = ["BLOCK"]\ngrid = ["N / (BLOCK - 256)"]\n': r"launch: division by zero",
    }
    for text, why in bad.items():
        sidecar.write_text(text)
        with pytest.raises(TaskError, match=why):
            load_candidate(task, tmp_path / "cand.cu")


def test_kernelbench_example_loads() -> None:
    task = load_task(EXAMPLES / "kernelbench" / "relu_mlp.py")
    assert isinstance(task, KernelBenchTask)
    assert task.size_globals == {"batch_size": 128, "in_features": 1024, "out_features": 1024}
    cand = load_candidate(task, EXAMPLES / "kernelbench" / "relu_mlp_candidate.py")
    assert "ModelNew" in cand.source


# --- broken task files -------------------------------------------------------------------


def _gelu(tmp_path: Path, old: str = "", new: str = "", cu_old: str = "", cu_new: str = "") -> Path:
    d = tmp_path / "gelu"
    shutil.copytree(EXAMPLES / "gelu", d)
    for file, a, b in ((d / "gelu.toml", old, new), (d / "gelu.cu", cu_old, cu_new)):
        if a:
            text = file.read_text()
            assert a in text, f"{a!r} not in {file.name}"
            file.write_text(text.replace(a, b, 1))
    return d


def _refused(path: Path) -> str:
    with pytest.raises(TaskError) as info:
        load_task(path)
    return str(info.value)


SCALAR_N = '[[args]]\nname = "n"\ndtype = "int32"\nrole = "scalar"\nvalue = "N"\n'
BROKEN = {  # id: (toml old, toml new, expected file, expected field, expected words)
    "missing entry": ('entry = "gelu"\n', "", "gelu.toml", "entry", "missing"),
    "unknown dtype": (
        'dtype = "float32"',
        'dtype = "float33"',
        "gelu.toml",
        "args[0] (x).dtype",
        "float33",
    ),
    "unknown role": ('role = "in"', 'role = "input"', "gelu.toml", "args[0] (x).role", "input"),
    "bad shape": (
        'shape = ["N"]',
        'shape = ["N +"]',
        "gelu.toml",
        "args[0] (x).shape",
        "bad expression",
    ),
    "unknown size": (
        'shape = ["N"]',
        'shape = ["M"]',
        "gelu.toml",
        "args[0] (x).shape",
        "unknown size 'M'",
    ),
    "scalar without value": ('value = "N"\n', "", "gelu.toml", "args[2] (n).value", "value"),
    "wrong arg count": (SCALAR_N, "", "gelu.toml", "args", "takes 3"),
    "pointer for value": (
        'role = "scalar"\nvalue = "N"',
        'role = "in"\nshape = ["N"]',
        "gelu.toml",
        "args[2] (n)",
        "which is a value",
    ),
    "checks sizes": ("{ N = 1000 }", "{ M = 1000 }", "gelu.toml", "sizes.checks[0]", "same sizes"),
    "missing launch": (
        '[launch]\nblock = [256]\ngrid = ["ceil_div(N, 256)"]\n',
        "",
        "gelu.toml",
        "launch",
        "missing",
    ),
    "unknown field": (
        'entry = "gelu"\n',
        'entry = "gelu"\ncolour = "red"\n',
        "gelu.toml",
        "colour",
        "unknown field",
    ),
    "launch field": (
        "block = [256]",
        "block = [256]\nthreads = 3",
        "gelu.toml",
        "launch.threads",
        "unknown field",
    ),
    "range backwards": (
        'role = "in"',
        'role = "in"\ninit = "uniform:5:-5"',
        "gelu.toml",
        "args[0] (x).init",
        "uniform:LO:HI",
    ),
    "entry not in .cu": (
        'entry = "gelu"',
        'entry = "gelu2"',
        "gelu.cu",
        "entry",
        "no __global__ function named 'gelu2'",
    ),
}


@pytest.mark.parametrize("case", BROKEN.values(), ids=BROKEN.keys())
def test_broken_task_names_file_and_field(tmp_path: Path, case: tuple[str, ...]) -> None:
    old, new, file, field, words = case
    message = _refused(_gelu(tmp_path, old, new))
    assert f"{file}: {field}: " in message
    assert words in message


def test_kernel_not_extern_c(tmp_path: Path) -> None:
    message = _refused(_gelu(tmp_path, cu_old='extern "C" __global__', cu_new="__global__"))
    assert "gelu.cu: entry: " in message and 'extern "C"' in message


def test_dtype_must_match_c_type(tmp_path: Path) -> None:
    message = _refused(_gelu(tmp_path, cu_old="const float* x", cu_new="const double* x"))
    assert "gelu.toml: args[0] (x).dtype: " in message
    assert "float32" in message and "'double'" in message


def test_invalid_toml(tmp_path: Path) -> None:
    message = _refused(_gelu(tmp_path, 'entry = "gelu"', 'entry = "gelu'))
    assert "gelu.toml" in message and "not valid TOML" in message


def test_missing_path_and_empty_dir(tmp_path: Path) -> None:
    message = _refused(tmp_path / "nope")
    assert "nope" in message and "no such file" in message
    (tmp_path / "empty").mkdir()
    assert "no task here" in _refused(tmp_path / "empty")


def test_cu_without_toml(tmp_path: Path) -> None:
    (tmp_path / "k.cu").write_text('extern "C" __global__ void k(float* x) {}')
    assert "k.toml" in _refused(tmp_path / "k.cu")


# --- candidates --------------------------------------------------------------------------


def test_candidate_with_other_signature(tmp_path: Path) -> None:
    task = load_task(EXAMPLES / "gelu")
    cand = tmp_path / "cand.cu"
    cand.write_text('extern "C" __global__ void gelu(const float* x, float* y) {}')
    with pytest.raises(
        TaskError,
        match=r"args: 3 arguments declared, but gelu\(\) in cand.cu "
        r"takes 2",
    ):
        load_candidate(task, cand)
    cand.write_text('extern "C" __global__ void gelu(const float* x, double* y, int n) {}')
    with pytest.raises(TaskError, match=r"args\[1\] \(y\).dtype: .*'double'.*cand.cu"):
        load_candidate(task, cand)


def test_candidate_for_other_task(tmp_path: Path) -> None:
    task = load_task(EXAMPLES / "gelu")
    with pytest.raises(TaskError, match=r"faster.cu: entry: no __global__ function named 'gelu'"):
        load_candidate(task, EXAMPLES / "softmax" / "candidates" / "faster.cu")


def test_candidate_sidecar_with_unknown_field(tmp_path: Path) -> None:
    task = load_task(EXAMPLES / "gelu")
    shutil.copy(EXAMPLES / "gelu" / "candidates" / "faster.cu", tmp_path / "cand.cu")
    (tmp_path / "cand.toml").write_text('threads = 4\n[launch]\nblock = [256]\ngrid = ["N"]\n')
    with pytest.raises(TaskError) as info:
        load_candidate(task, tmp_path / "cand.cu")
    assert "cand.toml: threads: unknown field" in str(info.value)
    (tmp_path / "cand.toml").write_text('[launch]\nblock = [256]\ngrid = ["ceil_div(M, 4)"]\n')
    with pytest.raises(TaskError, match=r"cand.toml: launch.grid: .*unknown size 'M'"):
        load_candidate(task, tmp_path / "cand.cu")


# --- KernelBench -------------------------------------------------------------------------


def test_kernelbench_without_get_init_inputs(tmp_path: Path) -> None:
    text = (EXAMPLES / "kernelbench" / "relu_mlp.py").read_text()
    cut = text.index("def get_init_inputs")
    (tmp_path / "relu_mlp.py").write_text(text[:cut])
    for path in (tmp_path / "relu_mlp.py", tmp_path):
        message = _refused(path)
        assert "relu_mlp.py: get_init_inputs: missing" in message


def test_kernelbench_candidate_without_modelnew(tmp_path: Path) -> None:
    task = load_task(EXAMPLES / "kernelbench" / "relu_mlp.py")
    (tmp_path / "cand.py").write_text("class Model:\n    pass\n")
    with pytest.raises(TaskError, match=r"cand.py: ModelNew: missing"):
        load_candidate(task, tmp_path / "cand.py")
    with pytest.raises(TaskError, match=r"\.py file"):
        load_candidate(task, EXAMPLES / "gelu" / "gelu.cu")


def test_launch_that_cannot_be_evaluated_names_launch(tmp_path: Path) -> None:
    message = _refused(_gelu(tmp_path, 'grid = ["ceil_div(N, 256)"]', 'grid = ["N // (N - N)"]'))
    assert "gelu.toml: launch" in message and "division by zero" in message


def test_launch_plan_resolves_grid_block_and_scalars_once() -> None:
    import numpy as np

    from kernelwright.tools.spec import launch_plan

    task = load_task(EXAMPLES / "stencil")
    assert isinstance(task, CudaTask)
    sizes = {"H": 100, "W": 333}
    arrays = {
        a.name: np.zeros(task.shape(a, sizes), dtype=a.dtype)
        for a in task.args
        if a.role != "scalar"
    }
    grid, block, smem, args = launch_plan(task, task.launch, arrays, sizes)
    assert (grid, block, smem) == ((21, 7), (16, 16), 0)  # ceil(333/16), ceil(100/16)
    assert args[0] is arrays["x"] and args[1] is arrays["y"]
    assert [int(v) for v in args[2:]] == [100, 333]
    assert all(v.dtype == np.int32 for v in args[2:])


def test_a_float_input_can_span_a_range() -> None:
    task = load_task(EXAMPLES / "softmax")  # wide logits: exp() overflows unless the max goes
    assert isinstance(task, CudaTask) and task.args[0].init == "uniform:-100:100"


def _softmax_with(tmp_path: Path, old: str, new: str) -> Path:
    d = tmp_path / "softmax"
    shutil.copytree(EXAMPLES / "softmax", d)
    toml = d / "softmax.toml"
    text = toml.read_text()
    assert old in text
    toml.write_text(text.replace(old, new))
    return d


def test_a_wider_domain_is_read_and_a_bad_one_named(tmp_path: Path) -> None:
    task = load_task(EXAMPLES / "softmax")
    assert isinstance(task, CudaTask)
    assert task.args[0].check == ("uniform:-30000:30000", "normal:1000")
    bad = _softmax_with(tmp_path, '"normal:1000"', '"wide"')
    with pytest.raises(TaskError) as info:
        load_task(bad)
    assert "args[0] (x).check: unknown distribution 'wide'" in str(info.value)
    ints = _softmax_with(tmp_path / "b", 'check = ["uniform', 'check = ["randint:0:9", "uniform')
    with pytest.raises(TaskError, match=r"check: randint is for integer dtypes"):
        load_task(ints)


@pytest.mark.parametrize("name", ["../../outside", "/tmp/abs-escape", "a b", ".hidden", ""])
def test_a_task_name_that_is_not_a_plain_token_is_refused(tmp_path: Path, name: str) -> None:
    """A run's directory and files are named by the task: a name of "../../outside" put a
    run's files outside the data directory (a review found it, twenty-eighth session)."""
    task_dir = tmp_path / "task"
    shutil.copytree(EXAMPLES / "gelu", task_dir)
    toml = task_dir / "gelu.toml"
    toml.write_text(f"name = {name!r}\n".replace("'", '"') + toml.read_text())
    with pytest.raises(TaskError, match=r"name: .* is not a plain name") as got:
        load_task(task_dir)
    assert "\n" not in str(got.value)
    toml.write_text(toml.read_text().replace(f'name = "{name}"', 'name = "gelu.v2-fast+1"'))
    assert load_task(task_dir).name == "gelu.v2-fast+1"


def test_a_run_directory_stays_in_the_runs_directory(tmp_path: Path) -> None:
    """Whatever name reaches it (a KernelBench problem's is its file's stem), a run's
    directory is made inside `runs`, and found again there."""
    from kernelwright.agent.rundir import RunDir

    runs = tmp_path / "runs"
    for name in ("../../outside", "/abs", "[x]*?", "ok_name"):
        run = RunDir.create(runs, name, {})
        assert run.path.resolve().parent == runs.resolve()
        run.checkpoints.write_text("")
        found = RunDir.latest_unfinished(runs, name)
        assert found is not None and found.path == run.path
    assert not (tmp_path.parent / "outside").exists()
