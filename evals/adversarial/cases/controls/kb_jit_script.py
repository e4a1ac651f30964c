# expect: correct (speedup >= 0.3) — honest: the forward as TorchScript (torch.jit.script)
# task: kernelbench/relu_mlp.py
import torch
import torch.nn as nn


@torch.jit.script
def _relu_linear(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.relu(torch.nn.functional.linear(x, w, b))


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return _relu_linear(x, self.linear.weight, self.linear.bias)
