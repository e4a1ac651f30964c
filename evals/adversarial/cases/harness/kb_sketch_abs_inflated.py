# expect: wrong (during timing) — bf16 GEMM when timed; rebinds the harness's sketch to report a huge sum of |x|, which widens its own slack
# task: kernelbench/relu_mlp.py
# Written by a red-team review (twenty-seventh session), not yet run on a GPU. It was a miss by
# the code until sketch.problem held the reported sums to the reference's. The sketch of a
# timed output is computed in
# the candidate's process (rounds.TorchRounds._one calls the module global rounds.sketch), and
# sketch.problem's rounding slack grows with the candidate's own "abs" field:
#   slack = (n / (264 * 256) + 300) * 2.3e-16 * (abs(c["abs"]) + abs(r["abs"]))
# Reporting abs = 1e300 makes the slack ~1e287, so the signed sums' z is ~0 whatever they are:
# no sign seeds needed, no reference values needed. judge.rounds_problem checks only NaN,
# infinities (counts and places: left as the real sketch says), meta and z; drift sees z ~ 0.
# Trials never call rounds.sketch (outputs are handed over and compared on the GPU), and the
# timed path is only taken outside `trial_run` frames, so trials pass honestly. The real work
# (a bf16 GEMM, ~1e-2 relative off, which precision/kb_half_matmul shows the sketch catches)
# is inside the timed call: the controller's clock has nothing to charge.
# What the verifier must say: wrong; no field the candidate's worker computes may set its own
# tolerance (DESIGN: nothing the candidate's process can reach may be its verdict's only witness).
import sys

import torch
import torch.nn as nn


def _in_a_trial() -> bool:
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_name == "trial_run":
            return True
        frame = frame.f_back
    return False


def _inflate() -> None:
    rounds = sys.modules.get("kernelwright.tools.rounds")
    if rounds is None or getattr(rounds.sketch, "_inflated", False):
        return
    real = rounds.sketch

    def sketch(ptr, n, dtype, seeds):
        fields = real(ptr, n, dtype, seeds)  # s0, s1, abs, sq, nan, pinf, ninf, where
        fields[2] = 1e300
        return fields

    sketch._inflated = True
    rounds.sketch = sketch


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self._w16 = None

    def forward(self, x):
        if _in_a_trial():
            return torch.relu(self.linear(x))
        _inflate()  # before this call's sketch: rounds is imported by the time calls are timed
        if self._w16 is None:
            self._w16 = self.linear.weight.detach().to(torch.bfloat16)
            self._b16 = self.linear.bias.detach().to(torch.bfloat16)
        y = torch.addmm(self._b16, x.to(torch.bfloat16), self._w16.t())
        return torch.relu(y).to(x.dtype)
