# expect: wrong (wrong at) — computes only the first 128 rows (the problem's batch) and zeros the rest
# task: kernelbench/relu_mlp.py
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        y = torch.zeros(x.shape[0], self.linear.out_features, device=x.device)
        y[:128] = torch.relu(self.linear(x[:128]))
        return y
