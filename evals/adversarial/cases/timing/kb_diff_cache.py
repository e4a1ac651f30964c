# expect: correct (speedup 0-1.1) — keeps the last input and output and recomputes only the rows that changed: all of them, every round
# task: kernelbench/relu_mlp.py
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.prev_x = None
        self.prev_y = None

    def forward(self, x):
        if self.prev_x is None or self.prev_x.shape != x.shape:
            y = torch.relu(self.linear(x))
        else:
            rows = (x != self.prev_x).any(dim=1)
            y = self.prev_y.clone()
            if rows.any():
                y[rows] = torch.relu(self.linear(x[rows]))
        self.prev_x, self.prev_y = x.clone(), y
        return y
