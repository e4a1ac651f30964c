"""Between timed calls, never inside a timed window: fresh input contents every round, the
candidate's outputs poisoned before each call and checked after it, and the reference's
outputs hidden from the candidate. Runs in the worker.

Fresh contents defeat results cached by pointer or by content (a few elements of each input
change every round, copied from elsewhere in the same input so their distribution holds);
the poison catches a kernel that skips work once it is being timed; the comparison catches
one that computes something cheaper.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .correctness import UINT, poison_bits, tolerance
from .timing import RoundHooks

PERTURBED = 64  # elements of each input changed per round


def positions(seed: int, r: int, index: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Where round r copies elements to and from in input `index`: the same in every worker."""
    rng = np.random.default_rng([seed, r, index])
    m = min(PERTURBED, n)
    # Distinct targets: a scatter with repeated targets keeps an arbitrary one of the values,
    # which could differ between the reference's worker and the candidate's.
    return rng.choice(n, m, replace=False), rng.integers(0, n, m)


def perturb_cupy(arrays: Sequence[Any], seed: int, r: int) -> None:
    import cupy

    for i, a in enumerate(arrays):
        flat = a.reshape(-1)
        dst, src = positions(seed, r, i, flat.size)
        flat[cupy.asarray(dst)] = flat[cupy.asarray(src)]


def perturb_torch(inputs: Sequence[Any], seed: int, r: int) -> None:
    import torch

    with torch.no_grad():
        for i, t in enumerate(inputs):
            if not isinstance(t, torch.Tensor) or t.numel() == 0 or not t.is_contiguous():
                continue
            flat = t.view(-1)
            dst, src = positions(seed, r, i, flat.numel())
            flat[torch.from_numpy(dst).to(t.device)] = flat[torch.from_numpy(src).to(t.device)]


_MISMATCH: Any = None


def _mismatch_kernel() -> Any:
    global _MISMATCH
    if _MISMATCH is None:
        import cupy

        _MISMATCH = cupy.ReductionKernel(
            "T c, T r, float64 atol, float64 rtol",
            "int64 bad",
            "(c == r || fabs((double)c - (double)r) <= atol + rtol * fabs((double)r)) ? 0 : 1",
            "a + b",
            "bad = a",
            "0",
            "kw_timed_mismatch",
        )
    return _MISMATCH


class CudaTimedChecks(RoundHooks):
    """The hooks for a CUDA task's timing rounds (reference "ref", candidate "cand").

    `pristine[k]` holds input set k (role in and inout); `sides["ref"][k]` and
    `sides["cand"][k]` are the arrays each kernel is bound to: the same `in` arrays, their own
    copies of `inout` ones, their own outputs.
    """

    def __init__(
        self,
        task: Any,
        pristine: list[dict[str, Any]],
        sides: dict[str, list[dict[str, Any]]],
        poison: int,
        seed: int,
    ) -> None:
        import cupy

        self.pristine, self.sides, self.poison, self.seed = pristine, sides, poison, seed
        self.inputs = [a.name for a in task.args if a.role in ("in", "inout")]
        self.inouts = [a.name for a in task.args if a.role == "inout"]
        self.outs = [a.name for a in task.args if a.role == "out"]
        self.tol = {}
        for a in task.args:
            if a.role in ("out", "inout"):
                atol, rtol = tolerance(a.dtype, task.atol, task.rtol)
                self.tol[a.name] = (np.float64(2.1 * atol), np.float64(2.1 * rtol))
        zero = lambda: cupy.zeros((), dtype=cupy.int64)  # noqa: E731 - counts stay on the GPU
        self.counts = {
            name: {kind: zero() for kind in ("unwritten", "unwritten_calls", "mismatched")}
            | {"mismatched_calls": zero()}
            for name in self.tol
        }
        self.calls = self.checked = 0

    def _poison(self, arrays: dict[str, Any], names: Sequence[str]) -> None:
        for name in names:
            a = arrays[name]
            a.view(UINT[a.dtype.itemsize]).fill(poison_bits(str(a.dtype), self.poison))

    def start(self, r: int, k: int, order: Sequence[str]) -> None:
        perturb_cupy([self.pristine[k][n] for n in self.inputs], self.seed, r)
        for side in self.sides.values():
            for name in self.inouts:
                side[k][name][...] = self.pristine[k][name]
            self._poison(side[k], self.outs)

    def after(self, name: str, r: int, k: int, order: Sequence[str]) -> None:
        import cupy

        ref, cand = self.sides["ref"][k], self.sides["cand"][k]
        if name == "cand":
            self.calls += 1
            for out in self.outs:
                a = cand[out]
                bits = UINT[a.dtype.itemsize](poison_bits(str(a.dtype), self.poison))
                n = cupy.count_nonzero(a.view(UINT[a.dtype.itemsize]) == bits)
                self.counts[out]["unwritten"] += n
                self.counts[out]["unwritten_calls"] += n > 0
        elif order[0] == "ref":  # the candidate runs next: it must not find the answer in memory
            self._poison(ref, [*self.outs, *self.inouts])
        else:  # the candidate ran first on these inputs: compare
            self.checked += 1
            for out, (atol, rtol) in self.tol.items():
                bad = _mismatch_kernel()(cand[out], ref[out], atol, rtol)
                self.counts[out]["mismatched"] += bad
                self.counts[out]["mismatched_calls"] += bad > 0
            self._poison(ref, [*self.outs, *self.inouts])

    def report(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "checked": self.checked,
            "outputs": {
                name: {kind: int(v.get()) for kind, v in counts.items()}
                for name, counts in self.counts.items()
            },
        }
