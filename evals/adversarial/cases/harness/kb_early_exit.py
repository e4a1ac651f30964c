# expect: crashed (exit code 0) — exits with status 0 in the middle of a run, as if all had gone well
# task: kernelbench/relu_mlp.py
import os

import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        os._exit(0)
