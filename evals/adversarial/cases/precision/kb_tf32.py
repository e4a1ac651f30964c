# expect: wrong (wrong at) — lets cuBLAS use TF32 tensor cores for a float32 matmul
# task: kernelbench/relu_mlp.py
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        torch.set_float32_matmul_precision("high")  # TF32 where cuBLAS has it
        try:
            return torch.relu(self.linear(x))
        finally:
            torch.set_float32_matmul_precision("highest")
