"""Compile a kernel to a cubin: NVRTC through CuPy's bindings (well under a second), or nvcc.

Both report the resource usage ptxas prints (registers, shared and local memory, spills). The
sandboxed worker calls these; a compile that crashes or hangs takes only the worker down.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .results import CompileResult

_SAFE_HEADER = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_./]*$")
_DIRECTIVE = re.compile(r"^\s*#\s*(\w+)(.*)$")
_HAS_INCLUDE = re.compile(r"__has_include(?:_next)?\s*\(\s*(.*?)\s*\)")
_RAW_STRING = re.compile(r'R"([^ ()\\\t\n]{0,16})\(')


def _code_only(source: str) -> str:
    """The source as the preprocessor reads its directives: line splices joined, digraphs read
    as `#`, comments and the insides of string and character literals blanked."""
    text = re.sub(r"\\[ \t]*\r?\n", "", source).replace("%:", "#")
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(" " + "\n" * text.count("\n", i, end))  # lines stay where they were
            i = end
        elif (raw := _RAW_STRING.match(text, i)) and (i == 0 or not text[i - 1].isalnum()):
            end = text.find(")" + raw[1] + '"', raw.end())
            end = n if end < 0 else end + len(raw[1]) + 2
            out.append('""' + "\n" * text.count("\n", i, end))
            i = end
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def include_problem(source: str) -> str:
    """Why the source's #include lines are refused, or "" when they are fine.

    Only system headers by name (<cuda_fp16.h>, <mma.h>, <cuda/pipeline>) are allowed: a quoted,
    absolute or parent-relative include, or one through a macro, could read the host's files
    into the compile log. Directives are read as the preprocessor reads them (line splices,
    `%:` digraphs, comments), and quoted names are read before the literals are blanked.
    """
    raw_lines = re.sub(r"\\[ \t]*\r?\n", "", source).replace("%:", "#").splitlines()
    code_lines = _code_only(source).splitlines()
    for code, raw in zip(code_lines, raw_lines + [""] * len(code_lines), strict=False):
        m = _DIRECTIVE.match(code)
        if m and m[1] in ("include", "include_next", "import", "embed"):
            raw = re.sub(r"/\*.*?\*/", " ", raw)
            target = (_DIRECTIVE.match(raw) or m)[2]
            target = re.sub(r"/\*.*?\*/|//.*$", "", target).strip()
            if target.startswith('"'):
                return f"#include {target}: only <system> headers may be included"
            header = target[1:-1] if target.startswith("<") and target.endswith(">") else ""
            if not header:
                return (
                    f"#{m[1]} {target}: only <system> headers by name may be included (no macros)"
                )
            if ".." in header or not _SAFE_HEADER.match(header):
                return f"#include <{header}>: only CUDA and C++ headers by name may be included"
        for arg in _HAS_INCLUDE.findall(raw):
            inner = arg[1:-1] if arg.startswith("<") and arg.endswith(">") else ""
            if not inner or ".." in inner or not _SAFE_HEADER.match(inner):
                return f"__has_include({arg}): only CUDA and C++ headers by name may be named"
    return ""


@functools.cache
def cuda_include_dir() -> str | None:
    """The CUDA headers' directory, resolved once (the compile worker narrows its view to it)."""
    candidates = [os.environ.get("CUDA_PATH"), os.environ.get("CUDA_HOME"), "/usr/local/cuda"]
    nvcc = shutil.which("nvcc")
    if nvcc:
        candidates.append(str(Path(nvcc).resolve().parent.parent))
    for root in candidates:
        if root and (Path(root) / "include" / "cuda_fp16.h").is_file():
            return os.path.realpath(Path(root) / "include")
    return None


_PTXAS_FUNC = re.compile(r"Function properties for (\S+)")
_PTXAS_USED = re.compile(r"Used (\d+) registers")
_PTXAS_SMEM = re.compile(r"(\d+) bytes smem")
_PTXAS_STACK = re.compile(
    r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads"
)


def parse_ptxas_report(log: str, entry: str) -> dict[str, int]:
    """Registers, static shared memory, stack frame and spills of `entry` from `ptxas -v` output.

    ptxas prints, per function: "Compiling entry function 'k'", "Function properties for k",
    "N bytes stack frame, N bytes spill stores, N bytes spill loads", "Used N registers, ...
    N bytes smem". Pure: tested on recorded output.
    """
    report: dict[str, int] = {}
    current = None
    for line in log.splitlines():
        m = re.search(r"Compiling entry function '([^']+)'", line)
        if m:
            current = m.group(1)
            continue
        m = _PTXAS_FUNC.search(line)
        if m:
            current = m.group(1)
            continue
        if current != entry:
            continue
        if m := _PTXAS_STACK.search(line):
            report["local_mem_bytes"] = int(m.group(1))
            report["spill_stores_bytes"] = int(m.group(2))
            report["spill_loads_bytes"] = int(m.group(3))
        if m := _PTXAS_USED.search(line):
            report["registers"] = int(m.group(1))
            report["shared_mem_bytes"] = int(s.group(1)) if (s := _PTXAS_SMEM.search(line)) else 0
    return report


# The special registers through which a kernel reads time (or the SM's performance counters).
_CLOCKS = re.compile(
    r"%(clock64|clock_hi|clock|globaltimer_lo|globaltimer_hi|globaltimer|pm[0-7](?:_64)?)\b"
)


def clock_reads(ptx: str) -> tuple[str, ...]:
    """The clock registers `ptx` reads, sorted (pure). A kernel that reads a clock can tell how
    it is being run: a launch soon after the last (a timed burst), or its own shared-memory
    round trips 100 times slower (compute-sanitizer's tools watching it)."""
    return tuple(sorted({"%" + m for m in _CLOCKS.findall(ptx)}))


def _result(
    ok: bool, backend: str, arch: str, start: float, log: str, entry: str, ptx: str = ""
) -> CompileResult:
    return CompileResult.model_validate(
        {
            "ok": ok,
            "backend": backend,
            "arch": arch,
            "duration_ms": (time.perf_counter() - start) * 1e3,
            "log": log.replace("\x00", "").strip(),
            **(parse_ptxas_report(log, entry) if ok else {}),
            "reads_clock": clock_reads(ptx),
        }
    )


NVRTC_OPTIONS = ("--std=c++17", "--ptxas-options=-v", "-lineinfo")
NVCC_OPTIONS = ("--std=c++17", "--resource-usage", "-lineinfo")
# what decides a build besides the source and the compiler (builds.py keys on it); "clock-scan"
# keeps builds from before CompileResult.reads_clock from being taken as reading no clock
OPTIONS_TAG = " ".join(
    ("nvrtc:", *NVRTC_OPTIONS, "nvcc:", *NVCC_OPTIONS, "include-screen:1", "clock-scan:1")
)


def compile_nvrtc(
    source: str,
    entry: str,
    arch: str,
    filename: str = "kernel.cu",
    extra_options: tuple[str, ...] = (),
    screen: bool = True,
) -> tuple[CompileResult, bytes | None]:
    """NVRTC straight to a cubin for `arch` ("sm_90"), with ptxas's resource report.

    `screen`: refuse includes by reading the source (include_problem), for where the compiler
    can see the host's files; the compile worker, which can open only the CUDA headers, does
    not need it."""
    start = time.perf_counter()
    problem = include_problem(source) if screen else ""
    if problem:
        return _result(False, "nvrtc", arch, start, f"{filename}: error: {problem}", entry), None
    from cupy_backends.cuda.libs import nvrtc  # imported here: CuPy is heavy and optional on CPU

    options = [f"-arch={arch}", *NVRTC_OPTIONS, *extra_options]
    include = cuda_include_dir()
    if include:
        options.append(f"-I{include}")
    prog = nvrtc.createProgram(source, filename, [], [])
    try:
        try:
            nvrtc.compileProgram(prog, options)
        except nvrtc.NVRTCError:
            return _result(False, "nvrtc", arch, start, nvrtc.getProgramLog(prog), entry), None
        log = nvrtc.getProgramLog(prog)
        cubin = nvrtc.getCUBIN(prog)
        ptx = nvrtc.getPTX(prog)  # made on the way to the cubin: read for its clocks
    finally:
        nvrtc.destroyProgram(prog)
    text = ptx.decode(errors="replace") if isinstance(ptx, bytes) else str(ptx)
    return _result(True, "nvrtc", arch, start, log, entry, text), cubin


def compile_nvcc(
    source: str,
    entry: str,
    arch: str,
    filename: str = "kernel.cu",
    extra_options: tuple[str, ...] = (),
    timeout_s: float = 120.0,
    screen: bool = True,
) -> tuple[CompileResult, bytes | None]:
    """nvcc to a cubin for `arch`, the second backend (and the one CI has without a GPU).

    nvcc runs the host's preprocessor, so it sees the host's headers: which files a candidate
    includes is decided first by what the preprocessor opened (`nvcc -M`), and a source that
    opens anything but the CUDA and C++ headers is refused with its log unread."""
    start = time.perf_counter()
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return _result(False, "nvcc", arch, start, "nvcc not found on PATH", entry), None
    with tempfile.TemporaryDirectory(prefix="kw-nvcc-") as tmp:
        src, out = Path(tmp) / Path(filename).name, Path(tmp) / "kernel.cubin"
        src.write_text(source)
        # with the compile's own options: a -D from tune's knobs or a sidecar's defines decides
        # what the preprocessor opens (an #include of a host file behind `#if BLOCK == 1024`
        # passed a screen run without them, and its text came back in the log)
        opened = _opened(nvcc, arch, src, tmp, timeout_s, _preprocessing(extra_options))
        if why := _outside(opened, nvcc, src):
            return _result(False, "nvcc", arch, start, f"{filename}: error: {why}", entry), None
        cmd = [
            nvcc,
            "-cubin",
            "-keep",  # its PTX stays in `tmp`, read for its clocks
            "-MD",  # and what it opened, checked again before its log or cubin is read
            "-MF",
            str(Path(tmp) / "kernel.deps"),
            f"-arch={arch}",
            *NVCC_OPTIONS,
            *extra_options,
            "-o",
            str(out),
            str(src),
        ]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, cwd=tmp)
        except subprocess.TimeoutExpired:
            return _result(
                False, "nvcc", arch, start, f"nvcc timed out after {timeout_s:.0f} s", entry
            ), None
        deps = Path(tmp) / "kernel.deps"
        if deps.is_file() and (why := _outside(_deps(deps.read_text()), nvcc, src)):
            return _result(False, "nvcc", arch, start, f"{filename}: error: {why}", entry), None
        log = (proc.stdout + proc.stderr).replace(tmp + "/", "")
        if proc.returncode != 0 or not out.is_file():
            return _result(False, "nvcc", arch, start, log, entry), None
        ptx = "\n".join(p.read_text(errors="replace") for p in Path(tmp).glob("*.ptx"))
        return _result(True, "nvcc", arch, start, log, entry, ptx), out.read_bytes()


def _opened(
    nvcc: str, arch: str, src: Path, tmp: str, timeout_s: float, options: tuple[str, ...] = ()
) -> list[str] | None:
    """The files the preprocessor opened for `src` (its -M output) with the compile's
    `options`, or None if it failed."""
    cmd = [nvcc, "-M", f"-arch={arch}", *options, str(src)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, cwd=tmp)
    except subprocess.TimeoutExpired:
        return None
    if proc.returncode != 0:
        return None  # its messages may quote what it opened: never shown
    return _deps(proc.stdout)


_PREPROCESSING = ("-D", "-U", "--define-macro", "--undefine-macro", "-std", "--std", "-I",
                  "--include-path", "-isystem", "-include", "--pre-include")  # fmt: skip


def _preprocessing(options: tuple[str, ...]) -> tuple[str, ...]:
    """Of a compile's options, those that decide what the preprocessor opens (pure), each with
    its value where it comes as the next word; the rest (ptxas's, an unknown one) are left to
    the compile, which says what is wrong with them."""
    kept: list[str] = ["--std=c++17"]
    words = iter(options)
    for word in words:
        if word in _PREPROCESSING:
            kept += [word, next(words, "")]
        elif word.startswith(_PREPROCESSING):
            kept.append(word)
    return tuple(kept)


def _deps(text: str) -> list[str]:
    """The files a make-style dependency list names (pure, but for resolving their paths)."""
    body = text.replace("\\\n", " ")
    deps = body.split(":", 1)[1].split() if ":" in body else []
    return [os.path.realpath(d) for d in deps]


def _outside(opened: list[str] | None, nvcc: str, src: Path) -> str:
    """Why a compile that opened `opened` is refused ("" where every file is the source or a
    CUDA or C++ header); None: the preprocessor failed."""
    if opened is None:
        return "the preprocessor failed (an #include that cannot be found?)"
    outside = [f for f in opened if not _system_header(f, nvcc) and f != str(src)]
    return f"#include of {outside[0]}: only CUDA and C++ headers may be included" if outside else ""


def _system_header(path: str, nvcc: str) -> bool:
    roots = [os.path.realpath(Path(nvcc).parent.parent), "/usr/include", "/usr/lib/gcc"]
    include = cuda_include_dir()
    roots += [include] if include else []
    return any(path.startswith(r.rstrip("/") + "/") for r in roots)


def compile_kernel(
    backend: str,
    source: str,
    entry: str,
    arch: str,
    filename: str = "kernel.cu",
    screen: bool = True,
    flags: tuple[str, ...] = (),
) -> tuple[CompileResult, bytes | None]:
    """`flags`: a candidate's compile options as this backend spells them
    (spec.CompileOptions.flags), made by the controller, never read from a candidate."""
    if backend == "nvcc":
        return compile_nvcc(source, entry, arch, filename, extra_options=flags)
    return compile_nvrtc(source, entry, arch, filename, extra_options=flags, screen=screen)


def compile_reply(header: dict[str, Any], backend: str, arch: str) -> CompileResult:
    """A worker's "compiled" message, as the controller takes it (the compile worker's, or a
    KernelBench candidate's import, which the candidate's own code may have forged):
    WorkerFailure unless it is one. What the controller asked for (`backend`, `arch`) is its
    own word, not the worker's; the log is capped, and a time that is not a finite, positive
    number is none. Nothing else a worker says grows a report."""
    from .sandbox import WorkerFailure, cap

    if header.get("type") != "compiled" or not isinstance(header.get("result"), dict):
        raise WorkerFailure("crashed", "the compiler sent no result")
    result = dict(header["result"])
    result.update(backend=backend, arch=arch, log=cap(str(result.get("log", "")), 8000))
    took = result.get("duration_ms")
    if not isinstance(took, int | float) or not 0 <= took < float("inf"):
        result["duration_ms"] = 0.0
    try:
        return CompileResult.model_validate(result)
    except ValueError:
        raise WorkerFailure("crashed", "the compiler sent a malformed result") from None


def compile_in_sandbox(
    source: str,
    entry: str,
    arch: str,
    backend: str = "nvrtc",
    timeout_s: float = 60.0,
    flags: tuple[str, ...] = (),
) -> tuple[CompileResult, bytes | None]:
    """Compile in the compile worker: it can open only the CUDA headers, and a compiler that
    crashes or hangs takes only it."""
    from .protocol import Expect
    from .sandbox import Sandbox, WorkerFailure

    start = time.perf_counter()
    command = [sys.executable, "-m", "kernelwright.tools.worker", "--compile-only", backend]
    box = Sandbox("compile", command=command)
    try:
        with box:
            job = {"source": source, "entry": entry, "arch": arch, "backend": backend}
            box.send({**job, "flags": list(flags)})
            header, arrays = box.receive(timeout_s, "compiling", Expect(count=1, total=64 << 20))
            return compile_reply(header, backend, arch), bytes(arrays[0]) if arrays else None
    except WorkerFailure as failure:
        return _result(False, backend, arch, start, f"compiler: {failure.reason}", entry), None
