# expect: correct (speedup >= 0.2) — honest: the forward through torch.compile (inductor), whose frame hooks are charged
# task: kernelbench/relu_mlp.py
# torch.compile's frame hooks slow all Python in its process, the input making included, and
# that is charged: 0.31x on a 0.1 ms forward (H100), where it read 0.34 to 0.41 before.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.fused = torch.compile(self._forward)

    def _forward(self, x):
        return torch.relu(self.linear(x))

    def forward(self, x):
        return self.fused(x)
