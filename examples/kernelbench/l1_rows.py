"""KernelBench-format problem: each row divided by its L1 norm. get_inputs() draws only
non-negative inputs (torch.rand), where the abs is the identity: a kernel that leaves it out is
right on all of them and wrong wherever a value is negative, which the verifier's scaled inputs
(half of each span negated) show. Over 65,536 columns every output is under 3.1e-5, below
KernelBench's absolute tolerance of 1e-4: the verifier holds each output to a share of its RMS."""
import torch
import torch.nn as nn

batch_size = 2048
dim = 65536


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x / torch.sum(torch.abs(x), dim=1, keepdim=True)


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
