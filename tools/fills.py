"""An argument's init "fill:V" (every element V), read the same by the C++ side's generator
(cpp_inputs) and the GPU's (runners), which import nothing of each other's for it."""

from __future__ import annotations

from typing import Any


def fill_value(init: str) -> float | int | None:
    """V of an init "fill:V" (an int where V is one), else None."""
    if not isinstance(init, str) or not init.startswith("fill:"):
        return None
    text = init[5:]
    try:
        return int(text)
    except ValueError:
        return float(text)


def is_fill(init: Any) -> bool:
    """Whether `init` is a well-formed "fill:V" (V an integer, a number, inf or nan)."""
    try:
        return fill_value(init) is not None
    except ValueError:
        return False
