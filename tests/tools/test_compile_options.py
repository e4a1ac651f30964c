"""A candidate's compile options (tune's knobs): validated, spelled per backend, passed to the
compile worker, keyed in the build cache and in replays, and never a default's change (no GPU:
NVRTC and nvcc build cubins on the CPU)."""

from __future__ import annotations

import re

import pytest
from pydantic import ValidationError

from kernelwright.tools.backend import candidate_key
from kernelwright.tools.builds import BuildCache, compiler_identity
from kernelwright.tools.compile import compile_in_sandbox
from kernelwright.tools.kernelbench import KernelBenchCandidate
from kernelwright.tools.spec import CompileOptions, CudaCandidate, CudaTask
from kernelwright.tools.task import load_task
from tests.conftest import EXAMPLES

# two loads and a division: the ptxas level and the approximations change its code
SOURCE = (
    'extern "C" __global__ void k(float* x, const float* y, int n) {\n'
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) x[i] = sqrtf(x[i]) / (y[i] + 1.0f);\n"
    "}\n"
)


def test_options_are_spelled_as_each_backend_takes_them() -> None:
    o = CompileOptions(maxrregcount=64, defines=(("TILE", 4), ("BLOCK", 8)), ptxas_level=1)
    assert o.flags("nvrtc") == (
        "-DBLOCK=8",
        "-DTILE=4",
        "--maxrregcount=64",
        "--ptxas-options=-O1",
    )
    assert o.flags("nvcc") == ("-DBLOCK=8", "-DTILE=4", "-maxrregcount=64", "--ptxas-options=-O1")
    approx = CompileOptions(ftz=True, prec_div=False, prec_sqrt=False)
    assert approx.flags("nvcc") == ("-ftz=true", "-prec-div=false", "-prec-sqrt=false")
    assert CompileOptions().flags("nvrtc") == () and CompileOptions().exact
    assert not approx.exact and not CompileOptions(fast_math=True).exact


@pytest.mark.parametrize(
    "bad",
    [
        {"maxrregcount": 8},
        {"maxrregcount": 300},
        {"ptxas_level": 4},
        {"defines": (("x; rm -rf /", 1),)},
        {"defines": (("-O0 --x", 1),)},
        {"defines": (("TILE", 4), ("TILE", 8))},
        {"extra": "--anything"},
    ],
)
def test_nothing_but_the_knobs_reaches_a_compiler(bad: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        CompileOptions.model_validate(bad)


def test_a_kernelbench_candidate_has_no_options() -> None:
    assert KernelBenchCandidate(path="c.py", source="").compile_flags("nvrtc") == ()


def test_the_cache_and_the_replays_key_on_options_and_not_on_their_absence() -> None:
    task = load_task(EXAMPLES / "gelu")
    assert isinstance(task, CudaTask)
    plain = CudaCandidate(path="c.cu", source=task.source)
    tuned = plain.model_copy(update={"options": CompileOptions(maxrregcount=32)})
    assert candidate_key(task, plain) != candidate_key(task, tuned)
    assert candidate_key(task, plain) == candidate_key(
        task, plain.model_copy(update={"options": CompileOptions()})
    )
    if compiler_identity("nvrtc") is not None:
        cache = BuildCache(None)
        try:
            assert cache.key(SOURCE, "k", "sm_90", "nvrtc") == cache.key(
                SOURCE, "k", "sm_90", "nvrtc", ()
            )
            assert cache.key(SOURCE, "k", "sm_90", "nvrtc") != cache.key(
                SOURCE, "k", "sm_90", "nvrtc", tuned.compile_flags("nvrtc")
            )
        finally:
            cache.close()


@pytest.mark.parametrize("backend", ["nvrtc", "nvcc"])
def test_the_compile_worker_builds_with_the_options(backend: str) -> None:
    if compiler_identity(backend) is None:
        pytest.skip(f"{backend} is not installed")
    plain, cubin = compile_in_sandbox(SOURCE, "k", "sm_90", backend)
    low, low_cubin = compile_in_sandbox(
        SOURCE, "k", "sm_90", backend, flags=CompileOptions(ptxas_level=0).flags(backend)
    )
    assert plain.ok and low.ok and cubin and low_cubin
    assert low_cubin != cubin  # the worker was told, and ptxas listened
    bad, _ = compile_in_sandbox(SOURCE, "k", "sm_90", backend, flags=("--no-such-flag",))
    assert not bad.ok and re.search(r"no-such-flag|nknown|nrecognized", bad.log)
