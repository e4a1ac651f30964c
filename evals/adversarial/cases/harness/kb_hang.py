# expect: timeout (no progress) — forward() never returns
# task: kernelbench/relu_mlp.py
import time

import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        while True:
            time.sleep(1)
