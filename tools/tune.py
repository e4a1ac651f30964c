"""What `kernelwright tune` searches, and what it keeps: the part of a kernel's speed the compiler
and the launch leave open (after CuAsmRL, which searched SASS schedules; no maintained assembler
reaches sm_90, so here the knobs are the compiler's and the launch's).

The space, one dimension each: the kernel's own `#ifndef NAME` knobs (Kernel Tuner's
convention; a launch that names them follows them), the block shape where the kernel does not
choose it through a knob (derived from the launch's expressions: see `derived_block`), a
register cap, the ptxas level, launch bounds given to ptxas (the block's threads and the fewest
blocks an SM should hold) and, where asked, the numeric approximations the task's tolerance
allows (`numerics`). A configuration whose machine code and launch are those of one already seen
is dropped before any GPU time is spent on it. The rule: a configuration is kept only if it is
correct and at least 2% faster than the best so far, with spreads that do not overlap.
"""

from __future__ import annotations

import hashlib
import math
import re
import struct
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from . import expr
from . import numerics as approximations
from .knobs import Knob, knob_values, knobs
from .results import CheckReport, CompileResult
from .search import Point
from .signature import strip_comments
from .spec import CompileOptions, CudaCandidate, CudaTask, LaunchSpec

__all__ = ["Knob", "knobs"]

GAIN = 1.02  # kept only if at least this much faster than the best so far
REGISTER_CAPS = (32, 64, 96, 128, 168, 255)
PTXAS_LEVELS = (1, 2)  # 3 is the default
# launch bounds: the fewest blocks an SM should hold (ptxas's --minnctapersm, with --maxntid the
# block's threads); ptxas fits the registers to them, and ignores both beside a register cap
# and for a kernel that declares its own __launch_bounds__ (neither is searched: the same code)
MIN_BLOCKS_PER_SM = (1, 2, 4, 8)
BLOCKS_1D = (64, 128, 256, 512, 1024)
BLOCKS_X = (8, 16, 32, 64, 128)  # a 2-D block's x (a warp's lanes run along x)
BLOCKS_Y = (1, 2, 4, 8, 16, 32)
MAX_THREADS = 1024  # a block's threads at most, on every GPU since Fermi
MIN_DERIVED_THREADS = 64  # a derived block shape's threads at least: two warps
MAX_BLOCK = (1024, 1024, 64)
MAX_GRID = (2**31 - 1, 65535, 65535)
_AXES = ("X", "Y", "Z")


@dataclass(frozen=True)
class Config:
    """One configuration: the options the kernel is built with and the launch it runs with
    (the candidate's own, or one derived for another block shape)."""

    options: CompileOptions
    launch: LaunchSpec | None
    block: tuple[int, ...] = ()  # the derived block shape, when the search sets it
    settings: tuple[tuple[str, Any], ...] = ()  # each dimension's value, as the memory keeps it

    def apply(self, candidate: CudaCandidate) -> CudaCandidate:
        return candidate.model_copy(update={"options": self.options, "launch": self.launch})

    def describe(self) -> str:
        """As a person reads it: "BLOCK=128, block 128x2, maxrregcount 64", or "defaults"."""
        text = describe(self.options)
        if self.block:
            shape = "block " + "x".join(map(str, self.block))
            text = shape if text == "defaults" else f"{shape}, {text}"
        return text


def describe(options: CompileOptions) -> str:
    """Compile options as a person reads them: "TILE=8, maxrregcount 64", or "defaults"."""
    parts = [f"{n}={v}" for n, v in options.defines]
    if options.maxrregcount is not None:
        parts.append(f"maxrregcount {options.maxrregcount}")
    if options.ptxas_level is not None:
        parts.append(f"ptxas -O{options.ptxas_level}")
    if options.max_threads_per_block is not None:
        bounds = (options.max_threads_per_block, options.min_blocks_per_sm)
        parts.append("launch bounds (" + ", ".join(str(b) for b in bounds if b) + ")")
    if options.fast_math:
        parts.append("fast math")
    if options.ftz:
        parts.append("flush to zero")
    if not options.prec_div:
        parts.append("approximate division")
    if not options.prec_sqrt:
        parts.append("approximate sqrt")
    return ", ".join(parts) or "defaults"


@dataclass(frozen=True)
class Dimension:
    name: str  # a knob's name, "block.x", "maxrregcount", "ptxas", "launch_bounds", "numerics"
    values: tuple[Any, ...]


def derived_block(launch: LaunchSpec, known: Iterable[str]) -> LaunchSpec | None:
    """The launch with its block made of names (BLOCK_X, BLOCK_Y) that the grid follows, when
    it can be told how: a block of whole numbers, a launch naming no knob (`known`: the sizes),
    and each tuned axis's grid dividing by that axis's own number ("ceil_div(N, 16)" becomes
    "ceil_div(N, BLOCK_X)"). An axis whose grid does not name its number keeps its block.
    None when no axis can be tuned: then the kernel's own knobs are the way (the launch names
    them)."""
    names = set().union(*(expr.names(e) for e in (*launch.block, *launch.grid)))
    if names - set(known) or not all(str(b).isdigit() for b in launch.block):
        return None
    block, grid = list(launch.block), list(launch.grid)
    for axis, b in enumerate(launch.block[:2]):
        if axis < len(grid) and (named := expr.name_constant(grid[axis], int(b), _name(axis))):
            block[axis], grid[axis] = _name(axis), named
    if block == list(launch.block):
        return None
    return LaunchSpec(
        block=tuple(block), grid=tuple(grid), shared_mem_bytes=launch.shared_mem_bytes
    )


def _name(axis: int) -> str:
    return f"BLOCK_{_AXES[axis]}"


@dataclass
class Space:
    """The configurations of one kernel: a grid of dimensions, the start's point in it."""

    task: CudaTask
    start: CudaCandidate
    dims: list[Dimension]
    origin: Point  # the start's own point
    template: LaunchSpec | None = None  # the derived launch, when the block is searched
    numerics: str = ""  # one line: which approximations are tried and why not the others
    _valid: dict[Point, str] = field(default_factory=dict)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(d.values) for d in self.dims)

    def config(self, point: Point) -> Config:
        chosen = {d.name: d.values[i] for d, i in zip(self.dims, point, strict=True)}
        defaults = {k.name: k.default for k in knobs(self.start.source)}
        options = self.start.options.model_dump()
        defines = dict(self.start.options.defines)
        for name in defaults:
            if name in chosen:
                defines[name] = chosen[name]
            if defines.get(name) == defaults[name]:
                del defines[name]  # the default needs no -D: the same build as the start's
        options["defines"] = tuple(defines.items())
        options["maxrregcount"] = chosen.get("maxrregcount", options["maxrregcount"])
        options["ptxas_level"] = chosen.get("ptxas", options["ptxas_level"])
        if "numerics" in chosen:
            options.update(fast_math=False, ftz=False, prec_div=True, prec_sqrt=True)
            options.update(approximations.NUMERICS[chosen["numerics"]])
        launch, block = self.start.launch, tuple[int, ...]()
        if self.template is not None:
            axes = [a for a in range(len(self.template.block)) if f"block.{'xyz'[a]}" in chosen]
            values = {_name(a): int(chosen[f"block.{'xyz'[a]}"]) for a in axes}
            launch = self.template.bind(values)
            block = tuple(int(b) for b in launch.block)
            if launch.block == (self.start.launch or self.task.launch).block:
                launch, block = self.start.launch, ()  # the start's own launch, as written
        if "launch_bounds" in chosen:  # the threads of this configuration's own block
            threads = block_threads(self.task, launch, self.start.source, defines.items())
            fits = chosen["launch_bounds"] is not None and 0 < (threads or 0) <= MAX_THREADS
            options["max_threads_per_block"] = threads if fits else None
            options["min_blocks_per_sm"] = chosen["launch_bounds"] if fits else None
        return Config(
            CompileOptions.model_validate(options), launch, block, tuple(sorted(chosen.items()))
        )

    def problem(self, point: Point) -> str:
        """Why a point is not tried ("" when it is): its block or grid out of the GPU's limits
        at some size, a launch that does not evaluate, or launch bounds that ptxas would ignore
        (beside a register cap: its --help says so)."""
        if point not in self._valid:
            config = self.config(point)
            o = config.options
            self._valid[point] = launch_problem(self.task, config.apply(self.start))
            if config.block and math.prod(config.block) < MIN_DERIVED_THREADS:
                self._valid[point] = f"block of {math.prod(config.block)} threads: too few"
            if o.max_threads_per_block is not None and o.maxrregcount is not None:
                self._valid[point] = "launch bounds beside a register cap: ptxas ignores them"
        return self._valid[point]

    def point(self, settings: Mapping[str, Any]) -> Point | None:
        """The point of a configuration kept elsewhere (the memory's), its dimensions this
        space lacks left at the start's; None when none of them is in this space."""
        point, matched = list(self.origin), False
        for axis, d in enumerate(self.dims):
            value = settings.get(d.name, _MISSING)
            if value is not _MISSING and value in d.values:
                point[axis], matched = d.values.index(value), True
        return tuple(point) if matched else None


_MISSING = object()


def block_threads(
    task: CudaTask, launch: LaunchSpec | None, source: str, defines: Iterable[tuple[str, int]]
) -> int | None:
    """The threads of each block `launch` starts (None: the task's), with the kernel's knobs at
    these values; None where the block names a size: a size held out could launch more than
    any bound taken from the known ones."""
    launch = (launch or task.launch).bind(knob_values(source, defines))
    try:
        return math.prod(expr.evaluate_int(b, {}) for b in launch.block)
    except expr.ExprError:  # a size's name (or a block that does not evaluate)
        return None


def space(task: CudaTask, candidate: CudaCandidate, *, numerics: bool = False) -> Space:
    """Every configuration of `candidate` to consider, as dimensions around its own values;
    `numerics`: the approximations too, those the task's tolerance allows."""
    dims: list[Dimension] = []
    current = knob_values(candidate.source, candidate.options.defines)
    limits = dict(candidate.tune_values)
    for knob in knobs(candidate.source):
        dims.append(_dim(knob.name, limits.get(knob.name) or knob.values(), current[knob.name]))
    launch = candidate.launch or task.launch
    template = derived_block(launch, task.bench)
    if template is not None:
        for axis, name in enumerate(template.block[:2]):
            if name == _name(axis):
                grid = BLOCKS_1D if len(template.block) == 1 else (BLOCKS_X, BLOCKS_Y)[axis]
                dims.append(_dim(f"block.{'xyz'[axis]}", grid, int(launch.block[axis])))
    o = candidate.options
    dims.append(_dim("maxrregcount", (None, *REGISTER_CAPS), o.maxrregcount))
    dims.append(_dim("ptxas", (None, *PTXAS_LEVELS), o.ptxas_level))
    threads = block_threads(task, candidate.launch, candidate.source, o.defines)
    own = (o.max_threads_per_block, o.min_blocks_per_sm)
    declared = re.search(r"\b__launch_bounds__\s*\(", strip_comments(candidate.source))
    # bounds set by hand otherwise than tune sets them (threads alone, or others) stay as they are
    if threads and not declared and (own == (None, None) or (own[0] == threads and own[1])):
        dims.append(_dim("launch_bounds", (None, *MIN_BLOCKS_PER_SM), o.min_blocks_per_sm))
    note = ""
    if numerics:
        allowed, note = approximations.allowed(task, candidate.source)
        now = approximations.now(o)
        if allowed or now != "exact":
            values = (n for n in approximations.NUMERICS if n in allowed or n in ("exact", now))
            dims.append(Dimension("numerics", tuple(values)))
    origin = tuple(_index(d, candidate, current, launch) for d in dims)
    return Space(task, candidate, dims, origin, template, note)


def _dim(name: str, values: Iterable[Any], start: Any) -> Dimension:
    """A dimension of these values and the start's, in order (None first)."""
    found = set(values) | {start}
    ordered = sorted((v for v in found if v is not None), key=lambda v: v)
    return Dimension(name, ((None,) if None in found else ()) + tuple(ordered))


def _index(d: Dimension, cand: CudaCandidate, knob_now: dict[str, int], launch: LaunchSpec) -> int:
    o = cand.options
    if d.name in knob_now:
        return d.values.index(knob_now[d.name])
    if d.name.startswith("block."):
        return d.values.index(int(launch.block["xyz".index(d.name[-1])]))
    if d.name == "numerics":
        return d.values.index(approximations.now(o))
    now = {"maxrregcount": o.maxrregcount, "ptxas": o.ptxas_level}
    return d.values.index({**now, "launch_bounds": o.min_blocks_per_sm}[d.name])


def launch_problem(task: CudaTask, candidate: CudaCandidate) -> str:
    """Why a candidate's launch cannot run at some size ("" when it can run at all of them)."""
    launch = candidate.bound_launch or task.launch
    for sizes in (task.bench, *task.checks):
        try:
            grid, block, _ = launch.resolve(sizes)
        except expr.ExprError as exc:
            return f"launch: {exc}"
        if any(b < 1 for b in block) or any(g < 1 for g in grid):
            return f"launch: block {block}, grid {grid} at {sizes}"
        if math.prod(block) > MAX_THREADS or any(
            b > m for b, m in zip(block, MAX_BLOCK, strict=False)
        ):
            return f"block of {'x'.join(map(str, block))} threads: more than the GPU takes"
        if any(g > m for g, m in zip(grid, MAX_GRID, strict=False)):
            return f"grid {grid} at {sizes}: more blocks than the GPU takes"
    return ""


def launch_key(task: CudaTask, candidate: CudaCandidate) -> str:
    """What a candidate launches at every size: with its machine code, what decides a run."""
    launch = candidate.bound_launch or task.launch
    return repr([launch.resolve(sizes) for sizes in (task.bench, *task.checks)])


def machine_code(cubin: bytes) -> bytes:
    """What runs from a cubin: its code (.text.*) and the data the code reads (constant banks,
    initialized globals), in order (an ELF64 file). What a compiler writes beside them (its
    options, line tables, a build id) does not change what runs."""
    if cubin[:4] != b"\x7fELF" or cubin[4] != 2:
        return cubin
    shoff = struct.unpack_from("<Q", cubin, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)

    def section(i: int) -> tuple[int, int, int]:  # name offset, file offset, size
        base = shoff + i * shentsize
        name = struct.unpack_from("<I", cubin, base)[0]
        offset, size = struct.unpack_from("<QQ", cubin, base + 0x18)
        return name, offset, size

    _, names_at, _ = section(shstrndx)
    out = []
    for i in range(shnum):
        name_at, offset, size = section(i)
        end = cubin.index(b"\0", names_at + name_at)
        if cubin[names_at + name_at : end].startswith(RUNS):
            out.append(cubin[offset : offset + size])
    return b"".join(out) if out else cubin


def fingerprint(result: CompileResult, cubin: bytes, launch: str = "") -> str:
    """What decides how a build runs: its machine code, the resources it asks for and (for the
    same code run with another block shape) its launch."""
    resources = (result.registers, result.shared_mem_bytes, result.spill_stores_bytes)
    return hashlib.sha256(repr((resources, launch)).encode() + machine_code(cubin)).hexdigest()


RUNS = (b".text.", b".nv.constant", b".nv.global.init")  # the sections that decide what runs


Build = Callable[[CompileOptions], tuple[CompileResult, bytes | None]]


class Distinct:
    """Configurations that build to code of their own: the first of each kind is new, the
    others are dropped with why. `build` compiles one (on the CPU: no GPU time is spent)."""

    def __init__(self, build: Build) -> None:
        self.build = build
        self.seen: dict[str, tuple[str, Any]] = {}  # fingerprint -> the first's name and tag

    def check(
        self, options: CompileOptions, launch: str = "", name: str = "", tag: Any = None
    ) -> tuple[str, Any]:
        """("", None) for a configuration new in what it runs; else why it is dropped, and
        the tag of the configuration it runs the same code as (None: it does not build)."""
        result, cubin = self.build(options)
        if not result.ok or cubin is None:
            return f"does not compile: {result.first_error}", None
        mark = fingerprint(result, cubin, launch)
        if mark in self.seen:
            first, twin = self.seen[mark]
            return f"same code as {first}", twin
        self.seen[mark] = (name or describe(options), tag)
        return "", None


def distinct(
    configs: Iterable[CompileOptions], build: Build
) -> tuple[list[CompileOptions], list[tuple[CompileOptions, str]]]:
    """The compile options that build to code of their own, the first of each kind kept, and
    those dropped with why."""
    seen = Distinct(build)
    kept: list[CompileOptions] = []
    dropped: list[tuple[CompileOptions, str]] = []
    for config in configs:
        why, _ = seen.check(config)
        if why:
            dropped.append((config, why))
        else:
            kept.append(config)
    return kept, dropped


def beats(report: CheckReport, best: CheckReport) -> bool:
    """Whether a checked configuration replaces the best: correct, at least 2% faster, and
    its spread (the interquartile range of the per-round speedups) clear of the best's."""
    if not report.ok or report.timing is None or best.timing is None:
        return False
    mine, theirs = report.timing, best.timing
    if mine.speedup < theirs.speedup * GAIN:
        return False
    return mine.speedup - mine.speedup_iqr / 2 > theirs.speedup + theirs.speedup_iqr / 2
