"""Reading a kernel's parameter list from its source."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelwright.tools.signature import Param, find_params, is_global_kernel

SRC = """
// extern "C" __global__ void scale(int bogus)  -- a comment, not the kernel
/* extern "C" __global__ void scale(double also_bogus) */
#define BLOCK 256
extern "C" __global__ void __launch_bounds__(BLOCK, 2)
scale(const float* __restrict__ x,   // input
      float *__restrict__ y,         /* output, written once */
      const double alpha,
      unsigned int n,
      long long *counts)
{
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = alpha * x[i];
}
"""


def test_qualifiers_comments_and_multiline() -> None:
    assert find_params(SRC, "scale") == [
        Param("x", "float", True),
        Param("y", "float", True),
        Param("alpha", "double", False),
        Param("n", "unsigned int", False),
        Param("counts", "long long", True),
    ]


def test_launch_bounds_before_global() -> None:
    src = 'extern "C" __launch_bounds__(128) __global__ void k(const half* a, int n) {}'
    assert find_params(src, "k") == [Param("a", "half", True), Param("n", "int", False)]


def test_empty_and_void_parameter_lists() -> None:
    assert find_params('extern "C" __global__ void k() {}', "k") == []
    assert find_params('extern "C" __global__ void k(void) {}', "k") == []


def test_entry_name_must_match_exactly() -> None:
    src = 'extern "C" __global__ void scale_fast(float* x) {}'
    assert find_params(src, "scale") is None
    assert find_params(src, "scale_fast") == [Param("x", "float", True)]


def test_not_extern_c() -> None:
    src = "__global__ void k(float* x) {}"
    assert find_params(src, "k") is None
    assert is_global_kernel(src, "k")
    assert not is_global_kernel("__device__ void k(float* x) {}", "k")


def test_commented_out_kernel_is_not_found() -> None:
    src = '// extern "C" __global__ void k(float* x) {}\n/* extern "C" __global__ void k(int n) */'
    assert find_params(src, "k") is None
    assert not is_global_kernel(src, "k")


def test_a_kernel_inside_an_extern_c_block_is_found() -> None:
    src = (
        "#include <cuda_fp16.h>\n"
        'extern "C" {\n'
        "__device__ float twice(float v) { return 2 * v; }\n"
        "__global__ void __launch_bounds__(256) k(const float* __restrict__ x, float* y, int n)"
        " { if (n) y[0] = twice(x[0]); }\n"
        "}\n"
    )
    params = find_params(src, "k")
    assert params is not None and [p.name for p in params] == ["x", "y", "n"]
    outside = 'extern "C" { __device__ int f() { return 1; } }\n__global__ void k(float* y) {}'
    assert find_params(outside, "k") is None  # C++ linkage: its name is mangled


def test_a_global_kernel_is_found_declaration_by_declaration_in_linear_time() -> None:
    """One pattern over the whole text backtracked from every `__global__`: a file of them
    took minutes in the controller (a red-team review)."""
    import time

    assert is_global_kernel("__global__ void gelu(float* x) {}", "gelu")
    bounded = 'extern "C" __global__ __launch_bounds__(256) void gelu (int n)'
    assert is_global_kernel(bounded, "gelu")
    assert not is_global_kernel("__global__ void f(); void gelu(int);", "gelu")
    assert not is_global_kernel("__global__ void f() { gelu(1); }", "gelu")
    assert not is_global_kernel("__global__ void gelu_fast(int n);", "gelu")
    t0 = time.perf_counter()
    assert not is_global_kernel("__global__ " * 100_000, "gelu")
    assert time.perf_counter() - t0 < 2.0  # about 10 ms; quadratic, it would be hours


def test_a_kernel_source_past_the_limit_is_refused_in_one_line(tmp_path: Path) -> None:
    from kernelwright.tools.errors import TaskError
    from kernelwright.tools.spec import MAX_SOURCE_CHARS, check_signature

    big = "// padding\n" * (MAX_SOURCE_CHARS // 11 + 1) + 'extern "C" __global__ void k(int n) {}'
    with pytest.raises(TaskError, match="characters: a kernel's source is at most"):
        check_signature(tmp_path / "c.cu", big, "k", (), tmp_path / "t.toml")
