"""A task's input maker (`[inputs]`): a Python function `make(np, rng, sizes)` of the user's
that makes some of a trial's inputs with structure the verifier's generator cannot give (a
symmetric adjacency matrix, a solvable linear system). The C++ reference's worker and both GPU
workers call it alike, from the trial's seed, so all three see the same bits. NumPy only here:
runners.py (CuPy) and cpp_inputs.py (no GPU) both import it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

Maker = Callable[..., Mapping[str, Any]]


class MakerError(ValueError):
    """An input maker that failed or returned something else than the inputs it may make."""


def load_maker(source: str, func: str) -> Maker:
    """The input maker `func` of an inputs.py sent as text (a worker's view shows none of the
    user's files), its module run as kw_inputs."""
    import sys
    import types

    module = types.ModuleType("kw_inputs")
    module.__file__ = "kw_inputs.py"
    sys.modules["kw_inputs"] = module
    exec(compile(source, "kw_inputs.py", "exec"), module.__dict__)
    maker = getattr(module, func, None)
    if not callable(maker):
        raise MakerError(f"the input maker's file has no function {func}()")
    return maker


def made_inputs(
    maker: Maker,
    func: str,
    args: Any,
    shape_of: Callable[[Any], tuple[int, ...]],
    sizes: Mapping[str, int],
    seed: int,
) -> dict[str, np.ndarray]:
    """What the input maker gives for a trial of `seed` at `sizes`: its arrays by argument
    name, checked against the in/inout `args` and cast to their dtypes. The C++ reference's
    worker and both GPU workers call it alike, so all three see the same bits."""
    wanted = {a.name: a for a in args if a.role in ("in", "inout")}
    try:
        given = maker(np, np.random.default_rng(seed), dict(sizes))
    except Exception as exc:
        raise MakerError(f"the input maker {func}() failed: {type(exc).__name__}: {exc}") from exc
    if not isinstance(given, Mapping):
        raise MakerError(f"the input maker {func}() must return a dict of arrays")
    made = {}
    for name, value in given.items():
        if name not in wanted:
            raise MakerError(f"the input maker {func}() returned {name!r}: not an input")
        arr = np.asarray(value)
        want = shape_of(wanted[name])
        if arr.shape != want:
            raise MakerError(
                f"the input maker {func}() returned {name} with shape {arr.shape}, expected {want}"
            )
        made[name] = np.ascontiguousarray(arr.astype(wanted[name].dtype))
    return made
