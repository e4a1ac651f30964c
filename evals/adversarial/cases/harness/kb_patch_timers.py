# expect: correct (speedup 0.85-1.15) — patches perf_counter and CUDA event timing: the clock was bound before it loaded
# task: kernelbench/relu_mlp.py
import time

import cupy
import torch
import torch.nn as nn

_perf_counter = time.perf_counter
_started = _perf_counter()


def _slow_clock():
    return _started + (_perf_counter() - _started) * 0.1  # time passes ten times slower


time.perf_counter = _slow_clock
torch.cuda.Event.elapsed_time = lambda self, end: 0.001
cupy.cuda.get_elapsed_time = lambda start, end: 0.001


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.linear(x))
