"""A C++ task in the verifier, on the CPU: the task as its GPU workers see it (the kernel's
arguments, a port as their reference, outputs that start as a declared value), how tasks and
candidates load, how its outputs are judged, its expected outputs from the C++ function beside
the GPU's checksums (a port that disagrees refused), its three speedups, the function checked
against itself on one core (timed once, kept), and a drop-in host file that does not build."""

from __future__ import annotations

import json
import re
import shutil
import statistics
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kernelwright.tools import judge, plan
from kernelwright.tools.cpp import CppTask
from kernelwright.tools.cpp_candidates import HOST_MARK, CppKernel, HostFile
from kernelwright.tools.cpp_check import CppReference, ReferenceProblem, cached_cpu_ms
from kernelwright.tools.errors import TaskError
from kernelwright.tools.results import KernelTiming, TimingResult
from kernelwright.tools.serving import flat
from kernelwright.tools.spec import CudaTask
from kernelwright.tools.task import load_candidate, load_task
from tests.conftest import EXAMPLES
from tests.tools.test_cpp import needs_gxx
from tests.tools.test_cpp_examples import example

CPP = EXAMPLES / "cpp"


# --- what the GPU's workers see ------------------------------------------------------------------


def test_a_kernel_gets_the_sizes_no_scalar_carries_after_the_functions_arguments() -> None:
    hist, gemv, jacobi = example("histogram"), example("gemv"), example("jacobi2d")
    assert [a.name for a in hist.kernel_args] == ["pixels", "counts", "N"]
    extra = hist.kernel_args[-1]
    assert (extra.dtype, extra.role, extra.value) == ("int64", "scalar", "N")
    assert gemv.kernel_args == gemv.args  # M and N are its own parameters
    assert jacobi.kernel_args == jacobi.args  # rows = H, cols = W
    clash = hist.model_copy(update={"bench": {"N": 8, "pixels": 4}})
    assert clash.kernel_args[-1].name == "size_pixels"  # never two arguments of one name


def test_the_gpus_workers_see_a_cuda_task_whose_kernel_is_the_port() -> None:
    task = example("histogram")
    view = task.worker_task()
    assert isinstance(view, CudaTask) and view.kind == "cuda"
    assert view.source == (CPP / "histogram" / "candidates" / "port.cu").read_text()
    assert view.args == task.kernel_args and view.entry == "histogram"
    assert view.args[1].init == "fill:0"  # the counts start at zero there too, never poisoned
    assert view.launch == task.launch
    faster = load_candidate(task, CPP / "histogram" / "candidates" / "faster.cu")
    assert isinstance(faster, CppKernel) and faster.launch is not None
    beside = task.worker_task(faster)  # a port at its own launch
    assert beside.source == faster.source and beside.launch == faster.launch
    assert CudaTask.model_validate(view.model_dump()) == view  # it travels as a CUDA task's dump


@pytest.mark.parametrize("form", ["dir", "toml", "cpp", "cu"])
def test_a_cpp_task_loads_by_any_of_its_paths(tmp_path: Path, form: str) -> None:
    shutil.copytree(CPP / "axpy", tmp_path / "axpy")
    (tmp_path / "axpy" / "axpy.cu").write_text("// a CUDA file of the same name\n")
    path = {"dir": "axpy", "toml": "axpy/axpy.toml", "cpp": "axpy/axpy.cpp", "cu": "axpy/axpy.cu"}
    assert load_task(tmp_path / path[form]).kind == "cpp"
    assert load_task(EXAMPLES / "gelu").kind == "cuda"  # a CUDA task's .toml is still one


def test_a_lone_cpp_file_says_what_it_needs(tmp_path: Path) -> None:
    (tmp_path / "f.cpp").write_text("void f() {}\n")
    with pytest.raises(TaskError, match=r"f.cpp: a C\+\+ task needs f.toml beside it"):
        load_task(tmp_path / "f.cpp")


def test_candidates_for_a_cpp_task(tmp_path: Path) -> None:
    task = example("gemv")
    port = load_candidate(task, CPP / "gemv" / "candidates" / "port.cu")
    assert isinstance(port, CppKernel) and port.kind == task.kind and port.port is None
    host = tmp_path / "best_host.cu"
    host.write_text(f"{HOST_MARK} for gemv()\n")
    assert isinstance(load_candidate(task, host), HostFile)
    (tmp_path / "k.py").write_text("x = 1\n")
    with pytest.raises(TaskError, match=re.escape("a candidate for a C++ task is a .cu file")):
        load_candidate(task, tmp_path / "k.py")
    hist = example("histogram")
    no_size = tmp_path / "h.cu"
    no_size.write_text(
        'extern "C" __global__ void histogram(const int* pixels, unsigned int* counts) {}\n'
    )
    with pytest.raises(TaskError, match=re.escape("declared, but histogram() in h.cu takes 2")):
        load_candidate(hist, no_size)


def _copy(tmp_path: Path, name: str, old: str, new: str) -> Path:
    shutil.copytree(CPP / name, tmp_path / name)
    spec = tmp_path / name / f"{name}.toml"
    spec.write_text(spec.read_text().replace(old, new))
    return spec


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("candidates/port.cu", "missing.cu", "minmax.toml: port: missing.cu not found"),
        ("candidates/port.cu", "candidates/port.txt", "port: expected a .cu file beside"),
        (
            "candidates/port.cu",
            "candidates/bad.cu",
            "port: candidates/bad.cu: args: 4 arguments declared, but minmax() in bad.cu takes 3",
        ),
        ('"uniform:-1000:1000"', '"normal"', "args[0] (x).init: 'normal': the GPU and the CPU"),
    ],
)
def test_a_task_file_at_fault_says_the_field(
    tmp_path: Path, old: str, new: str, message: str
) -> None:
    spec = _copy(tmp_path, "minmax", old, new)
    (spec.parent / "candidates" / "bad.cu").write_text(
        'extern "C" __global__ void minmax(const float* x, float* lo, float* hi) {}\n'
    )
    with pytest.raises(TaskError) as err:
        load_task(spec)
    assert message in str(err.value) and "\n" not in str(err.value)


# --- judging --------------------------------------------------------------------------------------


def test_outputs_are_judged_exactly_or_to_the_tasks_tolerance() -> None:
    hist, gemv = example("histogram"), example("gemv")
    outputs = judge.OUTPUTS["cpp"]
    assert outputs.tolerance(hist, "uint32") == (0.0, 0.0)  # compare = "exact"
    assert outputs.tolerance(gemv, "float64") == (1e-9, 1e-9)
    trial = plan.Trial({"M": 7, "N": 1000}, seed=1, poisons=(1, 2))
    assert judge.reference_expect(gemv, trial, 1 << 30).sizes == (7 * 8,)  # in y's own dtype
    assert judge.output_expect(gemv, trial, {}).sizes == (7 * 8,)


def test_trials_sample_held_out_sizes_as_for_a_cuda_task() -> None:
    import random

    trials, post = plan.plan_trials(example("gemv"), random.Random(3), 5)
    assert len(trials) >= 5 and any(t.held_out for t in trials)
    assert post.sizes == {"M": 4096, "N": 8192}


# --- the check's C++ side -------------------------------------------------------------------------


def _message(task: CppTask, outputs: dict[str, np.ndarray]) -> judge.Message:
    outs = [a for a in task.args if a.role in ("out", "inout")]
    header = {"type": "expected", "checksums": {"pixels": "gpu-sum"}, "dtypes": ["uint32"]}
    return header, [flat(outputs[a.name]) for a in outs]


@needs_gxx
def test_expected_outputs_are_the_functions_with_the_gpus_checksums(
    verifier: Any, nvrtc: None
) -> None:
    task = example("histogram")
    port = load_candidate(task, CPP / "histogram" / "candidates" / "port.cu")
    side = CppReference(verifier, task, port)
    assert side.port_is == "the task's port (port.cu)" and not side.itself
    trials = [plan.Trial({"N": 1000}, 7, (1, 2)), plan.Trial({"N": 5000}, 8, (1,))]
    assert side.prepare(trials) == ("", "")
    assert side.ref_arrays and side.ref_extra == {"copies": True}
    from kernelwright.tools.cpp_inputs import generate

    pixels = generate("int32", (1000,), 7 * 7919, "randint:0:256")
    counts = np.bincount(pixels, minlength=256).astype(np.uint32)
    header, arrays = side.expected(0, trials[0], _message(task, {"counts": counts}))
    assert header["checksums"] == {"pixels": "gpu-sum"} and header["reference"] == "C++ reference"
    assert np.frombuffer(arrays[0], np.uint32).tolist() == counts.tolist()
    with pytest.raises(ReferenceProblem, match=re.escape("the task's port (port.cu) disagrees")):
        side.expected(1, trials[1], _message(task, {"counts": np.zeros(256, np.uint32)}))
    side.close()
    assert cached_cpu_ms(task, verifier.cpp_cache)  # timed at the last trial, and kept


def test_three_speedups_and_the_timing_against_one_core(verifier: Any) -> None:
    task = example("axpy")
    kernel = load_candidate(task, CPP / "axpy" / "candidates" / "faster.cu")
    side = CppReference(verifier, task.model_copy(update={"port_source": ""}), kernel)
    assert side.itself and side.port_is.startswith("itself")
    side._cpu_ms, side._copies_ms = [20.0, 21.0, 19.0], [30.0, 31.0, 29.0]

    def ms(median: float) -> KernelTiming:
        return KernelTiming(median_ms=median, iqr_ms=0.02, min_ms=median, max_ms=median, samples=9)

    gpu = TimingResult(
        reference=ms(0.2), candidate=ms(0.1), speedup=2.0, speedup_iqr=0.01, rounds=90,
        input_sets=90, l2_flush_bytes=1 << 20,
    )  # fmt: skip
    timing, s = side.finish(gpu)
    assert (s.cpu_core, s.cpu_ms, s.cpu_samples) == (pytest.approx(200.0), 20.0, 3)
    assert (s.copies_ms, s.end_to_end_ms) == (30.0, pytest.approx(30.1))
    assert s.end_to_end == pytest.approx(20.0 / 30.1) and not s.end_to_end_measured
    assert (s.port, s.port_ms) == (2.0, 0.2)  # paired, beside the GPU-side reference
    assert timing.reference.median_ms == 20.0 and timing.speedup == pytest.approx(200.0)
    assert timing.candidate == gpu.candidate and "against the C++ function" in timing.notes[-1]


def test_the_gpu_workers_are_sent_the_input_maker_with_the_task(tmp_path: Path) -> None:
    """A task's [inputs] maker travels in its CUDA view (name and text: a worker sees none of
    the user's files), through a job's JSON, so both GPU workers make what the C++ side does."""
    maker = tmp_path / "inputs.py"
    maker.write_text("def make(np, rng, sizes):\n    return {}\n")
    task = example("axpy").model_copy(update={"inputs_python": f"{maker}:make"})
    view = task.worker_task()
    assert (view.inputs_maker, view.inputs_source) == ("make", maker.read_text())
    assert CudaTask.model_validate(json.loads(json.dumps(view.model_dump()))) == view
    plain = example("axpy").worker_task()
    assert (plain.inputs_maker, plain.inputs_source) == ("", "")


@needs_gxx
def test_the_function_itself_on_one_core_is_timed_once_and_kept(verifier: Any) -> None:
    task = example("minmax")
    first = verifier.check(task, task.reference_candidate())
    assert first.verdict == "correct", first.reason
    assert first.check.reference == "C++ reference" and first.device is None  # no GPU
    assert first.timing.speedup == 1.0 and first.timing.reference.samples >= 3
    kept = cached_cpu_ms(task, verifier.cpp_cache)
    assert kept and first.speedups.cpu_ms == pytest.approx(statistics.median(kept))
    again = verifier.check(task, task.reference_candidate())
    assert again.timing.reference == first.timing.reference  # not timed twice


@needs_gxx
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_a_drop_in_that_does_not_build_is_a_compile_error(tmp_path: Path, verifier: Any) -> None:
    task = example("axpy")
    source = textwrap.dedent(
        f"""\
        {HOST_MARK} for axpy()
        void axpy(int n, float a, const float* x, float* y) {{ undeclared(n); }}
        """
    )
    report = verifier.check(task, HostFile(path="best_host.cu", source=source))
    assert report.verdict == "compile_error"
    assert "best_host.cu" in report.reason and "undeclared" in report.reason
    assert report.compile is not None and report.compile.backend == "nvcc"


# --- a kernel timed beside itself: a few timed calls audited against the C++ function ------------


def _no_port_axpy(tmp_path: Path) -> CppTask:
    """The axpy example without its port, at a small bench size: its first kernel is timed
    beside itself."""
    copy = tmp_path / "axpy"
    shutil.copytree(CPP / "axpy", copy)
    spec = copy / "axpy.toml"
    text = "\n".join(ln for ln in spec.read_text().splitlines() if not ln.startswith("port ="))
    spec.write_text(text.replace("bench = { N = 16777216 }", "bench = { N = 4099 }"))
    task = load_task(copy)
    assert isinstance(task, CppTask) and task.port() is None and task.bench == {"N": 4099}
    return task


def _timed_calls(task: CppTask, cheat: set[int], calls: int = 6, off: float = 0.0) -> Any:
    """Rounds of one call as the candidate's worker reports them: y = a x + y on the seed's
    inputs (NumPy, not the C++ function), or, in the calls `cheat`, y left as it came in; `off`:
    every element that many tolerances off, in a sign drawn for each."""
    from types import SimpleNamespace

    from kernelwright.tools.cpp_inputs import arg_seed, generate
    from kernelwright.tools.sketch import sketch_of

    n = task.bench["N"]
    index = {a.name: i for i, a in enumerate(task.args)}
    init = {a.name: a.init for a in task.args}
    entries, cand = [], []
    for c in range(calls):
        seed, signs = 1000 + c, (31 + c, 77 + c)
        x = generate("float32", (n,), arg_seed(seed, index["x"]), init["x"])
        y = generate("float32", (n,), arg_seed(seed, index["y"]), init["y"])
        out = y if c in cheat else (np.float32(2.5) * x + y).astype(np.float32)
        if off:
            atol, rtol = judge.OUTPUTS[task.kind].tolerance(task, "float32")
            signs_of = np.random.default_rng(c).choice([-1.0, 1.0], n)
            out = (out + off * signs_of * (atol + rtol * np.abs(out))).astype(np.float32)
        entries.append([seed, *signs])
        cand.append(
            {
                "inputs": {"x": "c"},
                "inputs_after": {"x": "c"},
                "unwritten": {},
                "guards": [],
                "sketch": {"y": sketch_of(out, signs)},
            }
        )
    return SimpleNamespace(cand=cand, entries=entries)


class _Fixed:
    """Stands in for secrets.SystemRandom: these calls are the ones audited."""

    def __init__(self, calls: list[int]) -> None:
        self.calls = calls

    def sample(self, population: Any, k: int) -> list[int]:
        return self.calls


@needs_gxx
def test_a_kernel_timed_beside_itself_has_timed_calls_audited_against_the_function(
    tmp_path: Path, verifier: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no port yet, the kernel is its own reference in the rounds: every timed call agrees
    with a copy of itself, however it behaves when timed. A few calls, picked after the rounds,
    are held to the C++ function's outputs on the same inputs."""
    task = _no_port_axpy(tmp_path)
    kernel = load_candidate(task, CPP / "axpy" / "candidates" / "port.cu")
    side = CppReference(verifier, task, kernel)
    assert side.itself
    assert side.audit(task, _timed_calls(task, cheat=set())) == ("", "")
    verdict, why = side.audit(task, _timed_calls(task, cheat=set(range(6))))
    assert verdict == "wrong" and "audited against the C++ function" in why
    assert re.search(r"timed call [1-6] of 6", why) and "output 'y' differs" in why
    # a little off everywhere, in every call: within each call's own bound, caught over the
    # audited calls together (judged one at a time, four audits let two tolerances off through
    # about 98% of the time)
    from kernelwright.tools import cpp_check

    close = _timed_calls(task, cheat=set(), off=1.5)
    for i in range(4):  # each call on its own passes
        monkeypatch.setattr(cpp_check.secrets, "SystemRandom", lambda i=i: _Fixed([i]))
        assert CppReference(verifier, task, kernel).audit(task, close) == ("", ""), i
    monkeypatch.setattr(cpp_check.secrets, "SystemRandom", lambda: _Fixed([0, 1, 2, 3]))
    verdict, why = CppReference(verifier, task, kernel).audit(task, close)
    assert verdict == "wrong" and "consistently further" in why and "over 8 signed sums" in why
    monkeypatch.undo()
    ported = CppReference(verifier, example("axpy"), kernel)  # the task's port: not audited
    assert not ported.itself
    assert ported.audit(task, _timed_calls(task, cheat=set(range(6)))) == ("", "")


def test_a_functions_kept_time_is_this_machines_and_timed_one_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its time on one core is kept under its build, its sizes and this machine (host, CPU
    model): a cache shared between hosts handed one host's time to another. And the timings of
    several verifiers on one machine (a batch over several GPUs pins them all to one core)
    take turns, under a lock in the cache directory (a red-team review measured one busy
    neighbour doubling a function's time there)."""
    import itertools
    import threading
    import time as clock

    from kernelwright.tools import cpp_check

    task = load_task(EXAMPLES / "cpp" / "axpy")
    here = cpp_check._time_path(task, tmp_path)
    monkeypatch.setattr(cpp_check, "machine_identity", lambda: {"host": "other", "cpu": "x"})
    assert cpp_check._time_path(task, tmp_path) != here
    spans: list[tuple[float, float]] = []

    def timed() -> None:
        with cpp_check.one_timing_at_a_time(tmp_path):
            t0 = clock.monotonic()
            clock.sleep(0.05)
            spans.append((t0, clock.monotonic()))

    threads = [threading.Thread(target=timed) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    spans.sort()
    assert len(spans) == 3
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))  # never at once
