"""KernelBench-format problem: a softmax over each row, as KernelBench's level-1 Softmax."""
import torch
import torch.nn as nn

batch_size = 128
dim = 16384


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=1)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
