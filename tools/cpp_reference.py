"""A cpp task's expected outputs, on the CPU: the user's C++ function built with g++ -O3 and
called, through a generated `extern "C"` wrapper, in a confined worker (cpp_worker.py).

- `wrapper_source(task)`: the wrapper. It takes one pointer per argument and the element
  counts; builds each std::vector and std::array from its buffer (copied back for out and
  inout), passes pointers as they are and scalars by value, calls the function, times the call
  and stores a returned value in its one-element output.
- `build_reference(task, cache_dir)`: the shared library, built in a confined worker with a
  timeout, cached by content (the source, the wrapper, the standard, the flags, the compiler).
- `reference_outputs(task, trials, cache_dir)`: the outputs for each trial's sizes, seed and
  input distributions, computed in a confined worker from the verifier's own inputs
  (cpp_inputs.py) and cached on disk per (library, inputs, sizes): an O(N^3) reference can
  take seconds. The first call of a build checks the outputs' contract: an output without a
  declared start (fill:V) that the function reads before writing, or leaves partly unwritten,
  comes out differently for two poisons, and is refused with the field to fix.

A reference that does not build, throws, crashes or runs past its time is a one-line error.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import secrets
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from .cpp import CppParam, CppTask
from .errors import KernelwrightError, TaskError, ToolMissingError
from .fills import is_fill
from .protocol import Expect
from .sandbox import Sandbox, WorkerFailure

WRAPPER_VERSION = 3  # bump when the wrapper or the worker's calling convention changes
_WORKER = [sys.executable, "-m", "kernelwright.tools.cpp_worker"]


class CppReferenceError(KernelwrightError):
    """The C++ reference threw, crashed or ran past its time: one line, naming the task."""


class TrialLike(Protocol):
    @property
    def sizes(self) -> dict[str, int]: ...
    @property
    def seed(self) -> int: ...
    @property
    def inits(self) -> dict[str, str]: ...


@dataclass(frozen=True)
class ReferenceTrial:
    """What one set of expected outputs is computed at (plan.Trial has the same fields)."""

    sizes: dict[str, int]
    seed: int
    inits: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ReferenceResult:
    outputs: dict[str, np.ndarray]  # each out and inout argument's, by name
    seconds: float  # the function's own time on the CPU (wrapper copies excluded)
    cached: bool
    times: tuple[float, ...] = ()  # the seconds of repeated calls, where they were asked for


@dataclass(frozen=True)
class Library:
    """A built library and what it is: the user's function (g++), or a drop-in host file over
    a kernel (nvcc), both behind the same wrapper."""

    path: Path
    key: str
    what: str  # how errors name it: "the C++ reference", "best_host.cu"


# How many calls time a function: at least `min`, more until `seconds`, at most `max`.
REPEATS = {"min": 3, "max": 15, "seconds": 2.0}


# --- the wrapper ---------------------------------------------------------------------------

_HEADERS: tuple[str, ...] = ("algorithm", "array", "chrono", "complex", "cstddef", "cstdint")
_HEADERS += ("cstdio", "exception", "vector")


def _elem(p: CppParam) -> str:
    """The element's type as the wrapper spells it (std::complex qualified)."""
    return f"std::complex<{p.component}>" if p.complex else p.elem


def _buffer(ctype: str) -> str:
    """The C++ type of one element of the argument's buffer (bool travels as a byte)."""
    return "unsigned char" if ctype == "bool" else ctype


def wrapper_source(task: CppTask) -> str:
    """The `extern "C"` entry points the reference's worker calls, one pointer and one element
    count per argument in the task's order; each returns 0, or an error kw_error() describes:

    - `int kw_call(void* const* p, const long long* n, double* seconds)`: one whole call;
    - the same in three steps, so that a timed call is only the function's own
      (cpp_worker's served calls): `kw_prepare(p, n)` builds the arguments (the vectors'
      copies), `kw_invoke(seconds)` calls and times the function, `kw_finish()` copies the
      outputs back."""
    roles = {a.name: a.role for a in task.args}
    state, before, call, after = [], [], [], []
    for i, p in enumerate(task.params):
        e, b = _elem(p), _buffer(_elem(p))
        count = f"kw_n[{i}] / 2" if p.complex else f"kw_n[{i}]"
        src = f"static_cast<{b}*>(kw_p[{i}])"
        back = roles[p.name] in ("out", "inout") and p.writable
        if p.kind == "vector":
            state.append(f"static std::vector<{e}> kw_a{i};")
            before.append(f"kw_a{i}.assign({src}, {src} + {count});")
            if back:
                after.append(
                    f"if (kw_a{i}.size() != static_cast<std::size_t>({count})) "
                    f'return kw_fail("resized {p.name}: an output\'s size must not change");'
                )
                after.append(f"std::copy(kw_a{i}.begin(), kw_a{i}.end(), {src});")
            call.append(f"kw_a{i}")
        elif p.kind == "array":
            state.append(f"static std::array<{e}, {p.extent}> kw_a{i};")
            before.append(f"std::copy({src}, {src} + {p.extent}, kw_a{i}.begin());")
            if back:
                after.append(f"std::copy(kw_a{i}.begin(), kw_a{i}.end(), {src});")
            call.append(f"kw_a{i}")
        elif p.kind == "pointer":
            call.append(f"static_cast<{'const ' if p.const else ''}{e}*>(kw_p[{i}])")
        else:
            value = f"*{src}" if b == e else f"static_cast<{e}>(*{src})"
            state.append(f"static {e} kw_a{i};")
            before.append(f"kw_a{i} = {value};")
            if back:
                after.append(f"*{src} = kw_a{i};" if b == e else f"*{src} = kw_a{i} ? 1 : 0;")
            call.append(f"kw_a{i}")
    target = f"{task.scope}{task.function}({', '.join(call)})"
    if task.returns:
        r = len(task.params)
        state.append(f"static {task.returns} kw_result;")
        invoke = f"kw_result = {target};"
        b = _buffer(task.returns)
        after.append(
            f"*static_cast<{b}*>(kw_p[{r}]) = "
            + ("kw_result;" if b == task.returns else "kw_result ? 1 : 0;")
        )
    else:
        invoke = f"{target};"
    n_args = len(task.params) + (1 if task.returns else 0)

    def body(lines: list[str]) -> str:
        return "\n".join("        " + line for line in lines)

    timed = [
        "auto kw_t0 = std::chrono::steady_clock::now();",
        invoke,
        "*kw_seconds = std::chrono::duration<double>("
        "std::chrono::steady_clock::now() - kw_t0).count();",
    ]
    saved = "void* const* kw_p = kw_saved_p; const long long* kw_n = kw_saved_n; (void)kw_n;"
    copy_in = [
        f"for (int kw_i = 0; kw_i < {n_args}; ++kw_i) {{",
        "    kw_saved_p[kw_i] = kw_p[kw_i];",
        "    kw_saved_n[kw_i] = kw_n[kw_i];",
        "}",
    ]

    def entry(signature: str, setup: list[str], lines: list[str]) -> str:
        """An entry point: `setup`, then `lines` with any exception turned into kw_threw's."""
        return "\n".join(
            [
                f'extern "C" {signature} {{',
                *("    " + line for line in setup),
                "    try {",
                body(lines),
                "        return 0;",
                "    } catch (const std::exception& kw_e) {",
                "        return kw_threw(kw_e.what());",
                "    } catch (...) {",
                "        return kw_threw(nullptr);",
                "    }",
                "}",
            ]
        )

    state_text = "\n".join(state)
    return f"""
// kernelwright: the reference's entry points, generated for {task.function}() (v{WRAPPER_VERSION})
static char kw_message[1024];
static int kw_fail(const char* what) {{
    std::snprintf(kw_message, sizeof kw_message, "%s", what);
    return 2;
}}
static int kw_threw(const char* what) {{
    if (what == nullptr) {{
        std::snprintf(kw_message, sizeof kw_message, "threw an exception (not a std::exception)");
    }} else {{
        std::snprintf(kw_message, sizeof kw_message, "threw an exception: %s", what);
    }}
    return 1;
}}
static void* kw_saved_p[{max(1, n_args)}];
static long long kw_saved_n[{max(1, n_args)}];
{state_text}
extern "C" const char* kw_error(void) {{ return kw_message; }}
{entry("int kw_prepare(void* const* kw_p, const long long* kw_n)", copy_in, before)}
{entry("int kw_invoke(double* kw_seconds)", [saved, "(void)kw_p;"], timed)}
{entry("int kw_finish(void)", [saved, "(void)kw_p;"], after)}
extern "C" int kw_call(void* const* kw_p, const long long* kw_n, double* kw_seconds) {{
    int kw_code = kw_prepare(kw_p, kw_n);
    if (kw_code == 0) kw_code = kw_invoke(kw_seconds);
    if (kw_code == 0) kw_code = kw_finish();
    return kw_code;
}}
"""


def _headers() -> str:
    return "".join(f"#include <{h}>\n" for h in _HEADERS)


def translation_unit(task: CppTask, host: str | None = None) -> str:
    """What g++ builds: the wrapper's headers, the user's file as it is (its errors read
    `name.cpp:LINE`), then the wrapper. For nvcc, a drop-in host file alone, after the same
    headers: its wrapper is a translation unit of its own (wrapper_unit), so nothing the
    drop-in defines (a macro that rewrites the wrapper's clock or its copies) reaches it."""
    headers = _headers()
    if host is not None:
        return f'{headers}#line 1 "best_host.cu"\n{host}\n'
    name = Path(task.source_path).name
    return f'{headers}#line 1 "{name}"\n{task.source}\n#line 1 "kw_wrapper.cpp"\n' + wrapper_source(
        task
    )


def wrapper_unit(task: CppTask) -> str:
    """A drop-in host file's wrapper, compiled on its own and linked with it: the headers, the
    function declared as the user's file declares it (in its namespaces), the wrapper."""
    headers = _headers()
    spaces = [n for n in task.scope.split("::") if n]
    opened = "".join(f"namespace {n} {{ " for n in spaces)
    closed = " }" * len(spaces)
    params = ", ".join(p.decl for p in task.params)
    declared = f"{opened}{task.returns or 'void'} {task.function}({params});{closed}\n"
    return f'{headers}#line 1 "kw_wrapper.cpp"\n{declared}' + wrapper_source(task)


# --- building ------------------------------------------------------------------------------


def _compiler(name: str = "g++") -> str:
    found = shutil.which(name)
    if found is None:
        what = "a cpp task's reference" if name == "g++" else "a drop-in host file"
        raise ToolMissingError(f"{name} not found on PATH: {what} is built with it")
    real = os.path.realpath(found)
    st = os.stat(real)
    return f"{real}:{st.st_size}:{st.st_mtime_ns}"


def build_key(task: CppTask, host: str | None = None, arch: str = "") -> str:
    """The library's content address: what decides the build, nothing else."""
    blob = json.dumps(
        {
            "unit": translation_unit(task, host),
            "wrapper_unit": wrapper_unit(task) if host is not None else "",
            "std": task.std,
            "flags": list(task.flags) if host is None else ["nvcc", arch],
            "compiler": _compiler("g++" if host is None else "nvcc"),
            "wrapper": WRAPPER_VERSION,
        },
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode()).hexdigest()


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".kw-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _first_error(log: str) -> str:
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    for ln in lines:
        if "error" in ln.lower():
            return ln
    return lines[0] if lines else "no output"


def build_reference(task: CppTask, cache_dir: Path, timeout_s: float = 120.0) -> Path:
    """The task's shared library under `cache_dir`/so/, built once per content in a confined
    worker (g++ -O3 -std=STD FLAGS -shared -fPIC). TaskError (the .cpp) if it does not build."""
    built, log = build_library(task, cache_dir, timeout_s)
    if built is None:
        raise TaskError(task.source_path, "", f"g++ -std={task.std} failed: {_first_error(log)}")
    return built.path


def build_library(
    task: CppTask,
    cache_dir: Path,
    timeout_s: float = 120.0,
    host: str | None = None,
    arch: str = "sm_90",
) -> tuple[Library | None, str]:
    """The function's library (g++), or with `host` a drop-in host file's (nvcc -O3
    -Xcompiler -fPIC -shared -arch=ARCH), built once per content in a confined worker and kept
    under `cache_dir`/so/; None and the compiler's log where it does not build."""
    key = build_key(task, host, arch)
    path = Path(cache_dir) / "so" / f"{key}.so"
    what = "the C++ reference" if host is None else "best_host.cu"
    if path.is_file():
        return Library(path, key, what), ""
    job = {
        "source": translation_unit(task, host),
        "wrapper": wrapper_unit(task) if host is not None else "",
        "user_source": task.source if host is None else host,
        "filename": Path(task.source_path).name if host is None else "best_host.cu",
        "std": task.std if host is None else "c++17",  # a host file: the signature's types
        "flags": list(task.flags) if host is None else [],
        "timeout_s": timeout_s,
        "compiler": "g++" if host is None else "nvcc",
        "arch": arch,
    }
    compiler = job["compiler"]
    try:
        with Sandbox("cpp-build", command=[*_WORKER, "build"]) as box:
            box.send(job)
            header, arrays = box.receive(timeout_s + 10, "building", Expect(count=1, total=1 << 30))
    except WorkerFailure as failure:
        if host is None:
            raise TaskError(task.source_path, "", f"g++ failed: {failure.reason}") from None
        return None, f"{compiler} failed: {failure.reason}"
    if header.get("type") != "built" or not header.get("ok") or not arrays:
        return None, str(header.get("log", "")) or "no library came back"
    _write_atomic(path, bytes(arrays[0]))
    return Library(path, key, what), ""


# --- running -------------------------------------------------------------------------------


def _describe(sizes: Mapping[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(sizes.items()))


def _outputs(task: CppTask) -> list[Any]:
    return [a for a in task.args if a.role in ("out", "inout")]


def _maker_text(task: CppTask) -> str:
    files = task.reference_files()
    return files.get("kw_inputs.py", "")


def output_key(task: CppTask, library_key: str, trial: TrialLike) -> str:
    """The cache address of one trial's outputs: the library, the arguments as declared
    (shapes, inits, scalars), the input maker, the sizes, the seed and the trial's inits."""
    blob = json.dumps(
        {
            "library": library_key,
            "args": [a.model_dump() for a in task.args],
            "maker": hashlib.sha256(_maker_text(task).encode()).hexdigest(),
            "inputs": task.inputs_python.rsplit(":", 1)[-1] if task.inputs_python else "",
            "sizes": dict(sorted(trial.sizes.items())),
            "seed": int(trial.seed),
            "inits": dict(sorted((trial.inits or {}).items())),
            "wrapper": WRAPPER_VERSION,
        },
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode()).hexdigest()


def _load_cached(path: Path, task: CppTask, sizes: dict[str, int]) -> ReferenceResult | None:
    try:
        with np.load(path, allow_pickle=False) as data:
            outputs = {a.name: np.array(data[a.name]) for a in _outputs(task)}
            seconds = float(data["kw_seconds"])
    except (OSError, KeyError, ValueError):
        return None
    for a in _outputs(task):
        if outputs[a.name].shape != task.shape(a, sizes) or outputs[a.name].dtype != a.dtype:
            return None
    return ReferenceResult(outputs=outputs, seconds=seconds, cached=True)


def _store(path: Path, result: ReferenceResult) -> None:
    import io

    buf = io.BytesIO()
    arrays: dict[str, Any] = {"kw_seconds": np.float64(result.seconds), **result.outputs}
    np.savez(buf, **arrays)
    _write_atomic(path, buf.getvalue())


def _contract_key(task: CppTask, library_key: str) -> str:
    """Where a build's output contract is recorded as checked: per library and arguments."""
    blob = json.dumps(
        {
            "library": library_key,
            "args": [a.model_dump() for a in task.args],
            "maker": _maker_text(task),
        },
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode()).hexdigest()


def _contract_error(task: CppTask, header: dict[str, Any], sizes: dict[str, int]) -> None:
    index = {a.name: i for i, a in enumerate(task.args)}
    fn = f"{task.function}()"
    unwritten = header.get("unwritten") or {}
    read = header.get("read") or []
    for name, count in unwritten.items() if isinstance(unwritten, dict) else ():
        if name in index:
            raise TaskError(
                task.path,
                f"args[{index[name]}] ({name}).init",
                f"{fn} leaves {count} element{'s' * (count != 1)} of {name} unwritten at "
                f"{_describe(sizes)}: "
                'declare the value they keep, e.g. init = "fill:0", or write them all',
            )
    for name in read if isinstance(read, list) else ():
        if name in index:
            field = "returns.init" if task.result and name == task.result.name else None
            raise TaskError(
                task.path,
                field or f"args[{index[name]}] ({name}).init",
                f"{fn} reads {name} before writing it: declare the value it expects there, "
                'e.g. init = "fill:0"',
            )


def reference_outputs(
    task: CppTask,
    trials: Sequence[TrialLike],
    cache_dir: Path,
    timeout_s: float = 600.0,
    build_timeout_s: float = 120.0,
    *,
    time_trial: int | None = None,
    pin: set[int] | None = None,
) -> list[ReferenceResult]:
    """Each trial's expected outputs, from the cache or computed in one confined worker
    (`timeout_s` for each call). `time_trial`: a trial whose call is then repeated for its time
    (REPEATS; its result's `times`), on the one CPU in `pin` where given. TaskError for a task
    at fault (it does not build, an output's contract does not hold), CppReferenceError where
    the function throws, crashes or hangs."""
    cache_dir = Path(cache_dir)
    built, log = build_library(task, cache_dir, build_timeout_s)
    if built is None:
        raise TaskError(task.source_path, "", f"g++ -std={task.std} failed: {_first_error(log)}")
    lib_key = built.key
    results: list[ReferenceResult | None] = []
    todo: list[int] = []
    paths = []
    for i, trial in enumerate(trials):
        path = cache_dir / "outputs" / lib_key[:16] / f"{output_key(task, lib_key, trial)}.npz"
        paths.append(path)
        cached = _load_cached(path, task, dict(trial.sizes)) if path.is_file() else None
        results.append(cached)
        if cached is None or i == time_trial:
            todo.append(i)
    if todo:
        contract = cache_dir / "contract" / f"{_contract_key(task, lib_key)}.ok"
        check = (
            None
            if contract.is_file()
            else min(todo, key=lambda i: math.prod(dict(trials[i].sizes).values()))
        )
        fresh = run_library(
            task,
            built,
            [trials[i] for i in todo],
            timeout_s,
            contract=todo.index(check) if check is not None else None,
            timed=todo.index(time_trial) if time_trial is not None else None,
            pin=pin,
        )
        for i, result in zip(todo, fresh, strict=True):
            _store(paths[i], result)
            results[i] = result
        if check is not None:
            _write_atomic(contract, b"ok\n")
    return [r for r in results if r is not None]


@dataclass(frozen=True)
class TimedCall:
    """One call served after the trials (cpp_worker's "make", "stage" and "call"): where and
    on what it ran, the seconds the library's wrapper reported, the seconds the controller saw
    from the call's command to its reply, from the staging's command to its reply, and from
    the call's reply to its outputs' sketch (the outputs copied back and sketched), and each
    output's sketch with the call's signs."""

    sizes: dict[str, int]
    seed: int
    signs: tuple[int, int]
    reported_s: float
    wall_s: float
    sketch: dict[str, list[float]]
    timed: bool = True
    stage_s: float = 0.0
    finish_s: float = 0.0


@dataclass
class CallPlan:
    """The calls a worker serves after its trials, drawn as they are asked for: timed calls at
    `sizes` on fresh seeds (at least `least`, then more until `seconds` have passed, at most
    `most`), then the `then` calls, untimed; or only `given` (sizes, seed, signs) calls.
    `made`: what they gave."""

    sizes: dict[str, int] = field(default_factory=dict)
    least: int = 0
    most: int = 0
    seconds: float = 0.0
    then: list[tuple[dict[str, int], int, tuple[int, int]]] = field(default_factory=list)
    given: list[tuple[dict[str, int], int, tuple[int, int]]] = field(default_factory=list)
    made: list[TimedCall] = field(default_factory=list)

    def draws(self) -> Iterator[tuple[dict[str, int], int, tuple[int, int], bool]]:
        if self.given:
            for sizes, seed, signs in self.given:
                yield sizes, seed, signs, False
            return
        start = time.perf_counter()
        n = 0
        while n < self.least or (n < self.most and time.perf_counter() - start < self.seconds):
            n += 1
            signs = (secrets.randbits(63), secrets.randbits(63))
            yield dict(self.sizes), secrets.randbits(31), signs, True
        for sizes, seed, signs in self.then:
            yield sizes, seed, signs, False


def _serve_calls(box: Sandbox, task: CppTask, plan: CallPlan, timeout_s: float, what: str) -> None:
    """The plan's calls, one command each, each timed by this process's clock from the command
    to the worker's "called" (its sketches follow, not timed)."""
    names = [a.name for a in _outputs(task)]
    box.spin(0.005)
    try:
        for sizes, seed, signs, timed in plan.draws():
            where = f"{task.function}() at {_describe(sizes)}"
            box.send({"cmd": "make", "sizes": sizes, "seed": seed})
            made, _ = box.receive(timeout_s, f"making inputs for {where}", Expect(sizes=()))
            if made.get("type") != "made":
                raise WorkerFailure("crashed", f"{what}'s worker made no inputs")
            t0 = time.perf_counter()
            box.send({"cmd": "stage"})
            staged, _ = box.receive(timeout_s, f"staging {where}", Expect(sizes=()))
            stage = time.perf_counter() - t0
            if staged.get("type") != "staged":
                raise WorkerFailure("crashed", f"{what}'s worker staged no call")
            t0 = time.perf_counter()
            box.send({"cmd": "call", "signs": list(signs)})
            called, _ = box.receive(timeout_s, f"calling {where}", Expect(sizes=()))
            wall = time.perf_counter() - t0
            t0 = time.perf_counter()
            sketched, _ = box.receive(timeout_s, f"sketching {where}", Expect(sizes=()))
            finish = time.perf_counter() - t0
            sketch = sketched.get("sketch")
            if (
                called.get("type") != "called"
                or not isinstance(sketch, dict)
                or not all(isinstance(sketch.get(n), list) for n in names)
            ):  # what a worker sends is the candidate's to write: its shape is checked here
                raise WorkerFailure("crashed", f"{what}'s worker sent no valid call")
            plan.made.append(
                TimedCall(
                    sizes=sizes,
                    seed=seed,
                    signs=signs,
                    reported_s=_seconds(called.get("seconds")),
                    wall_s=wall,
                    sketch={n: list(sketch[n])[:16] for n in names},
                    timed=timed,
                    stage_s=stage,
                    finish_s=finish,
                )
            )
        box.send({"cmd": "end"})
    finally:
        box.spin(0.0)


def run_library(
    task: CppTask,
    library: Library,
    trials: Sequence[TrialLike],
    timeout_s: float,
    *,
    contract: int | None = None,
    timed: int | None = None,
    pin: set[int] | None = None,
    calls: CallPlan | None = None,
) -> list[ReferenceResult]:
    """Each trial's outputs from a built library, in one confined worker (`contract`: the trial
    whose outputs' contract is checked; `timed`: the trial whose call is repeated for its
    time; `calls`: calls served after the trials, one command each, into `calls.made`).
    CppReferenceError where it throws, crashes or hangs."""
    job = {
        "task": task.model_dump(),
        "trials": [
            {
                "sizes": dict(t.sizes),
                "seed": int(t.seed),
                "inits": dict(t.inits or {}),
                "contract": i == contract,
                "repeats": REPEATS if i == timed else None,
            }
            for i, t in enumerate(trials)
        ],
        "files": task.reference_files(),
        "calls": calls is not None,
    }
    fn = f"{task.function}()"
    out: list[ReferenceResult] = []
    sizes: dict[str, int] = {}
    try:
        with Sandbox("cpp-reference", command=[*_WORKER, "run"]) as box:
            box.send(job, [library.path.read_bytes()])
            box.receive(60, f"starting {library.what}'s worker", Expect(sizes=()))
            if pin:
                box.pin({min(pin)})  # the calls on one core (ParEval's convention)
            for i, t in enumerate(trials):
                sizes = dict(t.sizes)
                outs = _outputs(task)
                want = tuple(
                    math.prod(task.shape(a, sizes)) * np.dtype(a.dtype).itemsize for a in outs
                )
                n_calls = 1 + (REPEATS["min"] if i == timed else 0)  # and the timed repeats
                header, arrays = box.receive(
                    timeout_s * n_calls, f"running {fn} at {_describe(sizes)}", Expect(sizes=want)
                )
                if header.get("unwritten") or header.get("read"):
                    _contract_error(task, header, sizes)
                outputs = {
                    a.name: np.frombuffer(arrays[k], dtype=a.dtype)
                    .reshape(task.shape(a, sizes))
                    .copy()
                    for k, a in enumerate(outs)
                }
                raw = header.get("times")
                times = tuple(_seconds(v) for v in (raw if isinstance(raw, list) else [])[:1000])
                out.append(ReferenceResult(outputs, _seconds(header.get("seconds")), False, times))
            if calls is not None:
                _serve_calls(box, task, calls, timeout_s, library.what)
    except WorkerFailure as failure:
        what = "ran past its time" if failure.verdict == "timeout" else "failed"
        reason = " ".join(failure.reason.split())
        raise CppReferenceError(f"{task.name}: {library.what} {what}: {reason}") from None
    return out


def _seconds(value: Any) -> float:
    """A time a worker reported, bounded: a number of seconds, else 0."""
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    return float(value) if ok and 0 <= value < float("inf") else 0.0


def fill_outputs(task: CppTask) -> dict[str, float | int]:
    """The declared starting value of each output that has one (init = "fill:V"): what the
    verifier fills them with instead of its poison."""
    from .fills import fill_value

    return {
        a.name: v
        for a in task.args
        if a.role == "out" and is_fill(a.init) and (v := fill_value(a.init)) is not None
    }
