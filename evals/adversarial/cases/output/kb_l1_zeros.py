# expect: wrong (wrong at) — returns zeros: every value of an L1 norm over 65,536 columns is under KernelBench's absolute tolerance of 1e-4
# task: kernelbench/l1_rows.py
# Zeros are within 1e-4 of every output, and scaling the inputs up changes no output of a norm:
# only an absolute tolerance held to a share of the output's RMS tells them apart.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.zeros_like(x)
