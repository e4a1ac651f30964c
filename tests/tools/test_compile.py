"""Compiling kernels with NVRTC and nvcc (no GPU needed), include vetting, ptxas reports."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kernelwright.tools.compile import (
    compile_nvcc,
    compile_nvrtc,
    include_problem,
    parse_ptxas_report,
)
from tests.conftest import EXAMPLES

TASKS = ["gelu", "rowsum", "softmax", "matmul", "stencil", "transpose"]
SOURCES = sorted(
    [EXAMPLES / t / f"{t}.cu" for t in TASKS]
    + [p for t in TASKS for p in (EXAMPLES / t / "candidates").glob("*.cu")]
)
TRIVIAL = 'extern "C" __global__ void k(float* x) { x[0] = 1.0f; }'
BROKEN = 'extern "C" __global__ void k(float* x)\n{\n    x[0] = undefined_thing;\n}\n'


needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")


def _ids(p: Path) -> str:
    return str(p.relative_to(EXAMPLES))


@pytest.mark.parametrize("path", SOURCES, ids=_ids)
def test_nvrtc_compiles_examples(nvrtc: None, path: Path) -> None:
    entry = path.parent.name if path.parent.name != "candidates" else path.parent.parent.name
    result, cubin = compile_nvrtc(path.read_text(), entry, "sm_90", path.name)
    assert result.ok, result.log
    assert cubin and cubin[:4] == b"\x7fELF"
    assert result.registers and result.registers > 0
    assert result.spill_stores_bytes == 0 and result.spill_loads_bytes == 0


@needs_nvcc
@pytest.mark.parametrize("path", SOURCES, ids=_ids)
def test_nvcc_compiles_examples(path: Path) -> None:
    entry = path.parent.name if path.parent.name != "candidates" else path.parent.parent.name
    result, cubin = compile_nvcc(path.read_text(), entry, "sm_90", path.name)
    assert result.ok, result.log
    assert cubin and cubin[:4] == b"\x7fELF"
    assert result.registers and result.registers > 0
    assert result.spill_stores_bytes == 0 and result.spill_loads_bytes == 0


def test_nvrtc_syntax_error(nvrtc: None) -> None:
    result, cubin = compile_nvrtc(BROKEN, "k", "sm_90")
    assert not result.ok and cubin is None
    assert "kernel.cu(3)" in result.first_error and "undefined_thing" in result.first_error
    assert result.registers is None


@needs_nvcc
def test_nvcc_syntax_error() -> None:
    result, cubin = compile_nvcc(BROKEN, "k", "sm_90")
    assert not result.ok and cubin is None
    assert "kernel.cu(3)" in result.first_error and "undefined_thing" in result.first_error
    assert "/tmp" not in result.log  # the scratch directory is not shown


def test_system_headers_by_name_are_allowed(nvrtc: None) -> None:
    src = (
        "#include <cuda_fp16.h>\n"
        'extern "C" __global__ void h(__half* x) { x[0] = __float2half(1.0f); }'
    )
    assert include_problem(src) == ""
    result, _ = compile_nvrtc(src, "h", "sm_90")
    assert result.ok, result.log


@pytest.mark.parametrize(
    "line",
    [
        '#include "x.h"',
        "#include </etc/passwd>",
        "#include <../x>",
        '  #  include "kernel_secrets.cuh"',
        '#define F "/etc/passwd"\n#include F',  # through a macro
        '#include \\\n"/etc/passwd"',  # a line splice
        '%:include "/etc/passwd"',  # a digraph
        '#/* comment */include "/etc/passwd"',
        'const char* s = "/*";\n#include "/etc/passwd"\n// */',  # a comment opener in a string
    ],
)
def test_dangerous_includes_are_refused_before_compiling(
    line: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = line + "\n" + TRIVIAL
    assert include_problem(src)
    result, cubin = compile_nvrtc(src, "k", "sm_90")
    assert not result.ok and cubin is None
    assert "#include" in result.first_error and "may be included" in result.first_error
    assert result.duration_ms < 100


NVCC = pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")


@NVCC
@pytest.mark.parametrize(
    "line",
    [
        '#include "/etc/os-release"',
        '#include \\\n"/etc/os-release"',
        '%:include "/etc/os-release"',
        "#include <../../../../../../etc/os-release>",
        '#include \f"/etc/os-release"',  # a form feed the source filter never read
        'int n = 1\'024;\n#include "/etc/os-release"',  # a digit separator
    ],
)
def test_nvcc_refuses_what_its_preprocessor_opened_without_showing_it(line: str) -> None:
    src = line + "\n" + TRIVIAL
    result, cubin = compile_nvcc(src, "k", "sm_90")
    assert not result.ok and cubin is None
    assert "os-release" in result.first_error and "may be included" in result.first_error
    assert "NAME=" not in result.log and "ID=" not in result.log  # the file's text never shows


@NVCC
def test_nvcc_compiles_with_cuda_headers() -> None:
    src = "#include <cuda_fp16.h>\n" + TRIVIAL
    result, cubin = compile_nvcc(src, "k", "sm_90")
    assert result.ok and cubin, result.log


# Recorded from nvcc 13 (--resource-usage) with a __noinline__ device function; big's spill
# numbers are edited to be non-zero.
PTXAS_LOG = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'big' for 'sm_90'
ptxas info    : Function properties for big
    256 bytes stack frame, 40 bytes spill stores, 48 bytes spill loads
ptxas info    : Used 64 registers, used 1 barriers, 256 bytes cumulative stack size, 1024 bytes smem
ptxas info    : Compile time = 25.676 ms
ptxas info    : Function properties for _Z3devPfi
    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
ptxas info    : Compiling entry function 'small' for 'sm_90'
ptxas info    : Function properties for small
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, used 0 barriers
ptxas info    : Compile time = 0.895 ms
"""


def test_parse_ptxas_report_picks_the_entry() -> None:
    assert parse_ptxas_report(PTXAS_LOG, "big") == {
        "local_mem_bytes": 256,
        "spill_stores_bytes": 40,
        "spill_loads_bytes": 48,
        "registers": 64,
        "shared_mem_bytes": 1024,
    }
    assert parse_ptxas_report(PTXAS_LOG, "small") == {
        "local_mem_bytes": 0,
        "spill_stores_bytes": 0,
        "spill_loads_bytes": 0,
        "registers": 8,
        "shared_mem_bytes": 0,
    }
    assert parse_ptxas_report(PTXAS_LOG, "missing") == {}


@pytest.mark.parametrize(
    "src",
    [
        '// #include "x.h"\n/* #include "y.h" */',
        'const char* s = "#include \\"x.h\\"";',
        "#include <mma.h>  // tensor cores",
        "int big = 1'000'000;\n#include <cuda_fp16.h>",
    ],
)
def test_includes_in_comments_and_strings_are_not_directives(src: str) -> None:
    assert include_problem(src) == ""


def test_has_include_of_a_host_file_is_refused() -> None:
    assert "__has_include" in include_problem('#if __has_include("/etc/shadow")\n#endif')


@pytest.mark.parametrize(
    "header",
    [{"type": "outputs"}, {"type": "compiled"}, {"type": "compiled", "result": "ok"}],
)
def test_a_compiled_reply_without_a_result_is_a_crashed_worker(header: dict) -> None:
    """The controller's one reading of a "compiled" message (compile worker or a KernelBench
    import): anything else is the worker's failure, never a traceback."""
    from kernelwright.tools.compile import compile_reply
    from kernelwright.tools.sandbox import WorkerFailure

    with pytest.raises(WorkerFailure, match="sent no result"):
        compile_reply(header, "nvrtc", "sm_90")


def test_a_compiled_replys_log_is_capped() -> None:
    from kernelwright.tools.compile import compile_reply

    result = {"ok": False, "backend": "nvrtc", "arch": "sm_90", "duration_ms": 1.0}
    got = compile_reply(
        {"type": "compiled", "result": {**result, "log": "x" * 100_000}}, "nvrtc", "sm_90"
    )
    assert not got.ok and len(got.log) <= 8000


def test_a_forged_import_reply_grows_no_report() -> None:
    """A KernelBench candidate's code runs before its worker says it imported, so it can send
    that message itself: what the controller asked for is its own word, numbers must be sane,
    and a malformed result is the worker's failure, not the controller's traceback."""
    from kernelwright.tools.compile import compile_reply
    from kernelwright.tools.sandbox import WorkerFailure

    forged = {"ok": True, "backend": "nvcc", "arch": "x" * 3_000_000, "duration_ms": float("nan")}
    got = compile_reply({"type": "compiled", "result": forged}, "python", "")
    assert got.ok and (got.backend, got.arch, got.duration_ms) == ("python", "", 0.0)
    assert len(got.model_dump_json()) < 1000
    with pytest.raises(WorkerFailure, match="malformed"):
        compile_reply({"type": "compiled", "result": {"ok": [1]}}, "python", "")


CLOCKED = r"""
extern "C" __global__ void k(float* y) {
    long long t = clock64();
    unsigned long long g;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g));
    y[0] = (float)(t + g);
}
"""


def test_clock_reads_are_found_in_the_ptx() -> None:
    """Pure: the special registers through which code reads time or the SM's counters."""
    from kernelwright.tools.compile import clock_reads

    ptx = "mov.u64 %rd1, %clock64;\nmov.u32 %r1, %globaltimer_lo;\nmov.u32 %r2, %pm3;\n"
    assert clock_reads(ptx) == ("%clock64", "%globaltimer_lo", "%pm3")
    assert clock_reads("mov.u32 %r3, %clock_hi;") == ("%clock_hi",)  # %clock64's upper half
    assert clock_reads("mov.u32 %r1, %tid.x; ld.global.f32 %f1, [%rd_clockwise];") == ()


def test_nvrtc_says_which_clocks_a_kernel_reads(nvrtc: None) -> None:
    """Every example kernel reads none; one that reads clock64() and %globaltimer says so
    (compute-sanitizer will not vouch for it: sanitize.reads_clock)."""
    result, _ = compile_nvrtc(CLOCKED, "k", "sm_90")
    assert result.ok and result.reads_clock == ("%clock64", "%globaltimer")
    for path in SOURCES:
        entry = path.parent.name if path.parent.name != "candidates" else path.parent.parent.name
        assert compile_nvrtc(path.read_text(), entry, "sm_90", path.name)[0].reads_clock == ()


@needs_nvcc
def test_nvcc_says_which_clocks_a_kernel_reads() -> None:
    result, _ = compile_nvcc(CLOCKED, "k", "sm_90")
    assert result.ok and result.reads_clock == ("%clock64", "%globaltimer")
    assert compile_nvcc('extern "C" __global__ void k(float* y) { y[0] = 1.0f; }', "k",
                        "sm_90")[0].reads_clock == ()  # fmt: skip


KNOB_GATED = """#ifndef BLOCK
#define BLOCK 256
#endif
#if BLOCK == 1024
#include "{secret}"
#endif
extern "C" __global__ void k(float* x) {{ x[threadIdx.x % BLOCK] = 1.0f; }}
"""


@needs_nvcc
def test_nvcc_screens_includes_with_the_compiles_own_defines(tmp_path: Path) -> None:
    """The screen ran `nvcc -M` without the compile's options: an #include of a host file
    behind `#if BLOCK == 1024` passed it at the default BLOCK, and with tune's -DBLOCK=1024
    the file's text came back in the compile log (a review found it, twenty-eighth session)."""
    secret = tmp_path / "secret.txt"
    secret.write_text("hunter2 top secret line\n")
    src = KNOB_GATED.format(secret=secret)
    assert compile_nvcc(src, "k", "sm_90")[0].ok  # not reached at the default
    result, cubin = compile_nvcc(src, "k", "sm_90", extra_options=("-DBLOCK=1024",))
    assert "hunter2" not in result.log and cubin is None
    assert not result.ok and "only CUDA and C++ headers" in result.log


@needs_nvcc
def test_what_the_nvcc_compile_itself_opened_is_checked_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Behind the screen, the compile's own dependency list (-MD -MF) is checked before its log
    or cubin is read: an option the screen did not pass on still cannot bring a host file in
    (here the screen is made to miss the -D; the file's text would make the compile fail and
    quote it)."""
    from kernelwright.tools import compile as compile_module

    monkeypatch.setattr(compile_module, "_preprocessing", lambda options: ("--std=c++17",))
    secret = tmp_path / "secret.txt"
    secret.write_text("hunter2 top secret line\n")
    result, cubin = compile_nvcc(
        KNOB_GATED.format(secret=secret), "k", "sm_90", extra_options=("-DBLOCK=1024",)
    )
    assert "hunter2" not in result.log and cubin is None
    assert not result.ok and "only CUDA and C++ headers" in result.log


def test_the_screen_takes_the_options_that_decide_what_is_opened() -> None:
    from kernelwright.tools.compile import _preprocessing

    given = ("-DBLOCK=1024", "-maxrregcount=32", "-include", "/x", "--no-such-flag", "-U", "Y")
    assert _preprocessing(given) == ("--std=c++17", "-DBLOCK=1024", "-include", "/x", "-U", "Y")
