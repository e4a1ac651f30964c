"""Read a kernel's parameter list from its source, so a task or candidate that does not match
the declared arguments is refused before anything runs."""

from __future__ import annotations

import re
from dataclasses import dataclass

# C spellings of each dtype a task may declare.
C_TYPES: dict[str, frozenset[str]] = {
    "float16": frozenset({"half", "__half"}),
    "float32": frozenset({"float"}),
    "float64": frozenset({"double"}),
    "int8": frozenset({"char", "signed char", "int8_t"}),
    "uint8": frozenset({"unsigned char", "uint8_t"}),
    "int16": frozenset({"short", "short int", "int16_t"}),
    "int32": frozenset({"int", "int32_t", "signed int"}),
    "int64": frozenset({"long long", "long long int", "int64_t", "long"}),
    "uint32": frozenset({"unsigned", "unsigned int", "uint32_t"}),
    "uint64": frozenset({"unsigned long long", "unsigned long long int", "uint64_t", "size_t"}),
}
_QUALIFIERS = {"const", "__restrict__", "__restrict", "restrict", "volatile", "__grid_constant__"}


@dataclass(frozen=True)
class Param:
    name: str
    ctype: str  # base type without qualifiers, e.g. "float"
    pointer: bool


def strip_comments(source: str) -> str:
    source = re.sub(r"/\*.*?\*/", " ", source, flags=re.S)
    return re.sub(r"//[^\n]*", " ", source)


_BOUNDS = r"(?:__launch_bounds__\s*\([^)]*\)\s*)?"


def _extern_c_blocks(text: str) -> list[tuple[int, int]]:
    """Spans of `extern "C" { ... }` blocks (braces matched)."""
    spans = []
    for m in re.finditer(r'extern\s+"C"\s*\{', text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        spans.append((m.end(), i))
    return spans


def find_params(source: str, entry: str) -> list[Param] | None:
    """The parameters of the kernel `entry` with C linkage (`extern "C" __global__ void
    entry(...)`, or `__global__ void entry(...)` inside an `extern "C" { }` block), or None."""
    text = strip_comments(source)
    name = re.escape(entry) + r"\s*\(([^)]*)\)"
    prefixed = (
        r'extern\s+"C"\s+' + _BOUNDS + r"__global__\s+" + _BOUNDS + r"void\s+" + _BOUNDS + name
    )
    alt = r'__global__\s+extern\s+"C"\s+void\s+' + name
    match = re.search(prefixed, text) or re.search(alt, text)
    if match is None:
        blocks = _extern_c_blocks(text)
        for m in re.finditer(r"__global__\s+" + _BOUNDS + r"void\s+" + _BOUNDS + name, text):
            if any(lo <= m.start() < hi for lo, hi in blocks):
                match = m
                break
    if not match:
        return None
    body = match.group(match.lastindex or 1).strip()
    if body in ("", "void"):
        return []
    params = []
    for raw in body.split(","):
        raw = raw.replace("*", " * ").strip()
        tokens = [t for t in raw.split() if t not in _QUALIFIERS]
        pointer = "*" in tokens
        tokens = [t for t in tokens if t != "*"]
        name = tokens[-1] if len(tokens) > 1 else ""
        params.append(Param(name=name, ctype=" ".join(tokens[:-1]), pointer=pointer))
    return params


def is_global_kernel(source: str, entry: str) -> bool:
    """True if entry is a __global__ function, extern "C" or not (for a clearer error)."""
    text = strip_comments(source)
    # declaration by declaration (no ';' or '{' inside one), each looked through once: the one
    # pattern over the whole text backtracked from every `__global__` (quadratic time)
    named = re.compile(r"\b" + re.escape(entry) + r"\s*\(")
    for part in re.split(r"[;{]", text):
        at = part.find("__global__")
        if at >= 0 and named.search(part, at + len("__global__")):
            return True
    return False


def ctype_matches(ctype: str, dtype: str) -> bool:
    return ctype in C_TYPES.get(dtype, frozenset())
