# expect: wrong (wrong at) — below the problem's batch, runs the layer in half precision
# task: kernelbench/relu_mlp.py
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        if x.shape[0] < 128:
            return torch.relu(self.linear.half()(x.half())).float()
        return torch.relu(self.linear.float()(x))
