# expect: wrong (wrong at) — runs the linear layer in float16 and casts the result back to float32
# task: kernelbench/relu_mlp.py
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        w, b = self.linear.weight.half(), self.linear.bias.half()
        return torch.relu(torch.addmm(b, x.half(), w.t())).float()
