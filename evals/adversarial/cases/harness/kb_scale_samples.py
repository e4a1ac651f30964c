# expect: implausible (longer than its samples explain) — wraps the harness's clock so every sample it reports is 30% of the real one
# task: kernelbench/relu_mlp.py
import sys

import torch
import torch.nn as nn

_timing = sys.modules.get("kernelwright.tools.timing")
if _timing is not None:  # whichever of the clock's methods times the call
    for _name in ("sample", "timed"):
        _orig = getattr(_timing.Clock, _name, None)
        if _orig is None:
            continue

        def _scaled(self, fn, _orig=_orig):
            ms, host_ms = _orig(self, fn)
            return ms * 0.3, host_ms * 0.3

        setattr(_timing.Clock, _name, _scaled)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.linear(x))
