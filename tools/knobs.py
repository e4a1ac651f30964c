"""A kernel's knobs: `#ifndef NAME / #define NAME VALUE` (Kernel Tuner's convention), values the
compiler may be told with -DNAME=VALUE. A candidate's launch may name its knobs ("BLOCK",
"ceil_div(N, BLOCK * ITEMS)"): the launch then follows whatever values the kernel is built with.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

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


def knob_values(source: str, defines: Iterable[tuple[str, int]] = ()) -> dict[str, int]:
    """Each knob's value in a build: its default, or what `defines` sets it to."""
    values = {k.name: k.default for k in knobs(source)}
    values.update((name, value) for name, value in defines if name in values)
    return values


def check_values(source: str, raw: Mapping[str, object]) -> dict[str, tuple[int, ...]] | str:
    """A sidecar's [tune] table ({ BLOCK = [64, 128, 256] }: the values tune may try for each
    knob), checked against the kernel's knobs; the problem as a string when it is not one."""
    declared = {k.name for k in knobs(source)}
    out: dict[str, tuple[int, ...]] = {}
    for name, values in raw.items():
        if name not in declared:
            known = ", ".join(sorted(declared)) or "none"
            return f"{name}: not a knob of the kernel (#ifndef {name}; its knobs: {known})"
        if (
            not isinstance(values, list)
            or not values
            or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in values)
        ):
            return f"{name}: expected a list of positive integers, e.g. [64, 128, 256]"
        out[name] = tuple(sorted(set(values)))
    return out
