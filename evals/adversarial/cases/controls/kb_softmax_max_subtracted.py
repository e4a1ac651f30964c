# expect: correct (speedup >= 0.1) — honest: a softmax written out, its max subtracted first, right on inputs scaled far past get_inputs()'s
# task: kernelbench/softmax_rows.py
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        e = torch.exp(x - x.amax(dim=1, keepdim=True))
        return e / e.sum(dim=1, keepdim=True)
