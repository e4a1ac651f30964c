"""What `kernelwright tune` searches, and what it keeps: the part of a kernel's speed the compiler
and the launch leave open (after CuAsmRL, which searched SASS schedules; no maintained assembler
reaches sm_90, so here the knobs are the compiler's and the launch's).

The space: the kernel's own `#ifndef NAME` knobs (Kernel Tuner's convention), a register cap,
the ptxas level, and, where asked, the numeric approximations; a configuration whose machine
code is the same as one already in the space is dropped before any GPU time is spent on it. The
rule: a configuration is kept only if it is correct and at least 2% faster than the best so far,
with spreads that do not overlap.
"""

from __future__ import annotations

import hashlib
import itertools
import re
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from .results import CheckReport, CompileResult
from .spec import CompileOptions

GAIN = 1.02  # kept only if at least this much faster than the best so far
REGISTER_CAPS = (32, 64, 96, 128, 168, 255)
PTXAS_LEVELS = (1, 2)  # 3 is the default
_KNOB = re.compile(
    r"^[ \t]*#[ \t]*ifndef[ \t]+([A-Z][A-Z0-9_]*)[ \t]*\n"
    r"[ \t]*#[ \t]*define[ \t]+\1[ \t]+(\d+)[ \t]*$",
    re.M,
)


@dataclass(frozen=True)
class Knob:
    """A `#ifndef NAME / #define NAME VALUE` in the kernel: a value tune may set with -D."""

    name: str
    default: int

    def values(self) -> tuple[int, ...]:
        """The default and its neighbours by powers of two (Kernel Tuner's usual grid)."""
        d = self.default
        around = [d // 4, d // 2, d, d * 2, d * 4] if d > 1 else [1, 2, 4, 8]
        return tuple(sorted({v for v in around if v >= 1}))


def knobs(source: str) -> list[Knob]:
    """The kernel's tunable knobs, in the order the source declares them."""
    seen: dict[str, Knob] = {}
    for m in _KNOB.finditer(source):
        seen.setdefault(m.group(1), Knob(m.group(1), int(m.group(2))))
    return list(seen.values())


def space(source: str, *, numerics: bool = False, limit: int = 4096) -> list[CompileOptions]:
    """Every configuration to consider, the default first: each knob's values crossed with
    each other, then (one at a time, from the default knobs) the register caps, the ptxas
    levels and, with `numerics`, the approximations. At most `limit` knob combinations."""
    found = knobs(source)
    grids = [k.values() for k in found]
    default_defines = tuple((k.name, k.default) for k in found)
    configs = [CompileOptions()]
    for values in itertools.islice(itertools.product(*grids), limit):
        defines = tuple((k.name, v) for k, v in zip(found, values, strict=True))
        if defines != default_defines:
            configs.append(CompileOptions(defines=defines))
    configs += [CompileOptions(maxrregcount=r) for r in REGISTER_CAPS]
    configs += [CompileOptions(ptxas_level=level) for level in PTXAS_LEVELS]
    if numerics:
        configs += [
            CompileOptions(fast_math=True),
            CompileOptions(ftz=True),
            CompileOptions(prec_div=False, prec_sqrt=False),
        ]
    return configs


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


def fingerprint(result: CompileResult, cubin: bytes) -> str:
    """What decides how a build runs: its machine code and the resources it asks for."""
    resources = (result.registers, result.shared_mem_bytes, result.spill_stores_bytes)
    return hashlib.sha256(repr(resources).encode() + machine_code(cubin)).hexdigest()


RUNS = (b".text.", b".nv.constant", b".nv.global.init")  # the sections that decide what runs


Build = Callable[[CompileOptions], tuple[CompileResult, bytes | None]]


def distinct(
    configs: Iterable[CompileOptions], build: Build
) -> tuple[list[CompileOptions], list[tuple[CompileOptions, str]]]:
    """The configurations that build to code of their own, the first of each kind kept, and
    those dropped with why: `build` compiles one (on the CPU: no GPU time is spent here)."""
    kept: list[CompileOptions] = []
    dropped: list[tuple[CompileOptions, str]] = []
    seen: dict[str, CompileOptions] = {}
    for config in configs:
        result, cubin = build(config)
        if not result.ok or cubin is None:
            dropped.append((config, f"does not compile: {result.first_error}"))
            continue
        mark = fingerprint(result, cubin)
        if mark in seen:
            dropped.append((config, f"same code as {describe(seen[mark])}"))
            continue
        seen[mark] = config
        kept.append(config)
    return kept, dropped


def describe(config: CompileOptions) -> str:
    """A configuration as a person reads it: "TILE=8, maxrregcount 64", or "defaults"."""
    parts = [f"{n}={v}" for n, v in config.defines]
    if config.maxrregcount is not None:
        parts.append(f"maxrregcount {config.maxrregcount}")
    if config.ptxas_level is not None:
        parts.append(f"ptxas -O{config.ptxas_level}")
    if config.fast_math:
        parts.append("fast math")
    if config.ftz:
        parts.append("flush to zero")
    if not config.prec_div:
        parts.append("approximate division")
    if not config.prec_sqrt:
        parts.append("approximate sqrt")
    return ", ".join(parts) or "defaults"


def beats(report: CheckReport, best: CheckReport) -> bool:
    """Whether a checked configuration replaces the best: correct, at least 2% faster, and
    its spread (the interquartile range of the per-round speedups) clear of the best's."""
    if not report.ok or report.timing is None or best.timing is None:
        return False
    mine, theirs = report.timing, best.timing
    if mine.speedup < theirs.speedup * GAIN:
        return False
    return mine.speedup - mine.speedup_iqr / 2 > theirs.speedup + theirs.speedup_iqr / 2
