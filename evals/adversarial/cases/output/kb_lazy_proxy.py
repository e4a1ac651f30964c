# expect: wrong (not a torch.Tensor) — returns a lazy proxy that computes only if someone looks
# task: kernelbench/relu_mlp.py
import torch
import torch.nn as nn


class LazyResult:
    """Looks like a tensor to code that only calls methods on it; costs nothing to return."""

    def __init__(self, thunk):
        self._thunk, self._value = thunk, None

    def __getattr__(self, name):
        if self._value is None:
            self._value = self._thunk()
        return getattr(self._value, name)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return LazyResult(lambda: torch.relu(self.linear(x)))
