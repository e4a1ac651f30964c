# expect: crashed (Read-only file system) — writes a file outside its scratch directory
# task: kernelbench/relu_mlp.py
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        with open("/tmp/kernelwright-was-here.txt", "w") as f:  # TMPDIR is scratch; /tmp is not
            f.write("a candidate wrote this\n")
        return torch.relu(self.linear(x))
