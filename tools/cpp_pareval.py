"""ParEval's serial problems as cpp tasks (`kernelwright import pareval PATH`).

A clone of https://github.com/parallelcodefoundry/ParEval holds, per problem TYPE/NAME:
`prompts/raw/TYPE/NAME/serial` (the function's doc comment and signature, ending in `{`),
`drivers/cpp/benchmarks/TYPE/NAME/baseline.hpp` (the sequential solution, `correctName()`),
`drivers/cpp/benchmarks/TYPE/NAME/cpu.cc` (the driver: `init()` sizes the data from
DRIVER_PROBLEM_SIZE, `reset()` fills it, `compute()` calls the function with the context's
fields) and `drivers/problem-sizes.json` (DRIVER_PROBLEM_SIZE per problem and model). Nothing
of ParEval is kept here: this module reads a user's clone.

Each problem becomes DIR/NAME/NAME.cpp (the baseline, `correctName` renamed to the prompt's
name, behind the prompt's own declarations and the headers the driver includes), NAME.toml and,
where the driver builds its inputs with a helper (a random graph, a linear system), inputs.py
that makes the same kind of inputs with NumPy. Sizes are the driver's: each integer field that
init() sets from DRIVER_PROBLEM_SIZE is a size, and DRIVER_PROBLEM_SIZE itself is one where it
is used directly; the bench size is the problem's CUDA size, the checks two small ones. A scalar
reset() draws at random (rand() % E) gets a fixed value, a third of E (the second such, two
thirds). A problem with a struct or string argument, or whose driver does what this reader does
not follow, is skipped with the reason.
"""

from __future__ import annotations

import ast
import json
import operator
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from . import expr
from .cpp import CPP_TYPES, CppParam, SignatureError, load_cpp_task, parse_signature
from .errors import TaskError
from .files import read_text

HEADERS = (
    "algorithm",
    "array",
    "cassert",
    "cfloat",
    "climits",
    "cmath",
    "complex",
    "cstddef",
    "cstdint",
    "cstdlib",
    "deque",
    "functional",
    "limits",
    "numeric",
    "queue",
    "random",
    "stack",
    "string",
    "type_traits",
    "utility",
    "vector",
)
SIZE = "DRIVER_PROBLEM_SIZE"
CHECK_SIZES = (64, 1000)  # DRIVER_PROBLEM_SIZE at the two check sizes (capped by the bench's)
POW2_CHECK_SIZES = (64, 512)  # for problems whose code needs a power of two (fft)
POW2_TYPES = ("fft",)


@dataclass(frozen=True)
class Converted:
    name: str
    toml: Path
    type: str = ""  # ParEval's problem type: transform, reduce, graph, ...


@dataclass(frozen=True)
class Skipped:
    name: str
    reason: str


@dataclass
class Report:
    converted: list[Converted] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)


class Unsupported(Exception):
    """The problem cannot be converted; the message says why, in one line."""


@dataclass(frozen=True)
class Problem:
    type: str
    name: str
    prompt: str
    baseline: Path
    driver: Path
    size: int


def looks_like_pareval(root: Path) -> bool:
    return (root / "drivers" / "cpp" / "benchmarks").is_dir() and (root / "prompts").is_dir()


def _problem_size(text: str) -> int:
    """A problem-sizes.json entry, e.g. "(1<<10)"."""
    ops: dict[type, Callable[[int, int], int]] = {
        ast.LShift: operator.lshift,
        ast.Mult: operator.mul,
        ast.Add: operator.add,
        ast.Sub: operator.sub,
        ast.FloorDiv: operator.floordiv,
    }

    def ev(node: ast.expr) -> int:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in ops:
            return ops[type(node.op)](ev(node.left), ev(node.right))
        raise ValueError(text)

    return ev(ast.parse(text.replace("/", "//"), mode="eval").body)


def _prompts(root: Path) -> dict[str, str]:
    """Each problem's serial prompt: prompts/raw/TYPE/NAME/serial, else the entries of
    prompts/generation-prompts.json whose parallelism_model is serial."""
    found = {p.parent.name: read_text(p) for p in (root / "prompts" / "raw").glob("*/*/serial")}
    data = root / "prompts" / "generation-prompts.json"
    if data.is_file():
        try:
            entries = json.loads(read_text(data))
        except ValueError as exc:
            raise TaskError(data, "", f"not valid JSON: {exc}") from None
        for e in entries if isinstance(entries, list) else []:
            if isinstance(e, dict) and e.get("parallelism_model") == "serial":
                found.setdefault(str(e.get("name")), str(e.get("prompt", "")))
    return found


def problems(root: Path) -> tuple[list[Problem], list[Skipped]]:
    """The clone's problems, in name order, and those lacking a file this needs."""
    root = Path(root)
    if not looks_like_pareval(root):
        raise TaskError(
            root,
            "",
            "not a ParEval clone: expected drivers/cpp/benchmarks/ and prompts/ "
            "(git clone https://github.com/parallelcodefoundry/ParEval)",
        )
    sizes_path = root / "drivers" / "problem-sizes.json"
    try:
        sizes = json.loads(read_text(sizes_path))
    except OSError:
        raise TaskError(sizes_path, "", "not found: the problems' sizes are read from it") from None
    except ValueError as exc:
        raise TaskError(sizes_path, "", f"not valid JSON: {exc}") from None
    prompts = _prompts(root)
    found, skipped = [], []
    for d in sorted((root / "drivers" / "cpp" / "benchmarks").glob("*/*")):
        if not d.is_dir():
            continue
        name = d.name
        missing = [f for f in ("baseline.hpp", "cpu.cc") if not (d / f).is_file()]
        if missing:
            skipped.append(Skipped(name, f"no {missing[0]} in {d}"))
            continue
        if name not in prompts:
            skipped.append(Skipped(name, "no serial prompt (prompts/raw/TYPE/NAME/serial)"))
            continue
        entry = sizes.get(name, {}) if isinstance(sizes, dict) else {}
        text = entry.get("cuda") or entry.get("serial") if isinstance(entry, dict) else None
        try:
            size = _problem_size(str(text))
        except (ValueError, SyntaxError):
            skipped.append(Skipped(name, f"no size in problem-sizes.json ({text!r})"))
            continue
        found.append(
            Problem(d.parent.name, name, prompts[name], d / "baseline.hpp", d / "cpu.cc", size)
        )
    found.sort(key=lambda p: p.name)
    return found, skipped


# --- reading the driver ---------------------------------------------------------------------


def _body(text: str, header: str) -> str:
    """The body of the function whose header matches `header` in the driver."""
    m = re.search(header + r"[^{;]*\{", text)
    if m is None:
        raise Unsupported(f"cpu.cc has no {header.replace(chr(92), '')} function")
    depth, i = 1, m.end()
    while i < len(text) and depth:
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        i += 1
    return text[m.end() : i - 1]


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def _split_args(text: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for c in text:
        depth += {"(": 1, ")": -1}.get(c, 0)
        if c == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += c
    return [*parts, cur.strip()] if cur.strip() else parts


_NUMBER = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?[uUlLfF]*$")


def _number(text: str) -> float | None:
    text = text.strip()
    if not _NUMBER.match(text):
        return None
    return float(re.sub(r"[uUlLfF]+$", "", text))


@dataclass
class Driver:
    call: list[str]  # the context field passed as each parameter
    result: str  # the name compute() gives the returned value, or ""
    assigned: dict[str, str]  # init(): ctx->F = EXPR
    lengths: dict[str, str]  # init(): ctx->F.resize(EXPR)
    ranges: dict[str, tuple[float, float]]  # reset(): fillRand(ctx->F, LO, HI)
    fills: dict[str, str]  # reset(): std::fill / .fill(V)
    mods: dict[str, int]  # reset(): ctx->F[i] = rand() % K
    complex_of: dict[str, tuple[str, str]]  # reset(): ctx->F[i] = std::complex<double>(re, im)
    helpers: list[tuple[str, list[str]]]  # reset(): helper(ctx->A, ...)
    drawn: list[tuple[str, str]]  # reset(): ctx->F = ... rand() ..., in order
    odd: dict[str, int]  # reset(): ctx->F made odd, then k elements of its middle made even


_HELPERS = (
    "fillRandomUndirectedGraph",
    "fillRandDirectedGraph",
    "randomConnectedUndirectedGraph",
    "createRandomLinearSystem",
    "fillRandWithZeroes",
)


def read_driver(text: str, function: str) -> Driver:
    text = _strip_comments(text)
    compute = _body(text, r"\bcompute\s*\(")
    m = re.search(r"(?:(\w+)\s*=\s*)?\b" + re.escape(function) + r"\s*\((.*?)\)\s*;", compute, re.S)
    if m is None:
        raise Unsupported(f"compute() in cpu.cc does not call {function}()")
    call = []
    for a in _split_args(m[2]):
        f = re.fullmatch(r"ctx->(\w+)", a)
        if f is None:
            raise Unsupported(f"compute() passes {a!r}, not a field of the context")
        call.append(f[1])
    init = _body(text, r"\binit\s*\(")
    reset = _body(text, r"\breset\s*\(")
    locals_ = dict(re.findall(r"(?:const\s+)?(?:size_t|int|double)\s+(\w+)\s*=\s*([^;]+);", init))
    assigned = dict(re.findall(r"ctx->(\w+)\s*=\s*([^;]+);", init))
    lengths = {}
    for f, e in re.findall(r"ctx->(\w+)\.resize\(([^;]*)\)\s*;", init):
        for name, value in locals_.items():
            e = re.sub(rf"\b{name}\b", f"({value})", e)
        lengths[f] = e
    ranges: dict[str, tuple[float, float]] = {}
    for f, lo, hi in re.findall(
        r"fillRand\(\s*ctx->(\w+)\s*,\s*([^,]+?)\s*,\s*([^)]+?)\s*\)", reset
    ):
        low, high = _number(lo), _number(hi)
        if low is None or high is None:
            raise Unsupported(f"reset() fills {f} between {lo} and {hi}: not numbers")
        ranges[f] = (low, high)
    fills = dict(
        re.findall(
            r"std::fill\(\s*ctx->(\w+)\.begin\(\)\s*,\s*ctx->\1\.end\(\)\s*,\s*([^)]+?)\s*\)", reset
        )
    )
    fills.update(re.findall(r"ctx->(\w+)\.fill\(\s*([^)]+?)\s*\)", reset))
    mods = {
        f: int(k) for f, k in re.findall(r"ctx->(\w+)\[\w+\]\s*=\s*rand\(\)\s*%\s*(\d+)\s*;", reset)
    }
    complex_of = {
        f: (re_, im)
        for f, re_, im in re.findall(
            r"ctx->(\w+)\[\w+\]\s*=\s*std::complex<double>\(\s*ctx->(\w+)\[\w+\]\s*,\s*ctx->(\w+)\[\w+\]\s*\)",
            reset,
        )
    }
    helpers = [
        (h, [a.strip() for a in _split_args(args)])
        for h, args in re.findall(r"\b(" + "|".join(_HELPERS) + r")\(([^;]*)\)\s*;", reset)
    ]
    drawn = re.findall(r"ctx->(\w+)\s*=\s*([^;]*\brand\(\)[^;]*);", reset)
    odd = {}
    for f in re.findall(r"ctx->(\w+)\[\w+\]\s*=\s*2\s*\*\s*ctx->\1\[\w+\]\s*\+\s*1\s*;", reset):
        odd[f] = len(re.findall(rf"ctx->{f}\[[^\]]*rand\(\)[^\]]*\]\s*\+=\s*1\s*;", reset))
    # anything else reset() writes is beyond this reader
    known = set(ranges) | set(fills) | set(mods) | set(complex_of) | set(odd)
    known |= {a.replace("ctx->", "") for _, args in helpers for a in args}
    known |= {f for f, _ in drawn}
    written = r"ctx->(\w+)(?:\[[^\]]*\])?(?:\.\w+)?\s*[-+*/]?=(?!=)"
    grown = r"ctx->(\w+)\.(?:push_back|emplace_back|assign|resize|clear|insert)\s*\("
    for f in re.findall(written, reset) + re.findall(grown, reset):
        if f not in known:
            raise Unsupported(f"reset() sets {f} in a way the converter does not read")
    return Driver(
        call=call,
        result=m[1] or "",
        assigned={k: v.strip() for k, v in assigned.items()},
        lengths=lengths,
        ranges=ranges,
        fills={k: v.strip() for k, v in fills.items()},
        mods=mods,
        complex_of=complex_of,
        helpers=helpers,
        drawn=drawn,
        odd=odd,
    )


# --- sizes and expressions -----------------------------------------------------------------


class _Sizes:
    """The task's sizes: integer fields init() sets from DRIVER_PROBLEM_SIZE, and
    DRIVER_PROBLEM_SIZE itself where it is used directly."""

    def __init__(self, drv: Driver, params: dict[str, CppParam]) -> None:
        self.exprs: dict[str, str] = {}  # size name: C++ expression over SIZE
        self.alias = ""  # the field that is SIZE itself, if any
        self.uses_direct = False  # whether SIZE is a size of its own (set once shapes are read)
        for f, e in drv.assigned.items():
            p = params.get(f)
            integer = p is not None and CPP_TYPES.get(p.elem, "").startswith(("int", "uint"))
            sized = SIZE in e or any(re.search(rf"ctx->{g}\b", e) for g in self.exprs)
            if p is not None and p.kind == "scalar" and integer and sized:
                self.exprs[f] = e
                if e.strip() == SIZE:
                    self.alias = self.alias or f
        self.direct = self.alias or ("N" if "N" not in self.exprs else "SIZE")

    def translate(self, text: str, shapes: dict[str, str] | None = None) -> str:
        """A C++ size expression in the task's terms: fields and DRIVER_PROBLEM_SIZE by their
        size names, x.size() by x's length, integer division as //."""
        text = re.sub(r"\bstatic_cast<[^>]*>\(", "(", text)
        text = re.sub(r"\(\s*(?:size_t|int|long|double)\s*\)", "", text)

        def size_of(m: re.Match[str]) -> str:
            f = m[1]
            if shapes is None or f not in shapes:
                raise Unsupported(f"{f}.size() is used before {f} is sized")
            return shapes[f] if shapes[f].isidentifier() else f"({shapes[f]})"

        text = re.sub(r"(?:ctx->)?(\w+)\.size\(\)", size_of, text)
        text = re.sub(r"\b" + SIZE + r"\b", self.direct, text)
        for f in self.exprs:
            text = re.sub(rf"ctx->{f}\b", f, text)
        if "ctx->" in text or re.search(r"\brand\s*\(", text):
            raise Unsupported(f"cannot read the expression {text.strip()!r}")
        text = re.sub(r"(\d+)(?:[uU]?[lL]{0,2}|[lL]{1,2}[uU]?)\b", r"\1", text)
        text = re.sub(r"(?<!/)/(?!/)", "//", text)
        try:
            expr.parse(text)
        except expr.ExprError as exc:
            raise Unsupported(f"cannot read the expression {text.strip()!r}: {exc}") from None
        return " ".join(text.split())

    def at(self, driver_size: int) -> dict[str, int]:
        """Every size's value where DRIVER_PROBLEM_SIZE is `driver_size`."""
        env: dict[str, int] = {self.direct: driver_size}
        for f, e in self.exprs.items():
            env[f] = expr.evaluate_int(self.translate(e), env)
        names = set(self.exprs) | ({self.direct} if self.uses_direct else set())
        return {k: v for k, v in env.items() if k in names}


def _toml_str(value: str) -> str:
    return json.dumps(value)


# --- input makers (written to inputs.py beside a task that needs one) ----------------------

_MAKERS = {
    "undirected": '''
def make(np, rng, sizes):
    """A random undirected graph as ParEval's fillRandomUndirectedGraph makes it: each pair
    of distinct nodes joined with probability 1/2, no self loops; {a}, N x N row-major."""
    n = int(sizes[{size!r}])
    upper = np.triu(rng.integers(0, 2, size=(n, n), dtype=np.int32), 1)
    return {{{a!r}: (upper + upper.T).reshape(-1)}}
''',
    "connected": '''
def make(np, rng, sizes):
    """A random connected undirected graph as ParEval's randomConnectedUndirectedGraph makes
    it: a path through the nodes in random order, then for each node rand() % (N - 1) edges to
    random other nodes; {a}, N x N row-major."""
    n = int(sizes[{size!r}])
    a = np.zeros((n, n), dtype=np.int32)
    order = rng.permutation(n)
    a[order[:-1], order[1:]] = 1
    a[order[1:], order[:-1]] = 1
    for i in range(n):
        other = rng.integers(0, n, size=int(rng.integers(0, max(n - 1, 1))))
        other = other[other != i]
        a[i, other] = 1
        a[other, i] = 1
    return {{{a!r}: a.reshape(-1)}}
''',
    "linear": '''
def make(np, rng, sizes):
    """A linear system as ParEval's createRandomLinearSystem makes it: A and x uniform in
    [-10, 10), b = A x; {a} is N x N row-major, {b} has N elements."""
    n = int(sizes[{size!r}])
    a = rng.uniform(-10.0, 10.0, size=(n, n))
    x = rng.uniform(-10.0, 10.0, size=n)
    return {{{a!r}: a.reshape(-1), {b!r}: a @ x}}
''',
    "zeroes": '''
def make(np, rng, sizes):
    """ParEval's fillRandWithZeroes: random non-negative ints, four in five set to zero."""
    n = int(sizes[{size!r}])
    x = rng.integers(0, 2**31 - 1, size=n, dtype=np.int32)
    x[rng.integers(0, 5, size=n) != 0] = 0
    return {{{a!r}: x}}
''',
    "odd": '''
def make(np, rng, sizes):
    """Odd numbers 2 * [{lo}, {hi}) + 1, then {k} elements in the middle half made even (+1),
    as the driver's reset() makes {a}."""
    n = int(sizes[{size!r}])
    x = 2 * rng.integers({lo}, {hi}, size=n).astype(np.int64) + 1
    if 3 * n // 4 > n // 4:
        for _ in range({k}):
            x[rng.integers(n // 4, 3 * n // 4)] += 1
    return {{{a!r}: x}}
''',
}


# --- one problem -----------------------------------------------------------------------------


def _last_function(prompt: str) -> tuple[str, int]:
    """The name of the function the prompt ends by opening, and where its line starts."""
    code = _strip_comments(prompt)
    brace = code.rstrip().rfind("{")
    close = code.rfind(")", 0, brace)
    depth, i = 0, close
    while i >= 0:
        depth += {")": 1, "(": -1}.get(code[i], 0)
        if depth == 0:
            break
        i -= 1
    m = re.search(r"(\w+)\s*$", code[:i])
    if brace < 0 or close < 0 or m is None:
        raise Unsupported("the serial prompt does not end with a function's signature")
    name = m[1]
    at = prompt.rfind(name + "(") if prompt.rfind(name + "(") >= 0 else prompt.rfind(name)
    return name, prompt.rfind("\n", 0, at) + 1


def _baseline_name(driver: str, function: str) -> str:
    """The baseline's function: what the driver's best() calls (correctName, as a rule)."""
    try:
        best = _body(_strip_comments(driver), r"\bbest\s*\(")
    except Unsupported:
        best = ""
    m = re.search(r"(?:=\s*)?\b(\w+)\s*\(\s*ctx->", best)
    return m[1] if m else "correct" + function[0].upper() + function[1:]


def _cpp_source(problem: Problem, function: str, line_start: int) -> tuple[str, str]:
    """The task's .cpp and the function's name in it."""
    baseline = read_text(problem.baseline)
    correct = _baseline_name(read_text(problem.driver), function)
    if not re.search(rf"\b{correct}\s*\(", baseline):
        raise Unsupported(f"baseline.hpp defines no {correct}(), which the driver's best() calls")
    name = function
    if re.search(rf"(?<![\w.>]){re.escape(function)}\s*\(", _strip_comments(baseline)):
        name = correct  # the baseline has its own function of that name
    else:
        baseline = re.sub(rf"\b{correct}\b", function, baseline)
    baseline = re.sub(r"^\s*#\s*pragma\s+once\s*$", "", baseline, flags=re.M)
    preamble = problem.prompt[:line_start].rstrip()
    if preamble.endswith("*/"):
        preamble = preamble[: preamble.rfind("/*")].rstrip()
    parts = [
        f"// ParEval {problem.name}: its sequential baseline (drivers/cpp/benchmarks/"
        f"{problem.type}/{problem.name}/baseline.hpp),",
        f"// {correct}() named {name}() as the serial prompt declares it. Converted by "
        "`kernelwright import pareval`.",
        *(f"#include <{h}>" for h in HEADERS),
        "#define NO_INLINE",
        "",
    ]
    if preamble.strip():
        parts += ["// from the serial prompt", preamble, ""]
    return "\n".join(parts) + baseline.strip() + "\n", name


def convert_problem(problem: Problem, out_dir: Path) -> Path:
    """Write the problem's task under out_dir/NAME/; returns its .toml. Unsupported, with the
    reason, for what cannot be converted."""
    function, line_start = _last_function(problem.prompt)
    try:
        sig = parse_signature(problem.prompt + "\n}\n", function)
    except SignatureError as exc:
        raise Unsupported(f"{function}(): {exc.problem}") from None
    source, name = _cpp_source(problem, function, line_start)
    try:
        own = parse_signature(source, name)
    except SignatureError as exc:
        raise Unsupported(f"baseline {name}(): {exc.problem}") from None
    if [(p.name, p.kind, p.elem, p.const, p.ref) for p in own.params] != [
        (p.name, p.kind, p.elem, p.const, p.ref) for p in sig.params
    ]:
        raise Unsupported(f"baseline {name}()'s parameters differ from the prompt's")
    sig = own
    drv = read_driver(read_text(problem.driver), function)
    if len(drv.call) != len(sig.params):
        raise Unsupported(
            f"compute() passes {len(drv.call)} arguments, {function}() takes {len(sig.params)}"
        )
    params = {f: p for f, p in zip(drv.call, sig.params, strict=True)}
    sizes = _Sizes(drv, params)
    shapes: dict[str, str] = {}
    for f, e in drv.lengths.items():
        try:
            shapes[f] = sizes.translate(e, shapes)
        except Unsupported:
            if f in params:
                raise
    makers: list[str] = []
    made: set[str] = set()
    fills = dict(drv.fills)
    for helper, hargs in drv.helpers:
        fields = [a.replace("ctx->", "") for a in hargs]
        size = fields[-1] if fields and fields[-1] in sizes.exprs else sizes.direct
        if helper == "fillRandDirectedGraph":
            drv.mods[fields[0]] = 2
        elif helper in ("fillRandomUndirectedGraph", "randomConnectedUndirectedGraph"):
            kind = "undirected" if helper.startswith("fill") else "connected"
            makers.append(_MAKERS[kind].format(a=params_name(params, fields[0]), size=size))
            made.add(fields[0])
        elif helper == "createRandomLinearSystem":
            a, b = (params_name(params, f) for f in fields[:2])
            makers.append(_MAKERS["linear"].format(a=a, b=b, size=size))
            made |= {fields[0], fields[1]}
            fills[fields[2]] = "0"
        elif helper == "fillRandWithZeroes":
            makers.append(
                _MAKERS["zeroes"].format(
                    a=params_name(params, fields[0]), size=_bare(shapes, fields[0])
                )
            )
            made.add(fields[0])
    for f, k in drv.odd.items():
        lo, hi = drv.ranges.get(f, (0, 0))
        makers.append(
            _MAKERS["odd"].format(
                a=params_name(params, f), size=_bare(shapes, f), lo=int(lo), hi=int(hi), k=k
            )
        )
        made.add(f)
    lines = [
        'kind = "cpp"',
        f"name = {_toml_str(problem.name)}",
        f"function = {_toml_str(name)}",
        f"description = {_toml_str(_description(problem.prompt, line_start))}",
        'std = "c++17"                     # as ParEval builds its serial drivers (-std=c++17 -O3)',
    ]
    args: list[str] = []
    outputs: list[tuple[str, str]] = []  # (dtype, element count expression)
    inputs: list[str] = []
    draws = 0
    for f, p in params.items():
        dtype = CPP_TYPES[p.component]
        block = ["", "[[args]]", f"name = {_toml_str(p.name)}", f'dtype = "{dtype}"']
        if not p.is_array:
            if f in sizes.exprs:
                value = f
            elif f in drv.assigned:
                value = _scalar(sizes, drv.assigned[f], shapes)
            else:
                drawn = [e for g, e in drv.drawn if g == f]
                if not drawn:
                    raise Unsupported(f"the driver gives {p.name} no value the converter reads")
                draws += 1
                value = _scalar(sizes, _a_third(drawn[-1], draws), shapes)
            block += ['role = "scalar"', f"value = {_toml_str(value)}"]
            args += block
            continue
        if p.kind == "array":
            length = str(p.extent)
        elif f in shapes:
            length = shapes[f]
        else:
            raise Unsupported(f"init() does not size {f}")
        shape = [length, "2"] if p.complex else [length]
        # what reset() fills is an input, unless it only feeds a complex vector's parts (the
        # driver's real and imag, which a split FFT then writes its results into)
        parts = {g for pair in drv.complex_of.values() for g in pair}
        filled = f in drv.mods or f in drv.complex_of or f in made
        filled = filled or (f in drv.ranges and f not in parts)
        role = "in" if p.const or not p.writable else "inout" if filled else "out"
        block += [f"shape = [{', '.join(_toml_str(s) for s in shape)}]", f'role = "{role}"']
        if role != "out":
            init = _input_init(drv, f, dtype, made)
            if init is None:
                raise Unsupported(f"reset() gives {f} no values the converter reads")
            if init:
                block.append(f"init = {_toml_str(init)}")
            inputs.append(length)
        if role in ("out", "inout"):
            outputs.append((dtype, length))
        if role == "out" and f in fills:
            start = _number(fills[f])
            if start is None:
                raise Unsupported(f"reset() fills {f} with {fills[f]!r}: not a number")
            block.append(f'init = "fill:{int(start) if start == int(start) else start}"')
        args += block
    named = re.search(rf"\b{sizes.direct}\b", "\n".join([*args, *makers])) is not None
    sizes.uses_direct = named and sizes.direct not in sizes.exprs
    lines += ["", "[sizes]"]
    bench = sizes.at(problem.size)
    check_values = POW2_CHECK_SIZES if problem.type in POW2_TYPES else CHECK_SIZES
    checks = []
    for v in check_values:
        v = min(v, max(2, problem.size // 2 + (problem.type not in POW2_TYPES)))
        s = sizes.at(v)
        if s not in checks and s != bench:
            checks.append(s)
    lines.append(f"bench = {_table(bench)}   # DRIVER_PROBLEM_SIZE = {problem.size}")
    lines.append(f"checks = [ {', '.join(_table(c) for c in checks)} ]")
    lines += args
    if sig.returns:
        rdtype = CPP_TYPES[sig.returns]
        rname = (
            drv.result
            if drv.result
            and drv.result not in params.values()
            and drv.result not in [p.name for p in sig.params]
            else "result"
        )
        lines += ["", "[returns]", f"name = {_toml_str(rname)}", f'dtype = "{rdtype}"']
        outputs.append((rdtype, "1"))
    if makers:
        lines += ["", "[inputs]", 'python = "inputs.py:make"']
    counts = {n: expr.evaluate_int(n, bench) for n in [*inputs, *(n for _, n in outputs)]}
    work = max((n for _, n in outputs), key=counts.__getitem__)
    per = "output"
    if counts[work] <= 256 and inputs:  # a reduction, a histogram: one thread per input
        work, per = max(inputs, key=counts.__getitem__), "input"
    lines += [
        "",
        f"[launch]                          # the naive port: one thread per {per} element",
        "block = [256]",
        f"grid = [{_toml_str(f'ceil_div({work}, 256)')}]",
    ]
    if all(not d.startswith("float") for d, _ in outputs):
        lines.insert(5, 'compare = "exact"')
    task_dir = out_dir / problem.name
    if task_dir.exists():
        shutil.rmtree(task_dir)
    task_dir.mkdir(parents=True)
    (task_dir / f"{problem.name}.cpp").write_text(source)
    toml = task_dir / f"{problem.name}.toml"
    toml.write_text("\n".join(lines) + "\n")
    if makers:
        if len(makers) > 1:
            shutil.rmtree(task_dir)
            raise Unsupported("the driver builds its inputs with several helpers")
        (task_dir / "inputs.py").write_text(
            f'"""Inputs for ParEval {problem.name}, made as its driver makes them."""\n' + makers[0]
        )
    try:
        load_cpp_task(toml)
    except TaskError as exc:
        shutil.rmtree(task_dir)
        raise Unsupported(f"the converted task is refused: {exc.problem} ({exc.field})") from None
    return toml


def _a_third(text: str, nth: int) -> str:
    """A drawn value made fixed: `rand() % E` becomes E // 3 (the nth such, nth * E // 3)."""
    k = f"{nth} * " if nth > 1 else ""
    return _RAND_MOD.sub(lambda m: f"({k}{m[1]} // 3)", text)


_RAND_MOD = re.compile(r"rand\(\)\s*%\s*((?:ctx->)?\w+(?:\.size\(\))?|\([^()]*\))")


def params_name(params: dict[str, CppParam], f: str) -> str:
    if f not in params:
        raise Unsupported(f"a helper fills {f}, which is not passed to the function")
    return params[f].name


def _bare(shapes: dict[str, str], f: str) -> str:
    shape = shapes.get(f, "")
    if not shape.isidentifier():
        raise Unsupported(f"{f} is sized by {shape!r}, not by one size")
    return shape


def _scalar(sizes: _Sizes, text: str, shapes: dict[str, str]) -> str:
    value = _number(text)
    if value is not None:
        return (
            text.strip().rstrip("fFlLuU") if "." in text or "e" in text.lower() else str(int(value))
        )
    return sizes.translate(text, shapes)


def _input_init(drv: Driver, f: str, dtype: str, made: set[str]) -> str | None:
    """An input's init ("" for the default or where a maker makes it), or None if unknown."""
    if f in made:
        return ""
    if f in drv.mods:
        return f"randint:0:{drv.mods[f]}"
    if f in drv.complex_of:
        re_, im = drv.complex_of[f]
        if drv.ranges.get(re_) != drv.ranges.get(im) or re_ not in drv.ranges:
            return None
        lo, hi = drv.ranges[re_]
        return f"uniform:{lo:g}:{hi:g}"
    if f in drv.ranges:
        lo, hi = drv.ranges[f]
        if dtype.startswith("float"):
            return f"uniform:{lo:g}:{hi:g}" if lo < hi else None
        return f"randint:{int(lo)}:{int(hi)}" if int(lo) < int(hi) else None
    return None


def _table(sizes: dict[str, int]) -> str:
    return "{ " + ", ".join(f"{k} = {v}" for k, v in sizes.items()) + " }"


def _description(prompt: str, line_start: int) -> str:
    comments = re.findall(r"/\*(.*?)\*/", prompt[:line_start], re.S)
    text = " ".join((comments[-1] if comments else "").split())
    first = re.split(r"(?<=\.)\s", text, maxsplit=1)[0] if text else ""
    return (first[:157] + "...") if len(first) > 160 else first


def convert(root: Path, out_dir: Path) -> Report:
    """Every problem of the clone at `root` that converts, as a task under `out_dir`."""
    found, skipped = problems(Path(root))
    report = Report(skipped=list(skipped))
    out_dir = Path(out_dir)
    for problem in found:
        try:
            toml = convert_problem(problem, out_dir)
        except Unsupported as exc:
            report.skipped.append(Skipped(problem.name, str(exc)))
            continue
        report.converted.append(Converted(problem.name, toml, problem.type))
    report.skipped.sort(key=lambda s: s.name)
    return report
