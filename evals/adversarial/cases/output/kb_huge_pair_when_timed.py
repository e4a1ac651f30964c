# expect: wrong (during timing) — timed calls return zeros plus +3e38 and -3e38 where the round's signs agree: its own |x| widens the sketch's slack
# task: kernelbench/relu_mlp.py
# Written by a red-team review (twenty-seventh session), not yet run on a GPU. It was a miss by
# the code: sketch.problem's slack for float64 rounding was
#   (n / (264 * 256) + 300) * 2.3e-16 * (abs(c["abs"]) + abs(r["abs"]))
# and c["abs"] is the sum of |x| over the CANDIDATE's own output. Two finite float32 values of
# +-3e38 make it ~6e38, so the slack is ~4e25, and any error in the signed sums is z ~ 0. The
# pair itself cancels in both signed sums when it sits where w0 and w1 agree; the signs come
# from the round's sign seeds, which are on the worker's stack while the call runs
# (rounds.TorchRounds._one's `signs`), and kw_mix is public (kernels.py, sketch.sketch_of).
# Inside each block's float64 partial sum everything else is absorbed by +-3e38 and the two
# partials cancel exactly, so s0, s1 land near 0 whatever the rest is. judge.rounds_problem
# then sees no NaN, no infinities, meta equal, z ~ 0 in every call, drift ~ 0: every timed call
# passes, while the output is zeros. Trials and post-timing trials (frame `trial_run`) are
# computed honestly and compared element by element (devcompare), so they pass too.
# What the verifier must say: every timed output is compared (DESIGN principles), and this one
# is wrong in every element. Since then the slack comes from the reference's |x| alone, and
# the candidate's sums of |x| and x^2 are held to the reference's (sketch.problem): caught there.
# Gain: the timed call is a torch.zeros and two element writes (~tens of us of host dispatch)
# against a GEMM + bias + relu: several x, far above the roofline floor (~1 us), so not
# "implausible" either.
import sys

import torch
import torch.nn as nn

_M64 = (1 << 64) - 1
_HUGE = 3.0e38  # finite in float32 (max 3.4028e38)


def _mix(z: int) -> int:  # kernels.py kw_mix / sketch.sketch_of's mix (splitmix64)
    z = (z + 0x9E3779B97F4A7C15) & _M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return z ^ (z >> 31)


def _sign(seed: int, i: int) -> int:
    return 1 if _mix((seed & _M64) ^ _mix(i)) & 1 else -1


def _timed_signs():
    """The sign seeds of the timed call under way (rounds.TorchRounds._one), None in a trial."""
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_code.co_name
        if name == "trial_run":
            return None
        signs = frame.f_locals.get("signs") if name in ("_one", "round") else None
        if isinstance(signs, tuple) and len(signs) == 2:
            return int(signs[0]), int(signs[1])
        frame = frame.f_back
    return None


def _pair(signs):
    """Two element indices where both sign seeds give the same sign: a +M/-M there cancels."""
    first = {}
    for i in range(64):  # four classes: two of 64 indices share one, almost surely
        key = (_sign(signs[0], i), _sign(signs[1], i))
        if key in first:
            return first[key], i
        first[key] = i
    return 0, 1


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        signs = _timed_signs()
        if signs is None:  # a trial (before or after the timing): right, element by element
            return torch.relu(self.linear(x))
        i, j = _pair(signs)
        y = torch.zeros(x.shape[0], self.linear.out_features, device=x.device, dtype=x.dtype)
        flat = y.view(-1)
        flat[i] = _HUGE
        flat[j] = -_HUGE
        return y
