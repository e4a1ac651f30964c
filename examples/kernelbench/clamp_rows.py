"""KernelBench-format problem: every value clamped to [-8, 8] and halved (a saturating
activation with wide bounds). On get_inputs()'s N(0, 1) inputs the clamp never bites, so a
kernel that leaves it out is right there and wrong on wider inputs: the verifier's scaled
inputs are what tell the two apart."""
import torch
import torch.nn as nn

batch_size = 8192
dim = 16384


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.clamp(x, -8.0, 8.0) * 0.5


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
