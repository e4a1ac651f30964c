# expect: wrong (during timing) — returns its previous output on every other call: some rounds cheat, hoping those go unchecked
# task: kernelbench/relu_mlp.py
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    calls = 0

    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.last = None

    def forward(self, x):
        ModelNew.calls += 1
        if ModelNew.calls % 2 == 0 and self.last is not None and self.last.shape[0] == x.shape[0]:
            return self.last
        self.last = torch.relu(self.linear(x))
        return self.last
