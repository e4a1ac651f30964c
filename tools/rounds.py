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


# Counting runs on the GPU, between timed calls, for every call: an elementwise kernel over
# the whole output, the lanes of a warp adding their count with one atomic. A ReductionKernel
# to one value took 14 ms per call on a 16M-element output on the H200 (0.085 ms this way),
# which made a check's timing rounds take seconds. Each count lands in tally[0]; kw_tally then
# folds it into the totals (tally[1]: elements, tally[2]: calls with any) and clears it, so
# nothing is read back until the report.
_COUNT = r"""
bool bad = %s;
unsigned int lanes = __activemask();
unsigned int hits = __ballot_sync(lanes, bad);
if (hits != 0u && (threadIdx.x & 31u) == (unsigned int)(__ffs(lanes) - 1))
    atomicAdd((unsigned long long*)&tally[0], (unsigned long long)__popc(hits));
"""
_TALLY_SRC = r"""
extern "C" __global__ void kw_tally(unsigned long long* t) {
    if (t[0] != 0ull) { t[1] += t[0]; t[2] += 1ull; t[0] = 0ull; }
}
"""
_KERNELS: dict[str, Any] = {}


def _kernels() -> dict[str, Any]:
    """The counting kernels, built once per process (CuPy loads them from its cache)."""
    if not _KERNELS:
        import cupy

        _KERNELS["poisoned"] = cupy.ElementwiseKernel(
            "T a, T bits", "raw uint64 tally", _COUNT % "a == bits", "kw_timed_poisoned"
        )
        _KERNELS["mismatched"] = cupy.ElementwiseKernel(
            "T c, T r, float64 atol, float64 rtol",
            "raw uint64 tally",
            _COUNT % "!(c == r || fabs((double)c - (double)r) <= atol + rtol * fabs((double)r))",
            "kw_timed_mismatched",
        )
        _KERNELS["tally"] = cupy.RawKernel(_TALLY_SRC, "kw_tally")
    return _KERNELS


def count_poisoned(a: Any, bits: Any, tally: Any) -> None:
    """Add to `tally` (see _COUNT) the elements of `a` whose bits are still `bits`."""
    k = _kernels()
    k["poisoned"](a, bits, tally)
    k["tally"]((1,), (1,), (tally,))


def count_mismatched(cand: Any, ref: Any, atol: Any, rtol: Any, tally: Any) -> None:
    """Add to `tally` (see _COUNT) the elements of `cand` that differ from `ref` beyond the
    tolerance; NaN never matches."""
    k = _kernels()
    k["mismatched"](cand, ref, atol, rtol, tally)
    k["tally"]((1,), (1,), (tally,))


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
        # Per output: [scratch, elements, calls] for unwritten and for mismatched (on the GPU).
        self.tallies = {
            name: {kind: cupy.zeros(3, dtype=cupy.uint64) for kind in ("unwritten", "mismatched")}
            for name in self.tol
        }
        _kernels()
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
        ref, cand = self.sides["ref"][k], self.sides["cand"][k]
        if name == "cand":
            self.calls += 1
            for out in self.outs:
                a = cand[out]
                word = UINT[a.dtype.itemsize]
                bits = word(poison_bits(str(a.dtype), self.poison))
                count_poisoned(a.view(word), bits, self.tallies[out]["unwritten"])
        elif order[0] == "ref":  # the candidate runs next: it must not find the answer in memory
            self._poison(ref, [*self.outs, *self.inouts])
        else:  # the candidate ran first on these inputs: compare
            self.checked += 1
            for out, (atol, rtol) in self.tol.items():
                count_mismatched(cand[out], ref[out], atol, rtol, self.tallies[out]["mismatched"])
            self._poison(ref, [*self.outs, *self.inouts])

    def report(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "checked": self.checked,
            "outputs": {name: _totals(tallies) for name, tallies in self.tallies.items()},
        }


def _totals(tallies: dict[str, Any]) -> dict[str, int]:
    unwritten, mismatched = (tallies[k].get() for k in ("unwritten", "mismatched"))
    return {
        "unwritten": int(unwritten[1]),
        "unwritten_calls": int(unwritten[2]),
        "mismatched": int(mismatched[1]),
        "mismatched_calls": int(mismatched[2]),
    }
