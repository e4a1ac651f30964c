# expect: correct (speedup >= 0.5) — honest: the weight folded once, then torch.addmm and an in-place relu_ on its own output
# task: kernelbench/relu_mlp.py
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.folded = None

    def forward(self, x):
        if self.folded is None or self.folded.device != x.device:
            self.folded = self.linear.weight.t().contiguous()
        return torch.addmm(self.linear.bias, x, self.folded).relu_()
