"""The cpp task (`name.cpp` + `name.toml`): a user's sequential C/C++ function, unchanged, whose
CUDA version is wanted. Parsing, validation and the function's signature.

The .toml says which function, with which C++ standard and flags, and how each of its
parameters becomes a kernel argument (dtype, shape over the sizes, role, init); a returned
value is one more output. Its parameters are read from the .cpp by a small parser (comments
and literals blanked, the function found at file or namespace scope) and checked against the
declared arguments: every error names the file and the field, as for CUDA tasks (spec.py,
whose helpers this reuses).
"""

from __future__ import annotations

import ast
import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from . import expr
from .compile import _code_only, include_problem
from .errors import TaskError
from .files import read_text
from .fills import fill_value, is_fill
from .signature import C_TYPES
from .spec import (
    DTYPES,
    ArgSpec,
    CudaCandidate,
    CudaTask,
    Frozen,
    LaunchSpec,
    _check_expr,
    _init,
    _read_toml,
    check_signature,
    parse_launch,
    parse_roofline,
    parse_sizes,
    parse_tolerance,
    task_name,
)

if TYPE_CHECKING:
    from .cpp_candidates import CppFunction

CppKind = Literal["vector", "array", "pointer", "scalar"]
COMPARES = ("close", "exact")
STANDARDS = re.compile(r"^(c|gnu)\+\+(98|03|11|14|17|20|23|26|2a|2b|2c)$")
# g++ flags a task may add: optimisation, code generation, warnings and macros. Nothing that
# names a file or passes options to the assembler or linker (-Wl,...: no commas).
_FLAG = re.compile(
    r"^-(O[0-3sgz]?|Ofast|f[a-z0-9][a-z0-9+=_.-]*|m[a-z0-9][a-z0-9+=_.-]*|W[a-z0-9][a-z0-9=_-]*|w"
    r"|g[0-3]?|pthread|D[A-Za-z_]\w*(=[\w.+-]*)?|U[A-Za-z_]\w*)$"
)
_BAD_FLAGS = (
    "-fplugin",
    "-fprofile",
    "-fauto-profile",
    "-fdump",
    "-fcallgraph-info",
    "-fstack-usage",
)

# C++ spellings of each dtype: the CUDA tasks' C spellings (signature.C_TYPES), the std::
# forms and a few more. `bool` travels as uint8 (0 or 1).
_EXTRA = {
    "uint8": ("bool",),
    "int32": ("signed",),
    "int64": ("long int", "signed long", "signed long long", "ptrdiff_t", "ssize_t", "intptr_t"),
    "uint64": ("unsigned long", "unsigned long int", "uintptr_t"),
}
CPP_TYPES: dict[str, str] = {}
for _dtype, _spellings in C_TYPES.items():
    if _dtype == "float16":
        continue  # no C++ host type
    for _s in (*_spellings, *_EXTRA.get(_dtype, ())):
        CPP_TYPES[_s] = _dtype
        if _s.endswith("_t"):
            CPP_TYPES["std::" + _s] = _dtype
_QUALIFIERS = {"const", "volatile", "__restrict__", "__restrict", "restrict"}
_TYPE_WORDS = {"int", "long", "short", "char", "unsigned", "signed", "float", "double", "bool"}
_SPECIFIERS = {"static", "inline", "extern", "constexpr", "__inline", "__inline__", "noexcept"}
_TOKEN = re.compile(r"::|[A-Za-z_]\w*|\d\w*|&&|[<>,*&\[\]()=]|\S")


class CppParam(Frozen):
    """One parameter of the function, as declared."""

    name: str
    decl: str  # as written, whitespace collapsed: "std::vector<double> const& A"
    kind: CppKind
    elem: str  # the element's (or scalar's) type: "double", "size_t", "std::complex<double>"
    const: bool = False  # what it refers to is const (a by-value scalar counts as const)
    ref: bool = False  # passed by reference (vector, array, scalar)
    extent: int = 0  # std::array<T, N>: N

    @property
    def complex(self) -> bool:
        return _complex_part(self.elem) is not None

    @property
    def component(self) -> str:
        """The scalar type of one element's value: `double` for std::complex<double>."""
        return _complex_part(self.elem) or self.elem

    @property
    def writable(self) -> bool:
        """Whether what the function writes through it reaches the caller."""
        if self.kind == "pointer":
            return not self.const
        return self.ref and not self.const

    @property
    def is_array(self) -> bool:
        """Whether it maps to an array argument (a non-const scalar reference is one element)."""
        return self.kind != "scalar" or self.writable


class CppSignature(Frozen):
    function: str
    scope: str = ""  # the namespaces it is defined in, as a call qualifies it: "a::b::"
    returns: str = ""  # the returned type, "" for void
    params: tuple[CppParam, ...]


class CppTask(Frozen):
    """A sequential C/C++ function whose CUDA version is wanted. `source` is the user's file,
    unchanged; `args` are the function's parameters in order, then its returned value (an
    output of one element) where it returns one."""

    kind: Literal["cpp"] = "cpp"
    name: str
    path: str  # the .toml
    source_path: str
    source: str
    function: str
    scope: str = ""
    returns: str = ""
    params: tuple[CppParam, ...]
    description: str = ""
    std: str = "c++17"
    flags: tuple[str, ...] = ()
    args: tuple[ArgSpec, ...]
    bench: dict[str, int]
    checks: tuple[dict[str, int], ...]
    multiple_of: dict[str, int] = Field(default_factory=dict)
    launch: LaunchSpec
    compare: Literal["close", "exact"] = "close"
    atol: float | None = None
    rtol: float | None = None
    roofline_bytes: str = ""
    roofline_flops: str = ""
    inputs_python: str = ""  # "path/to/inputs.py:function", absolute path
    port_path: str = ""  # a CUDA port of the function (`port`), the GPU-side reference
    port_source: str = ""

    # What a check does differently by kind, said here once (ClassVars: not in the task's dump).
    # Its candidates are CUDA kernels, run by the same CuPy workers as a CUDA task's: the
    # reference's worker runs the GPU-side reference (a port), the C++ function, on the CPU,
    # gives the expected outputs (cpp_check.py).
    worker_kinds: ClassVar[tuple[str, str]] = ("cuda", "cuda")
    run_timeout_factor: ClassVar[int] = 1
    host_code: ClassVar[bool] = False  # a candidate is a kernel: no host code of its own

    def shape(self, arg: ArgSpec, sizes: dict[str, int]) -> tuple[int, ...]:
        return tuple(expr.evaluate_int(e, sizes) for e in arg.shape)

    def size_names(self) -> list[str]:
        return sorted(self.bench)

    @property
    def entry(self) -> str:
        """The name a CUDA version's kernel takes: the function's."""
        return self.function

    @property
    def kernel_args(self) -> tuple[ArgSpec, ...]:
        """What a kernel for the task takes: the function's arguments (arrays as pointers,
        scalars by value, the returned value as a pointer to one element), then, as int64
        scalars, each size no scalar parameter carries (a vector's length is not passed to a
        kernel): `histogram(pixels, counts)`'s kernel is `histogram(pixels, counts, N)`."""
        carried = {plain_name(a.value) for a in self.args if a.role == "scalar"}
        names = {a.name for a in self.args}
        extra = tuple(
            ArgSpec(
                name=size if size not in names else f"size_{size}",
                dtype="int64",
                role="scalar",
                value=size,
            )
            for size in self.bench
            if size not in carried
        )
        return (*self.args, *extra)

    @property
    def result(self) -> ArgSpec | None:
        """The argument that holds the returned value, if the function returns one."""
        return self.args[-1] if self.returns else None

    @property
    def reference_label(self) -> str:
        return "C++ reference"

    @property
    def compile_entry(self) -> str:
        """The kernel a compile worker builds out of a candidate's source: the function's name."""
        return self.function

    def candidate_files(self, path: str, source: str) -> dict[str, str]:
        """Nothing: a candidate's worker is sent its kernel built, as a cubin."""
        return {}

    def reference_candidate(self) -> CppFunction:
        """The function itself, on the CPU: checked against itself it reads 1.00x, and its time
        on one core is what the speedups are against (a run's original)."""
        from .cpp_candidates import CppFunction

        return CppFunction(path=self.source_path, source=self.source)

    def port(self) -> CudaCandidate | None:
        """The task's own CUDA port (`port` in its .toml, at the task's launch), or None."""
        if not self.port_source:
            return None
        return CudaCandidate(path=self.port_path, source=self.port_source, launch=None)

    def worker_task(self, port: CudaCandidate | None = None) -> CudaTask:
        """The task as the GPU's workers see it: a CUDA task whose kernel is `port` (the
        GPU-side reference, at its own launch or the task's; the task's port by default), with
        the function's arguments, outputs that start as a declared value (fill:V) kept so."""
        port = port or self.port()
        return CudaTask(
            name=self.name,
            path=self.path,
            source_path=port.path if port else self.source_path,
            source=port.source if port else "",
            entry=self.function,
            description=self.description,
            args=self.kernel_args,
            bench=self.bench,
            checks=self.checks,
            multiple_of=self.multiple_of,
            launch=port.launch if port and port.launch else self.launch,
            atol=self.atol,
            rtol=self.rtol,
            roofline_bytes=self.roofline_bytes,
            roofline_flops=self.roofline_flops,
            inputs_maker=self.inputs_python.rsplit(":", 1)[1] if self.inputs_python else "",
            inputs_source=self.reference_files().get("kw_inputs.py", ""),
        )

    def reference_files(self) -> dict[str, str]:
        """The user's files the reference's worker reads, as text (its view shows none of
        them): the input maker, if the task names one."""
        if not self.inputs_python:
            return {}
        return {"kw_inputs.py": read_text(self.inputs_python.rsplit(":", 1)[0])}

    def small_sizes(self) -> dict[str, int]:
        return dict(min(self.checks, key=lambda sizes: math.prod(dict(sizes).values())))

    def roofline(self) -> tuple[float | None, float | None]:
        rbytes = expr.evaluate(self.roofline_bytes, self.bench) if self.roofline_bytes else None
        rflops = expr.evaluate(self.roofline_flops, self.bench) if self.roofline_flops else None
        return rbytes, rflops


# --- the signature -------------------------------------------------------------------------


class SignatureError(ValueError):
    """The function cannot be used as it is declared; `param` names the parameter at fault."""

    def __init__(self, problem: str, param: str = "", missing: bool = False) -> None:
        super().__init__(problem)
        self.problem = problem
        self.param = param
        self.missing = missing  # no such function: the .toml's `function` is at fault


def _complex_part(elem: str) -> str | None:
    m = re.fullmatch(r"(?:std::)?complex<(float|double)>", elem)
    return m[1] if m else None


def _blank_directives(text: str) -> tuple[str, set[str]]:
    """The text with preprocessor lines blanked, and the names of object-like macros it
    defines (a return type may carry one, e.g. `void NO_INLINE f(...)`)."""
    macros, out = set(), []
    for line in text.split("\n"):
        if line.lstrip().startswith("#"):
            m = re.match(r"\s*#\s*define\s+([A-Za-z_]\w*)(?!\()", line)
            if m:
                macros.add(m[1])
            out.append(" " * len(line))
        else:
            out.append(line)
    return "\n".join(out), macros


def _match(text: str, i: int, open_: str, close: str) -> int:
    """The index just past the bracket closing the one at `i`, or -1."""
    depth = 0
    for j in range(i, len(text)):
        if text[j] == open_:
            depth += 1
        elif text[j] == close:
            depth -= 1
            if depth == 0:
                return j + 1
    return -1


def _scopes(text: str) -> list[tuple[int, int, str]]:
    """Every brace pair: (open, close, what opened it: "namespace NAME", "extern", "block")."""
    spans, stack = [], []
    for i, c in enumerate(text):
        if c == "{":
            before = text[max(0, i - 200) : i]
            m = re.search(r"\bnamespace\s+([A-Za-z_][\w:]*)?\s*$", before)
            if m:
                stack.append((i, f"namespace {m[1] or ''}".strip()))
            elif re.search(r'\bextern\s*""\s*$', before):
                stack.append((i, "extern"))
            else:
                stack.append((i, "block"))
        elif c == "}" and stack:
            start, what = stack.pop()
            spans.append((start, i, what))
    return spans


def _strip_attributes(text: str) -> str:
    text = re.sub(r"\[\[.*?\]\]", " ", text)
    while (m := re.search(r"\b(__attribute__|__declspec|alignas)\s*\(", text)) is not None:
        end = _match(text, m.end() - 1, "(", ")")
        text = text[: m.start()] + " " + (text[end:] if end > 0 else "")
    return text


def find_function(source: str, function: str) -> tuple[str, str, str]:
    """(the text before the name back to the last statement, the parameter list, the
    namespace qualifier) of the one definition of `function` at file or namespace scope;
    SignatureError if there is none or several."""
    text, _ = _blank_directives(_code_only(source))
    scopes = _scopes(text)
    found, elsewhere, declared = [], 0, 0
    for m in re.finditer(r"(?<![\w.:>])" + re.escape(function) + r"\s*\(", text):
        close = _match(text, m.end() - 1, "(", ")")
        if close < 0:
            continue
        after = _strip_attributes(text[close : close + 400])
        after = re.sub(r"^\s*(noexcept\s*(\([^)]*\))?|throw\s*\(\s*\)|override|final)", "", after)
        tail = after.lstrip()
        if tail.startswith(";"):
            declared += 1
            continue
        if not tail.startswith("{"):
            continue  # a call or an expression
        inside = [s for s in scopes if s[0] < m.start() < s[1]]
        if any(what == "block" for _, _, what in inside):
            elsewhere += 1
            continue
        names = [what.split(" ", 1)[1] for _, _, what in sorted(inside) if " " in what]
        start = max(text.rfind(c, 0, m.start()) for c in ";{}")
        found.append((text[start + 1 : m.start()], text[m.end() : close - 1], names))
    if len(found) > 1:
        raise SignatureError(
            f"{function}() is defined {len(found)} times (overloads): kernelwright needs one"
        )
    if not found:
        if elsewhere:
            raise SignatureError(
                f"{function}() is defined inside a class or a function: give a free function"
            )
        if declared:
            raise SignatureError(f"{function}() is declared but not defined here")
        raise SignatureError(f"no function named {function!r}", missing=True)
    before, params, names = found[0]
    return before, params, "".join(f"{n}::" for n in names)


def _split_top(text: str, sep: str = ",") -> list[str]:
    """`text` split at `sep` outside <>, (), [] and {}."""
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
    for c in text:
        if c in "<([{":
            depth += 1
        elif c in ">)]}":
            depth -= 1
        if c == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    parts.append("".join(cur))
    return parts


def _normal(text: str) -> str:
    """A type's spelling with its whitespace normalised: `std::vector< double >` ->
    `std::vector<double>`, `unsigned   int` -> `unsigned int`."""
    text = re.sub(r"\s+", " ", text.strip())
    text = re.sub(r"\s*([<>,:*&])\s*", r"\1", text)
    return text.replace(",", ", ")


def scalar_dtype(ctype: str) -> str | None:
    """The dtype of a C++ scalar type, or None."""
    return CPP_TYPES.get(_normal(ctype))


def _atoms(decl: str) -> list[str]:
    """A declaration's tokens, with each template's <...> kept whole on its name."""
    tokens = _TOKEN.findall(decl)
    atoms: list[str] = []
    i = 0
    while i < len(tokens):
        t = tokens[i]
        if t == "::" and atoms:
            atoms[-1] += "::" + (tokens[i + 1] if i + 1 < len(tokens) else "")
            i += 2
            continue
        if t == "<" and atoms:
            depth, j = 0, i
            while j < len(tokens):
                depth += {"<": 1, ">": -1}.get(tokens[j], 0)
                if depth == 0:
                    break
                j += 1
            atoms[-1] += "<" + " ".join(tokens[i + 1 : j]) + ">"
            i = j + 1
            continue
        atoms.append(t)
        i += 1
    return atoms


def parse_param(decl: str, index: int) -> CppParam:
    """One parameter's declaration; SignatureError (naming it) for what is not supported."""
    text = re.sub(r"\s+", " ", _split_top(decl, "=")[0]).strip()
    atoms = _atoms(text)
    label = f"parameter {index + 1}"
    if not atoms:
        raise SignatureError(f"{label} is empty", label)
    array_suffix = False
    if atoms[-1] == "]":  # `float x[]`, `float x[N]`: a pointer
        open_ = len(atoms) - 1 - atoms[::-1].index("[")
        atoms, array_suffix = atoms[:open_], True
    if "(" in atoms:
        raise SignatureError(f"{label} ({text}): function pointers are not supported", label)
    name = ""
    words = [a for a in atoms if a not in _QUALIFIERS and a not in ("*", "&", "&&")]
    last = words[-1] if words else ""
    if len(words) > 1 and re.fullmatch(r"[A-Za-z_]\w*", last) and last not in _TYPE_WORDS:
        name = last
        atoms = atoms[: len(atoms) - 1 - atoms[::-1].index(name)]
    if not name:
        raise SignatureError(f"{label} ({text}) has no name", label)
    label = f"parameter {name!r}"
    if "&&" in atoms:
        raise SignatureError(f"{label} ({text}) is an rvalue reference: not supported", name)
    stars = atoms.count("*") + array_suffix
    ref = "&" in atoms
    cut = min([atoms.index(a) for a in ("*", "&") if a in atoms] or [len(atoms)])
    const = "const" in atoms[:cut]
    base = _normal(" ".join(a for a in atoms if a not in _QUALIFIERS and a not in ("*", "&")))
    if stars > 1 or (stars and ref):
        raise SignatureError(f"{label} ({text}) is a pointer to a pointer or a reference", name)
    if not base:
        raise SignatureError(f"{label} ({text}) has no type", name)
    kind: CppKind = "pointer" if stars else "scalar"
    elem, extent = base, 0
    container = re.fullmatch(r"(?:std::)?(vector|array)<(.*)>", base)
    if container:
        if stars:
            raise SignatureError(f"{label} ({text}) is a pointer to a container", name)
        inner = [p.strip() for p in _split_top(container[2])]
        if container[1] == "vector":
            if len(inner) != 1:
                raise SignatureError(f"{label} ({text}): a custom allocator is not supported", name)
            kind, elem = "vector", inner[0]
        else:
            n = re.fullmatch(r"(\d+)[uUlLzZ]*", inner[-1]) if len(inner) == 2 else None
            if n is None:
                raise SignatureError(
                    f"{label} ({text}): std::array's size must be a number literal", name
                )
            kind, elem, extent = "array", inner[0], int(n[1])
    elem = _normal(elem)
    _check_element(elem, kind, label, text, name)
    if kind == "scalar" and not ref:
        const = True  # by value: the caller's copy cannot change
    return CppParam(name=name, decl=text, kind=kind, elem=elem, const=const, ref=ref, extent=extent)


def _check_element(elem: str, kind: str, label: str, text: str, name: str) -> None:
    if _complex_part(elem) is not None:
        if kind == "scalar":
            raise SignatureError(
                f"{label} ({text}) is a complex scalar: pass it as two real ones", name
            )
        return
    if elem in CPP_TYPES:
        return
    if re.fullmatch(r"(?:std::)?(basic_)?string(_view)?(<.*>)?|(?:std::)?wstring", elem):
        raise SignatureError(f"{label} ({text}): strings are not supported", name)
    if re.fullmatch(r"(?:std::)?(vector|array)<.*>", elem):
        raise SignatureError(f"{label} ({text}): nested containers are not supported", name)
    if "<" in elem:
        raise SignatureError(
            f"{label} ({text}): {elem} is not supported (std::vector, std::array, "
            "std::complex, pointers and scalars are)",
            name,
        )
    if elem in ("void", "auto"):
        raise SignatureError(f"{label} ({text}): {elem} has no dtype", name)
    if re.fullmatch(
        r"(unsigned |signed )?(short|char|long|int|long long)( int)?|float|double", elem
    ):
        raise SignatureError(f"{label} ({text}): {elem} has no dtype kernelwright knows", name)
    raise SignatureError(
        f"{label} ({text}): {elem} is a struct, class or typedef: not supported",
        name,
    )


def parse_signature(source: str, function: str) -> CppSignature:
    """The signature of `function` in `source`; SignatureError for what is not supported."""
    before, params_text, scope = find_function(source, function)
    before = _strip_attributes(before)
    _, macros = _blank_directives(_code_only(source))
    if re.search(r"\btemplate\s*<", before):
        raise SignatureError(
            f"{function}() is a template: give a plain function (one instantiation)"
        )
    words = [
        w
        for w in re.sub(r"\s+", " ", before.replace('""', " ")).split(" ")
        if w and w not in _SPECIFIERS and w not in macros and w not in ("const", "volatile")
    ]
    returns = _normal(" ".join(words))
    if returns in ("", "auto"):
        raise SignatureError(f"{function}() has no return type kernelwright can read")
    if returns != "void" and scalar_dtype(returns) is None:
        raise SignatureError(
            f"{function}() returns {returns}: only void or a scalar (int, double, bool, "
            "size_t, ...) is supported; return results through a parameter"
        )
    body = params_text.strip()
    params = []
    if body not in ("", "void"):
        for i, decl in enumerate(_split_top(body)):
            if decl.strip() == "...":
                raise SignatureError(f"{function}() is variadic: not supported")
            params.append(parse_param(decl, i))
    seen: set[str] = set()
    for p in params:
        if p.name in seen:
            raise SignatureError(f"two parameters are named {p.name!r}", p.name)
        seen.add(p.name)
    return CppSignature(
        function=function,
        scope=scope,
        returns="" if returns == "void" else returns,
        params=tuple(params),
    )


# --- the task file -------------------------------------------------------------------------


def _fail(path: Path, field: str, problem: str) -> TaskError:
    return TaskError(path, field, problem)


def _dtype_matches(param: CppParam, dtype: str) -> bool:
    return CPP_TYPES.get(param.component) == dtype


def _check_fill(path: Path, where: str, init: str, dtype: str) -> None:
    value = fill_value(init)
    assert value is not None
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        if not isinstance(value, int) or not info.min <= value <= info.max:
            raise _fail(
                path, where, f"{init!r}: {dtype} holds whole numbers {info.min}..{info.max}"
            )


def _arg(path: Path, i: int, item: Any, sizes: set[str]) -> ArgSpec:
    where = f"args[{i}]"
    if not isinstance(item, dict):
        raise _fail(path, where, "expected a table")
    name = item.get("name")
    if not isinstance(name, str) or not name.isidentifier():
        raise _fail(path, f"{where}.name", f"expected the parameter's name, got {name!r}")
    where = f"args[{i}] ({name})"
    unknown = set(item) - {"name", "dtype", "role", "shape", "value", "init", "check"}
    if unknown:
        raise _fail(path, f"{where}.{sorted(unknown)[0]}", "unknown field")
    dtype, role = item.get("dtype"), item.get("role")
    if dtype not in DTYPES or dtype == "float16":
        known = ", ".join(d for d in DTYPES if d != "float16")
        raise _fail(path, f"{where}.dtype", f"unknown dtype {dtype!r} (one of {known})")
    if role not in ("in", "out", "inout", "scalar"):
        raise _fail(path, f"{where}.role", f"unknown role {role!r} (in, out, inout, scalar)")
    if role == "scalar":
        for key in ("shape", "init", "check"):
            if key in item:
                raise _fail(path, f"{where}.{key}", "a scalar has none: give its value")
        if "value" not in item:
            raise _fail(path, f"{where}.value", 'a scalar needs a value expression, e.g. "N"')
        value = _check_expr(path, f"{where}.value", item["value"], sizes)
        return ArgSpec(name=name, dtype=dtype, role=role, value=value)
    if "value" in item:
        raise _fail(path, f"{where}.value", "only a scalar has a value")
    shape = item.get("shape")
    if not isinstance(shape, list) or not shape:
        raise _fail(path, f"{where}.shape", 'expected a list of expressions, e.g. ["N"]')
    shape_t = tuple(_check_expr(path, f"{where}.shape", s, sizes) for s in shape)
    init = item.get("init", "uniform")
    if is_fill(init):
        _check_fill(path, f"{where}.init", init, dtype)
    elif role == "out":
        if "init" in item:
            raise _fail(
                path,
                f"{where}.init",
                f"{init!r}: an output's init is the value it starts as, fill:V (e.g. "
                '"fill:0"), for a function that reads it before writing',
            )
    else:
        init = _init(path, f"{where}.init", init, dtype)
    check = item.get("check", [])
    if not isinstance(check, list) or (check and role not in ("in", "inout")):
        raise _fail(path, f"{where}.check", "expected a list of distributions, for an input only")
    checks = tuple(_init(path, f"{where}.check", c, dtype) for c in check)
    return ArgSpec(name=name, dtype=dtype, role=role, shape=shape_t, init=str(init), check=checks)


def _describe(p: CppParam) -> str:
    return f"{p.decl!r}"


def check_params(
    spec_path: Path, source_path: Path, sig: CppSignature, args: tuple[ArgSpec, ...]
) -> None:
    """Refuse declared arguments that do not match the function's parameters: their number,
    order (by name), role (scalar or array; const or written), dtype and complex pairs."""
    fn = f"{sig.function}()"
    if len(args) != len(sig.params):
        names = ", ".join(p.name for p in sig.params) or "none"
        raise _fail(
            spec_path,
            "args",
            f"{len(args)} arguments declared, but {fn} in {source_path.name} takes "
            f"{len(sig.params)} ({names})",
        )
    for i, (p, a) in enumerate(zip(sig.params, args, strict=True)):
        where = f"args[{i}] ({a.name})"
        if a.name != p.name:
            raise _fail(
                spec_path,
                f"{where}.name",
                f"{fn}'s parameter {i + 1} is {p.name!r}: declare the arguments in its order, "
                "named as its parameters",
            )
        if p.is_array and a.role == "scalar":
            raise _fail(
                spec_path,
                f"{where}.role",
                f"role scalar, but {p.name!r} is {_describe(p)}: an array (in, out or inout)",
            )
        if not p.is_array and a.role != "scalar":
            raise _fail(
                spec_path,
                f"{where}.role",
                f"role {a.role}, but {p.name!r} is {_describe(p)}, passed by value: scalar",
            )
        if a.role in ("out", "inout") and not p.writable:
            how = "const" if p.const else "passed by value (its writes are lost)"
            raise _fail(
                spec_path,
                f"{where}.role",
                f"role {a.role}, but {p.name!r} is {_describe(p)}, {how}: declare it in, "
                f"or let {fn} write it",
            )
        if not _dtype_matches(p, a.dtype):
            raise _fail(
                spec_path,
                f"{where}.dtype",
                f"{a.dtype} does not match {p.component!r} of parameter {p.name!r} "
                f"in {source_path.name}"
                + (f" (it is {CPP_TYPES[p.component]})" if p.component in CPP_TYPES else ""),
            )


def _returns(spec_path: Path, raw: Any, sig: CppSignature, names: set[str]) -> ArgSpec | None:
    fn = f"{sig.function}()"
    if not sig.returns:
        if raw is not None:
            raise _fail(spec_path, "returns", f"{fn} returns nothing (void)")
        return None
    dtype = CPP_TYPES[sig.returns]
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise _fail(spec_path, "returns", 'expected a table, e.g. { name = "result" }')
    for key in raw:
        if key not in ("name", "dtype", "init"):
            raise _fail(spec_path, f"returns.{key}", "unknown field (name, dtype, init)")
    name = raw.get("name", "result")
    if not isinstance(name, str) or not name.isidentifier() or name in names:
        raise _fail(
            spec_path,
            "returns.name",
            f"expected a new identifier (not a parameter's), got {name!r}",
        )
    declared = raw.get("dtype", dtype)
    if declared != dtype:
        raise _fail(
            spec_path,
            "returns.dtype",
            f"{declared!r} does not match {fn}'s return type {sig.returns!r} ({dtype})",
        )
    init = raw.get("init", "uniform")
    if "init" in raw:
        if not is_fill(init):
            raise _fail(spec_path, "returns.init", f'{init!r}: expected fill:V, e.g. "fill:0"')
        _check_fill(spec_path, "returns.init", init, dtype)
    return ArgSpec(name=name, dtype=dtype, role="out", shape=("1",), init=str(init))


def _flags(spec_path: Path, raw: Any) -> tuple[str, ...]:
    if not isinstance(raw, list) or not all(isinstance(f, str) for f in raw):
        raise _fail(spec_path, "flags", 'expected a list of g++ flags, e.g. ["-ffast-math"]')
    for i, flag in enumerate(raw):
        if flag.startswith("-std="):
            raise _fail(spec_path, f"flags[{i}]", f'{flag!r}: give the standard as std = "..."')
        if not _FLAG.match(flag) or flag.startswith(_BAD_FLAGS):
            raise _fail(
                spec_path,
                f"flags[{i}]",
                f"{flag!r} is not allowed (optimisation -O/-f/-m, warnings -W, macros -D/-U)",
            )
    return tuple(raw)


def _inputs(spec_path: Path, raw: Any) -> str:
    if raw is None:
        return ""
    value = raw.get("python") if isinstance(raw, dict) else None
    if not isinstance(value, str) or value.count(":") != 1 or set(raw) != {"python"}:
        raise _fail(spec_path, "inputs.python", 'expected "file.py:function"')
    file, func = value.split(":")
    ref_path = (spec_path.parent / file).resolve()
    if not ref_path.is_file():
        raise _fail(spec_path, "inputs.python", f"{file} not found")
    try:
        text = read_text(ref_path)
    except OSError as exc:
        raise _fail(ref_path, "", f"cannot read: {exc.strerror}") from None
    if f"def {func}(" not in text:
        raise _fail(spec_path, "inputs.python", f"{file} defines no function {func!r}")
    return f"{ref_path}:{func}"


_ALLOWED = {
    "kind",
    "name",
    "description",
    "function",
    "source",
    "std",
    "flags",
    "compare",
    "sizes",
    "args",
    "returns",
    "launch",
    "tolerance",
    "roofline",
    "inputs",
    "port",
}


def _sizes_of(
    spec_path: Path, raw: Any
) -> tuple[dict[str, int], tuple[dict[str, int], ...], dict[str, int]]:
    """sizes.bench, sizes.checks and sizes.multiple_of, as a CUDA task has them."""
    if not isinstance(raw, dict):
        raise _fail(spec_path, "sizes", "missing: give sizes.bench and sizes.checks")
    for key in raw:
        if key not in ("bench", "checks", "multiple_of"):
            raise _fail(spec_path, f"sizes.{key}", "unknown field (bench, checks, multiple_of)")
    return parse_sizes(spec_path, raw)


def load_cpp_task(spec_path: Path) -> CppTask:
    """A cpp task from its .toml (`kind = "cpp"`); TaskError naming the file and field."""
    spec_path = Path(spec_path).resolve()
    raw = _read_toml(spec_path)
    for key in raw:
        if key not in _ALLOWED:
            raise _fail(spec_path, key, "unknown field")
    if raw.get("kind") != "cpp":
        raise _fail(spec_path, "kind", f'expected "cpp", got {raw.get("kind")!r}')
    function = raw.get("function")
    if not isinstance(function, str) or not function.isidentifier():
        raise _fail(spec_path, "function", "missing: name the C/C++ function to port")
    source_path = spec_path.parent / str(raw.get("source", spec_path.stem + ".cpp"))
    try:
        source = read_text(source_path)
    except OSError:
        raise _fail(spec_path, "source", f"C++ file {source_path.name} not found") from None
    problem = include_problem(source)
    if problem:
        raise _fail(source_path, "", problem + " (only the .cpp travels to the reference's worker)")
    std = raw.get("std", "c++17")
    if not isinstance(std, str) or not STANDARDS.match(std):
        raise _fail(spec_path, "std", f'{std!r}: expected a C++ standard, e.g. "c++17", "gnu++20"')
    flags = _flags(spec_path, raw.get("flags", []))
    compare = raw.get("compare", "close")
    if compare not in COMPARES:
        raise _fail(spec_path, "compare", f"unknown mode {compare!r} (close, exact)")
    bench, checks, multiple_of = _sizes_of(spec_path, raw.get("sizes"))
    known = set(bench)
    args_raw = raw.get("args", [])
    if not isinstance(args_raw, list):
        raise _fail(spec_path, "args", "expected [[args]] tables, one per parameter")
    args = tuple(_arg(spec_path, i, item, known) for i, item in enumerate(args_raw))
    try:
        sig = parse_signature(source, function)
    except SignatureError as exc:
        if exc.missing:
            raise _fail(spec_path, "function", f"{exc.problem} in {source_path.name}") from None
        raise _fail(source_path, f"{function}()", exc.problem) from None
    check_params(spec_path, source_path, sig, args)
    result = _returns(spec_path, raw.get("returns"), sig, {a.name for a in args})
    all_args = (*args, result) if result else args
    if not any(a.role in ("out", "inout") for a in all_args):
        raise _fail(
            spec_path,
            "args",
            f"{function}() returns nothing and no argument is out or inout: nothing to check",
        )
    launch = parse_launch(spec_path, raw.get("launch"), known)
    tol = parse_tolerance(spec_path, raw.get("tolerance", {}))
    rbytes, rflops = parse_roofline(spec_path, raw.get("roofline", {}), known)
    if compare == "exact":
        _exact_inputs(spec_path, all_args)
    task = CppTask(
        name=task_name(spec_path, raw),
        path=str(spec_path),
        source_path=str(source_path),
        source=source,
        function=function,
        scope=sig.scope,
        returns=sig.returns,
        params=sig.params,
        description=str(raw.get("description", "")),
        std=std,
        flags=flags,
        args=all_args,
        bench=bench,
        checks=checks,
        multiple_of=multiple_of,
        launch=launch,
        compare=compare,
        atol=tol.get("atol"),
        rtol=tol.get("rtol"),
        roofline_bytes=rbytes,
        roofline_flops=rflops,
        inputs_python=_inputs(spec_path, raw.get("inputs")),
    )
    _check_sizes(spec_path, task)
    port_path, port_source = _port(spec_path, raw.get("port"), task)
    return task.model_copy(update={"port_path": port_path, "port_source": port_source})


def plain_name(text: str) -> str | None:
    """The size an expression is, where it is just a size's name ("N"), else None."""
    try:
        node = ast.parse(str(text), mode="eval").body
    except SyntaxError:
        return None
    return node.id if isinstance(node, ast.Name) else None


def _exact_inputs(spec_path: Path, args: tuple[ArgSpec, ...]) -> None:
    """compare = "exact" needs inputs the CPU draws bit for bit as the GPU does: normal draws
    go through log and cospi, whose last bit may differ between the two."""
    for i, a in enumerate(args):
        for field, dist in (("init", a.init), *(("check", c) for c in a.check)):
            if a.role in ("in", "inout") and a.dtype.startswith("float") and "normal" in dist:
                raise _fail(
                    spec_path,
                    f"args[{i}] ({a.name}).{field}",
                    f"{dist!r}: the GPU and the CPU may draw a normal value a bit apart, and "
                    'compare = "exact" would see it: use a uniform distribution, or compare '
                    '= "close"',
                )


def _port(spec_path: Path, raw: Any, task: CppTask) -> tuple[str, str]:
    """The task's CUDA port (`port = "file.cu"`, beside the .toml): a kernel named as the
    function, taking the kernel's arguments, run at the task's launch. ("", "") for none."""
    if raw is None:
        return "", ""
    if not isinstance(raw, str) or not raw.endswith(".cu"):
        raise _fail(spec_path, "port", 'expected a .cu file beside the task, e.g. "port.cu"')
    path = (spec_path.parent / raw).resolve()
    try:
        source = read_text(path)
    except OSError:
        raise _fail(spec_path, "port", f"{raw} not found") from None
    try:
        check_signature(path, source, task.function, task.kernel_args, spec_path)
    except TaskError as exc:
        raise _fail(spec_path, "port", f"{raw}: {exc.field}: {exc.problem}") from None
    return str(path), source


def _check_sizes(spec_path: Path, task: CppTask) -> None:
    """Every shape, scalar and launch must evaluate at every size set, and agree with what the
    C++ type fixes: std::array's extent, a complex element's pair, one element for a scalar
    reference or a returned value."""
    params = {p.name: p for p in task.params}
    for i, sizes in enumerate((task.bench, *task.checks)):
        for j, arg in enumerate(task.args):
            where = f"args[{j}] ({arg.name})" if arg is not task.result else "returns"
            p = params.get(arg.name) if arg is not task.result else None
            if arg.role == "scalar":
                try:
                    value = expr.evaluate(arg.value, sizes)
                except expr.ExprError as exc:
                    raise _fail(spec_path, f"{where}.value", f"at size set {i}: {exc}") from None
                if np.dtype(arg.dtype).kind in "iu":
                    info = np.iinfo(arg.dtype)
                    if float(value) != int(value) or not info.min <= int(value) <= info.max:
                        raise _fail(
                            spec_path,
                            f"{where}.value",
                            f"gives {value} at size set {i}: not a whole number in {arg.dtype}",
                        )
                continue
            try:
                shape = task.shape(arg, sizes)
            except expr.ExprError as exc:
                raise _fail(spec_path, f"{where}.shape", f"at size set {i}: {exc}") from None
            if min(shape) < 1:
                raise _fail(spec_path, f"{where}.shape", f"empty at size set {i}")
            if p is None:
                continue
            if p.complex and shape[-1] != 2:
                raise _fail(
                    spec_path,
                    f"{where}.shape",
                    f"{p.elem} is two {arg.dtype} values (re, im): the last dimension must be 2",
                )
            count = math.prod(shape) // (2 if p.complex else 1)
            want = p.extent if p.kind == "array" else 1 if p.kind == "scalar" else None
            if want is not None and count != want:
                raise _fail(
                    spec_path,
                    f"{where}.shape",
                    f"{count} elements at size set {i}, but {p.decl!r} holds {want}",
                )
        try:
            task.launch.resolve(sizes)
        except expr.ExprError as exc:
            raise _fail(spec_path, "launch", f"at size set {i}: {exc}") from None
