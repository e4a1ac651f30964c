"""The CUDA task (`name.cu` + `name.toml`) and its candidates: parsing and validation.

Every error names the file and the field, so a user can fix a task without reading our code.
"""

from __future__ import annotations

import math
import re
import tomllib
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from . import expr
from .errors import TaskError
from .files import read_text
from .knobs import check_values, knob_values
from .signature import C_TYPES, ctype_matches, find_params, is_global_kernel

DTYPES = tuple(C_TYPES)
FLOAT_DTYPES = ("float16", "float32", "float64")
Role = Literal["in", "out", "inout", "scalar"]
ROLES = ("in", "out", "inout", "scalar")
INITS = ("uniform", "normal", "positive")


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ArgSpec(Frozen):
    name: str
    dtype: str
    role: Role
    shape: tuple[str, ...] = ()
    value: str = ""  # scalars only
    init: str = "uniform"  # inputs only
    check: tuple[str, ...] = ()  # inputs only: wider distributions the op is defined on


class LaunchSpec(Frozen):
    block: tuple[str, ...]
    grid: tuple[str, ...]
    shared_mem_bytes: str = "0"

    def resolve(self, sizes: dict[str, int]) -> tuple[tuple[int, ...], tuple[int, ...], int]:
        block = tuple(expr.evaluate_int(e, sizes) for e in self.block)
        grid = tuple(expr.evaluate_int(e, sizes) for e in self.grid)
        return grid, block, expr.evaluate_int(self.shared_mem_bytes, sizes)

    def bind(self, values: dict[str, int]) -> LaunchSpec:
        """The launch with the knobs it names replaced by their values (a kernel's #ifndef
        knobs, as the build sets them): expressions over the sizes alone."""
        if not values:
            return self
        return LaunchSpec(
            block=tuple(expr.substitute(e, values) for e in self.block),
            grid=tuple(expr.substitute(e, values) for e in self.grid),
            shared_mem_bytes=expr.substitute(self.shared_mem_bytes, values),
        )


class CudaTask(Frozen):
    """A CUDA kernel task. `source` is the reference kernel."""

    kind: Literal["cuda"] = "cuda"
    name: str
    path: str  # the .toml
    source_path: str
    source: str
    entry: str
    description: str = ""
    args: tuple[ArgSpec, ...]
    bench: dict[str, int]
    checks: tuple[dict[str, int], ...]
    multiple_of: dict[str, int] = {}
    launch: LaunchSpec
    atol: float | None = None
    rtol: float | None = None
    roofline_bytes: str = ""
    roofline_flops: str = ""
    reference_python: str = ""  # "path/to/reference.py:function", absolute path
    # An input maker the workers call (a C++ task's [inputs], in its CUDA view): the function's
    # name and its file's text, which travels with the task (a worker sees none of the user's
    # files); "": every input from its `init`.
    inputs_maker: str = ""
    inputs_source: str = ""

    # What a check does differently by kind, said here once (ClassVars: not in the task's dump).
    # The pool's worker kinds for the reference and the candidate: both run kernels with CuPy.
    worker_kinds: ClassVar[tuple[str, str]] = ("cuda", "cuda")
    # A launch is timed by the harness alone: a call is quick, and steady from one to the next.
    run_timeout_factor: ClassVar[int] = 1
    # A candidate is a kernel and nothing else: no code of its own on the host, beside its timing.
    host_code: ClassVar[bool] = False

    def shape(self, arg: ArgSpec, sizes: dict[str, int]) -> tuple[int, ...]:
        return tuple(expr.evaluate_int(e, sizes) for e in arg.shape)

    def size_names(self) -> list[str]:
        return sorted(self.bench)

    def reference_candidate(self) -> CudaCandidate:
        """The task's own kernel as a candidate, at the task's launch: checked against itself
        it must read 1.00x."""
        return CudaCandidate(path=self.source_path, source=self.source, launch=None)

    def worker_task(self) -> CudaTask:
        """The task as its workers are sent it: itself."""
        return self

    @property
    def compile_entry(self) -> str:
        """The kernel a compile worker builds out of a candidate's source (where only the CUDA
        headers exist), before the candidate's worker is sent the cubin."""
        return self.entry

    @property
    def reference_label(self) -> str:
        """What a candidate is checked against, where the reference's worker does not say."""
        return "float64 reference" if self.reference_python else "reference kernel"

    def reference_files(self) -> dict[str, str]:
        """The user's files the reference's worker reads, as text (its view shows none of
        them): the Python reference, if the task names one."""
        if not self.reference_python:
            return {}
        return {"kw_reference.py": read_text(self.reference_python.rsplit(":", 1)[0])}

    def candidate_files(self, path: str, source: str) -> dict[str, str]:
        """Nothing: a candidate's worker is sent its kernel built, as a cubin."""
        return {}

    def small_sizes(self) -> dict[str, int]:
        """The largest check size: enough threads and blocks for a race to show under the
        sanitizer, small enough for its slowdown."""
        return dict(max(self.checks, key=lambda sizes: math.prod(dict(sizes).values())))

    def roofline(self) -> tuple[float | None, float | None]:
        """(bytes moved, FLOPs) at the bench size, where the task declares them."""
        rbytes = expr.evaluate(self.roofline_bytes, self.bench) if self.roofline_bytes else None
        rflops = expr.evaluate(self.roofline_flops, self.bench) if self.roofline_flops else None
        return rbytes, rflops


def launch_plan(
    task: CudaTask,
    launch: LaunchSpec,
    arrays: dict[str, Any],
    sizes: dict[str, int],
) -> tuple[tuple[int, ...], tuple[int, ...], int, tuple[Any, ...]]:
    """Grid, block, dynamic shared memory and the kernel's arguments, resolved once per size.

    Done outside the timed region: evaluating the expressions costs tens of microseconds.
    """
    import numpy as np

    args = []
    for a in task.args:
        if a.role == "scalar":
            args.append(np.dtype(a.dtype).type(expr.evaluate(a.value, sizes)))
        else:
            args.append(arrays[a.name])
    grid, block, smem = launch.resolve(sizes)
    return grid, block, smem, tuple(args)


class CompileOptions(Frozen):
    """What the compiler may be told beside the source, for a candidate: chosen by kernelwright
    (`tune`), never read from a candidate's text. Each backend spells them its own way (flags)."""

    maxrregcount: int | None = Field(default=None, ge=16, le=255)
    defines: tuple[tuple[str, int], ...] = ()  # -DNAME=VALUE: a kernel's #ifndef knobs
    fast_math: bool = False  # --use_fast_math (implies ftz, approximate division and sqrt)
    ftz: bool = False  # flush denormals to zero
    prec_div: bool = True  # False: approximate division
    prec_sqrt: bool = True  # False: approximate square root
    ptxas_level: int | None = Field(default=None, ge=0, le=3)  # ptxas -O level (default 3)
    # launch bounds given to ptxas, as __launch_bounds__(max_threads_per_block,
    # min_blocks_per_sm) would be, without editing the source (one the source declares wins)
    max_threads_per_block: int | None = Field(default=None, ge=1, le=1024)
    min_blocks_per_sm: int | None = Field(default=None, ge=1, le=32)

    @field_validator("defines")
    @classmethod
    def _names(cls, defines: tuple[tuple[str, int], ...]) -> tuple[tuple[str, int], ...]:
        for name, _ in defines:
            if not re.fullmatch(r"[A-Z][A-Z0-9_]{0,31}", name):
                raise ValueError(f"{name!r} is not a knob's name (upper case, digits, _)")
        if len({n for n, _ in defines}) != len(defines):
            raise ValueError("a knob is defined twice")
        return tuple(sorted(defines))

    def flags(self, backend: str) -> tuple[str, ...]:
        """The options as `backend` ("nvrtc" or "nvcc") takes them; () for the defaults."""
        dash = "--" if backend == "nvrtc" else "-"
        out = [f"-D{name}={value}" for name, value in self.defines]
        if self.maxrregcount is not None:
            out.append(f"{dash}maxrregcount={self.maxrregcount}")
        if self.fast_math:
            out.append("--use_fast_math")
        if self.ftz:
            out.append(f"{dash}ftz=true")
        if not self.prec_div:
            out.append(f"{dash}prec-div=false")
        if not self.prec_sqrt:
            out.append(f"{dash}prec-sqrt=false")
        if self.ptxas_level is not None:
            out.append(f"--ptxas-options=-O{self.ptxas_level}")
        # one --ptxas-options each: NVRTC builds "--maxntid=256,--minnctapersm=2" as if neither
        # were given, and ptxas ignores --minnctapersm without a thread count
        if self.max_threads_per_block is not None:
            out.append(f"--ptxas-options=--maxntid={self.max_threads_per_block}")
        if self.min_blocks_per_sm is not None:
            out.append(f"--ptxas-options=--minnctapersm={self.min_blocks_per_sm}")
        return tuple(out)

    @property
    def exact(self) -> bool:
        """Whether the numerics are the compiler's default (no approximations asked for)."""
        return not (self.fast_math or self.ftz) and self.prec_div and self.prec_sqrt


class CudaCandidate(Frozen):
    kind: ClassVar[Literal["cuda"]] = "cuda"  # a ClassVar: not in the candidate's dump
    path: str
    source: str
    launch: LaunchSpec | None = None  # None: the task's launch; it may name the kernel's knobs
    options: CompileOptions = CompileOptions()  # the compiler's, beside the source
    # the values `tune` may try for a knob (a sidecar's [tune]); a knob not named: its default's
    # neighbours by powers of two
    tune_values: tuple[tuple[str, tuple[int, ...]], ...] = ()

    def compile_flags(self, backend: str) -> tuple[str, ...]:
        """What the compiler is told beside the source, as `backend` spells it."""
        return self.options.flags(backend)

    @property
    def bound_launch(self) -> LaunchSpec | None:
        """The launch as this build runs it: the knobs it names replaced by their values (the
        source's defaults, or what the options define)."""
        if self.launch is None:
            return None
        return self.launch.bind(knob_values(self.source, self.options.defines))

    def worker_job(self, task_path: str) -> dict[str, Any]:
        """What the candidate's worker is told of it beside its cubin: its own launch (with
        its knobs' values in place), or None for the task's (`task_path` matters to a
        KernelBench candidate only)."""
        launch = self.bound_launch
        return {"launch": launch.model_dump() if launch else None}


def _fail(path: Path, field: str, problem: str) -> TaskError:
    return TaskError(path, field, problem)


_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,99}")


def task_name(path: Path, raw: dict[str, Any]) -> str:
    """A task's `name` (its file's stem by default): a run's directory and files are named by
    it, so it is a plain token, no path (a name of "../../x" put a run's files outside the
    data directory)."""
    name = str(raw.get("name", path.stem))
    if not _NAME.fullmatch(name):
        raise _fail(
            path,
            "name",
            f"{name[:60]!r} is not a plain name (letters, digits, _ . + -, at most 100)",
        )
    return name


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(read_text(path))
    except tomllib.TOMLDecodeError as exc:
        raise _fail(path, "", f"not valid TOML: {exc}") from None
    except OSError as exc:
        raise _fail(path, "", f"cannot read: {exc.strerror}") from None


def _sizes(path: Path, field: str, raw: Any, known: set[str] | None) -> dict[str, int]:
    if not isinstance(raw, dict) or not raw:
        raise _fail(path, field, "expected a table of named sizes, e.g. { N = 1024 }")
    out = {}
    for key, value in raw.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise _fail(path, f"{field}.{key}", f"expected a positive integer, got {value!r}")
        out[key] = value
    if known is not None and set(out) != known:
        raise _fail(path, field, f"must name the same sizes as sizes.bench: {sorted(known)}")
    return out


def _check_expr(path: Path, field: str, text: Any, sizes: set[str]) -> str:
    if isinstance(text, bool) or not isinstance(text, str | int):
        raise _fail(path, field, f"expected an expression, got {text!r}")
    try:
        unknown = expr.names(text) - sizes
    except expr.ExprError as exc:
        raise _fail(path, field, f"bad expression: {exc}") from None
    if unknown:
        raise _fail(path, field, f"bad expression {text!r}: unknown size {sorted(unknown)[0]!r}")
    return str(text)


def parse_launch(path: Path, raw: Any, sizes: set[str], field: str = "launch") -> LaunchSpec:
    if not isinstance(raw, dict):
        raise _fail(path, field, "missing: give block and grid, e.g. block = [256]")
    for key in raw:
        if key not in ("block", "grid", "shared_mem_bytes"):
            raise _fail(path, f"{field}.{key}", "unknown field (block, grid, shared_mem_bytes)")
    dims = {}
    for key in ("block", "grid"):
        value = raw.get(key)
        if not isinstance(value, list) or not 1 <= len(value) <= 3:
            raise _fail(path, f"{field}.{key}", "expected a list of 1 to 3 expressions")
        dims[key] = tuple(_check_expr(path, f"{field}.{key}", v, sizes) for v in value)
    shared = _check_expr(path, f"{field}.shared_mem_bytes", raw.get("shared_mem_bytes", 0), sizes)
    return LaunchSpec(block=dims["block"], grid=dims["grid"], shared_mem_bytes=shared)


def _args(path: Path, raw: Any, sizes: set[str]) -> tuple[ArgSpec, ...]:
    if not isinstance(raw, list) or not raw:
        raise _fail(path, "args", "missing: one [[args]] table per kernel parameter")
    args, seen = [], set()
    for i, item in enumerate(raw):
        where = f"args[{i}]"
        if not isinstance(item, dict):
            raise _fail(path, where, "expected a table")
        name = item.get("name")
        if not isinstance(name, str) or not name.isidentifier():
            raise _fail(path, f"{where}.name", f"expected an identifier, got {name!r}")
        where = f"args[{i}] ({name})"
        if name in seen:
            raise _fail(path, where, "duplicate argument name")
        seen.add(name)
        unknown = set(item) - {"name", "dtype", "role", "shape", "value", "init", "check"}
        if unknown:
            raise _fail(path, f"{where}.{sorted(unknown)[0]}", "unknown field")
        dtype, role = item.get("dtype"), item.get("role")
        if dtype not in DTYPES:
            raise _fail(
                path, f"{where}.dtype", f"unknown dtype {dtype!r} (one of {', '.join(DTYPES)})"
            )
        if role not in ROLES:
            raise _fail(path, f"{where}.role", f"unknown role {role!r} (one of {', '.join(ROLES)})")
        if role == "scalar":
            if "value" not in item:
                raise _fail(path, f"{where}.value", "a scalar needs a value expression")
            if "shape" in item:
                raise _fail(path, f"{where}.shape", "a scalar has no shape")
            value = _check_expr(path, f"{where}.value", item["value"], sizes)
            args.append(ArgSpec(name=name, dtype=dtype, role=role, value=value))
            continue
        shape = item.get("shape")
        if not isinstance(shape, list) or not shape:
            raise _fail(path, f"{where}.shape", 'expected a list of expressions, e.g. ["N"]')
        shape_t = tuple(_check_expr(path, f"{where}.shape", s, sizes) for s in shape)
        init = _init(path, f"{where}.init", item.get("init", "uniform"), dtype)
        check = item.get("check", [])
        if not isinstance(check, list) or (check and role not in ("in", "inout")):
            raise _fail(
                path, f"{where}.check", "expected a list of distributions, for an input only"
            )
        checks = tuple(_init(path, f"{where}.check", c, dtype) for c in check)
        args.append(
            ArgSpec(name=name, dtype=dtype, role=role, shape=shape_t, init=init, check=checks)
        )
    if not any(a.role in ("out", "inout") for a in args):
        raise _fail(path, "args", "no argument has role out or inout: nothing could be checked")
    return tuple(args)


def _init(path: Path, where: str, init: Any, dtype: str) -> str:
    """A distribution, validated for the argument's dtype."""
    if init not in INITS and not _is_randint(init) and not _is_range(init) and not _is_normal(init):
        raise _fail(
            path,
            where,
            f"unknown distribution {init!r} (uniform, normal, positive, uniform:LO:HI, "
            "normal:SIGMA, randint:LO:HI)",
        )
    if _is_randint(init) and dtype in FLOAT_DTYPES:
        raise _fail(path, where, "randint is for integer dtypes")
    if (_is_range(init) or _is_normal(init)) and dtype not in FLOAT_DTYPES:
        raise _fail(path, where, f"{init.split(':')[0]}:... is for float dtypes")
    return str(init)


def _is_normal(init: Any) -> bool:
    """normal:SIGMA, SIGMA > 0."""
    if not isinstance(init, str) or not init.startswith("normal:") or init.count(":") != 1:
        return False
    try:
        return float(init.split(":")[1]) > 0
    except ValueError:
        return False


def _is_randint(init: Any) -> bool:
    if not isinstance(init, str) or not init.startswith("randint:"):
        return False
    parts = init.split(":")
    return (
        len(parts) == 3
        and all(p.lstrip("-").isdigit() for p in parts[1:])
        and int(parts[1]) < int(parts[2])
    )


def _is_range(init: Any) -> bool:
    """uniform:LO:HI, floats, LO < HI."""
    if not isinstance(init, str) or not init.startswith("uniform:") or init.count(":") != 2:
        return False
    try:
        lo, hi = (float(v) for v in init.split(":")[1:])
    except ValueError:
        return False
    return lo < hi


MAX_SOURCE_CHARS = 256 * 1024  # a kernel's source: the examples' are a few KB


def check_signature(
    source_path: Path, source: str, entry: str, args: tuple[ArgSpec, ...], spec_path: Path
) -> None:
    """Refuse a kernel whose parameters do not match the declared arguments, or whose source
    is past MAX_SOURCE_CHARS (read with regular expressions here, in the controller: a file of
    repeated `__global__` had taken minutes, a red-team review)."""
    if len(source) > MAX_SOURCE_CHARS:
        raise _fail(
            source_path,
            "",
            f"is {len(source):,} characters: a kernel's source is at most {MAX_SOURCE_CHARS:,}",
        )
    params = find_params(source, entry)
    if params is None:
        if is_global_kernel(source, entry):
            raise _fail(
                source_path, "entry", f'kernel {entry!r} must be declared extern "C" __global__'
            )
        raise _fail(source_path, "entry", f"no __global__ function named {entry!r}")
    if len(params) != len(args):
        raise _fail(
            spec_path,
            "args",
            f"{len(args)} arguments declared, but {entry}() in "
            f"{source_path.name} takes {len(params)}",
        )
    for i, (param, arg) in enumerate(zip(params, args, strict=True)):
        where = f"args[{i}] ({arg.name})"
        if param.pointer != (arg.role != "scalar"):
            kind = "a pointer" if param.pointer else "a value"
            raise _fail(
                spec_path,
                where,
                f"role {arg.role} does not match {entry}()'s parameter "
                f"{param.name!r}, which is {kind}",
            )
        if param.ctype and not ctype_matches(param.ctype, arg.dtype):
            raise _fail(
                spec_path,
                f"{where}.dtype",
                f"{arg.dtype} does not match {param.ctype!r} "
                f"of parameter {param.name!r} in {source_path.name}",
            )


def load_cuda_task(spec_path: Path) -> CudaTask:
    spec_path = spec_path.resolve()
    raw = _read_toml(spec_path)
    allowed = {
        "entry",
        "description",
        "name",
        "source",
        "sizes",
        "args",
        "launch",
        "tolerance",
        "roofline",
        "reference",
    }
    for key in raw:
        if key not in allowed:
            raise _fail(spec_path, key, "unknown field")
    entry = raw.get("entry")
    if not isinstance(entry, str) or not entry.isidentifier():
        raise _fail(spec_path, "entry", "missing: name the kernel's __global__ function")
    source_path = spec_path.parent / str(raw.get("source", spec_path.stem + ".cu"))
    try:
        source = read_text(source_path)
    except OSError:
        raise _fail(spec_path, "source", f"kernel file {source_path.name} not found") from None
    bench, checks, multiple_of = parse_sizes(spec_path, raw.get("sizes"))
    known = set(bench)
    args = _args(spec_path, raw.get("args"), known)
    launch = parse_launch(spec_path, raw.get("launch"), known)
    tol = parse_tolerance(spec_path, raw.get("tolerance", {}))
    rbytes, rflops = parse_roofline(spec_path, raw.get("roofline", {}), known)
    reference = _reference(spec_path, raw.get("reference", {}))
    check_signature(source_path, source, entry, args, spec_path)
    task = CudaTask(
        name=task_name(spec_path, raw),
        path=str(spec_path),
        source_path=str(source_path),
        source=source,
        entry=entry,
        description=str(raw.get("description", "")),
        args=args,
        bench=bench,
        checks=checks,
        multiple_of=multiple_of,
        launch=launch,
        atol=tol.get("atol"),
        rtol=tol.get("rtol"),
        roofline_bytes=rbytes,
        roofline_flops=rflops,
        reference_python=reference,
    )
    for i, sizes in enumerate((bench, *checks)):  # every shape and launch must evaluate
        for arg in args:
            if arg.role == "scalar":
                continue
            try:
                shape = task.shape(arg, sizes)
            except expr.ExprError as exc:
                raise _fail(
                    spec_path, f"args ({arg.name}).shape", f"at size set {i}: {exc}"
                ) from None
            if min(shape) < 1:
                raise _fail(spec_path, f"args ({arg.name}).shape", f"empty at size set {i}")
        try:
            launch.resolve(sizes)
        except expr.ExprError as exc:
            raise _fail(spec_path, "launch", f"at size set {i}: {exc}") from None
    return task


def parse_sizes(
    spec_path: Path, raw: Any
) -> tuple[dict[str, int], tuple[dict[str, int], ...], dict[str, int]]:
    """A task's [sizes]: bench, checks (at least one) and multiple_of (which every set keeps)."""
    if not isinstance(raw, dict):
        raise _fail(spec_path, "sizes", "missing: give sizes.bench and sizes.checks")
    bench = _sizes(spec_path, "sizes.bench", raw.get("bench"), None)
    known = set(bench)
    checks_raw = raw.get("checks")
    if not isinstance(checks_raw, list) or not checks_raw:
        raise _fail(
            spec_path, "sizes.checks", "give at least one extra size to check, e.g. [{ N = 1000 }]"
        )
    checks = tuple(
        _sizes(spec_path, f"sizes.checks[{i}]", c, known) for i, c in enumerate(checks_raw)
    )
    multiple_of: dict[str, int] = {}
    if "multiple_of" in raw:
        mo = raw["multiple_of"]
        multiple_of = _sizes(spec_path, "sizes.multiple_of", mo, None) if mo else {}
        for key, m in multiple_of.items():
            if key not in known:
                raise _fail(spec_path, f"sizes.multiple_of.{key}", "not a size in sizes.bench")
            for i, s in enumerate((bench, *checks)):
                if s[key] % m:
                    raise _fail(
                        spec_path,
                        "sizes",
                        f"size set {i} has {key}={s[key]}, not a multiple of {m}",
                    )
    return bench, checks, multiple_of


def parse_tolerance(spec_path: Path, raw: Any) -> dict[str, float]:
    """A task's [tolerance]: atol and rtol, non-negative numbers, both optional."""
    if not isinstance(raw, dict):
        raise _fail(spec_path, "tolerance", "expected a table: atol, rtol")
    for key, value in raw.items():
        if (
            key not in ("atol", "rtol")
            or isinstance(value, bool)
            or not isinstance(value, int | float)
            or value < 0
        ):
            raise _fail(
                spec_path, f"tolerance.{key}", "expected atol or rtol, a non-negative number"
            )
    return dict(raw)


def parse_roofline(spec_path: Path, raw: Any, known: set[str]) -> tuple[str, str]:
    """A task's [roofline]: bytes and flops, expressions over the sizes ("" where not given)."""
    if not isinstance(raw, dict):
        raise _fail(spec_path, "roofline", "expected a table: bytes, flops")
    for key in raw:
        if key not in ("bytes", "flops"):
            raise _fail(spec_path, f"roofline.{key}", "unknown field (bytes, flops)")
    rbytes = _check_expr(spec_path, "roofline.bytes", raw["bytes"], known) if "bytes" in raw else ""
    rflops = _check_expr(spec_path, "roofline.flops", raw["flops"], known) if "flops" in raw else ""
    return rbytes, rflops


def _reference(spec_path: Path, raw: Any) -> str:
    if not raw:
        return ""
    value = raw.get("python") if isinstance(raw, dict) else None
    if not isinstance(value, str) or value.count(":") != 1:
        raise _fail(spec_path, "reference.python", 'expected "file.py:function"')
    file, func = value.split(":")
    ref_path = (spec_path.parent / file).resolve()
    if not ref_path.is_file():
        raise _fail(spec_path, "reference.python", f"{file} not found")
    try:
        ref_source = read_text(ref_path)
    except OSError as exc:
        raise _fail(ref_path, "", f"cannot read: {exc.strerror}") from None
    if f"def {func}(" not in ref_source:
        raise _fail(spec_path, "reference.python", f"{file} defines no function {func!r}")
    return f"{ref_path}:{func}"


def load_cuda_candidate(task: CudaTask, path: Path) -> CudaCandidate:
    """A candidate .cu for a task, with an optional sidecar .toml holding [launch], [compile]
    (the options `kernelwright tune` found: see CompileOptions) and [tune] (the values tune
    may try per knob: { BLOCK = [64, 128, 256] })."""
    path = path.resolve()
    try:
        source = read_text(path)
    except OSError as exc:
        raise _fail(path, "", f"cannot read candidate: {exc.strerror}") from None
    check_signature(path, source, task.entry, task.args, Path(task.path))
    launch, options, values = None, CompileOptions(), {}
    sidecar = path.with_suffix(".toml")
    if sidecar.is_file():
        raw = _read_toml(sidecar)
        for key in raw:
            if key not in ("launch", "compile", "tune"):
                why = "unknown field (a candidate's .toml holds [launch], [compile] and [tune])"
                raise _fail(sidecar, key, why)
        if "compile" in raw:
            options = parse_compile(sidecar, raw["compile"])
        if "launch" in raw:
            launch = candidate_launch(sidecar, raw["launch"], task, source, options.defines)
        if "tune" in raw:
            checked = check_values(source, raw["tune"]) if isinstance(raw["tune"], dict) else ""
            if isinstance(checked, str):
                raise _fail(sidecar, "tune", checked or "expected a table, e.g. BLOCK = [64, 128]")
            values = checked
    return CudaCandidate(
        path=str(path),
        source=source,
        launch=launch,
        options=options,
        tune_values=tuple(sorted(values.items())),
    )


class HasSizes(Protocol):
    """A task whose kernels launch over its sizes: a CUDA task's, or a cpp task's."""

    @property
    def bench(self) -> dict[str, int]: ...

    @property
    def checks(self) -> tuple[dict[str, int], ...]: ...


def candidate_launch(
    path: Path,
    raw: Any,
    task: HasSizes,
    source: str,
    defines: tuple[tuple[str, int], ...] = (),
) -> LaunchSpec:
    """A candidate's launch: expressions over the task's sizes and the kernel's knobs (its
    `#ifndef NAME` macros), checked to evaluate at every size with the knobs' values."""
    values = knob_values(source, defines)
    launch = parse_launch(path, raw, set(task.bench) | set(values))
    bound = launch.bind(values)
    for sizes in (task.bench, *task.checks):
        try:
            bound.resolve(sizes)
        except expr.ExprError as exc:
            raise _fail(path, "launch", str(exc)) from None
    return launch


def parse_compile(path: Path, raw: Any) -> CompileOptions:
    """A sidecar's [compile] table: { maxrregcount = 64, defines = { TILE = 8 }, ... }."""
    if not isinstance(raw, dict):
        raise _fail(path, "compile", "expected a table, e.g. [compile] maxrregcount = 64")
    fields = dict(raw)
    defines = fields.pop("defines", {})
    if not isinstance(defines, dict) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in defines.values()
    ):
        raise _fail(path, "compile.defines", "expected a table of integers, e.g. { TILE = 8 }")
    try:
        return CompileOptions.model_validate({**fields, "defines": tuple(defines.items())})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "compile"
        why = str(first["msg"]).removeprefix("Value error, ")
        raise _fail(path, f"compile.{where}" if where != "compile" else where, why) from None
