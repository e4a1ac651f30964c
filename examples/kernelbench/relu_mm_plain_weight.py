"""KernelBench-format problem (draft, for precision/kb_tf32_when_timed_where_float64_cannot_run):
y = relu(x @ W), W kept as a plain tensor attribute moved to x's device in forward, the way
KernelBench's level-3 RNN problems keep h0 (`self.h0 = self.h0.to(x.device)`). Model.double()
leaves such an attribute float32, so the reference's float64 forward raises (a float64 x times
a float32 W) and every trial is compared with PyTorch eager in float32 instead."""
import torch
import torch.nn as nn

batch_size = 4096
in_features = 4096
out_features = 4096


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.weight = torch.randn(in_features, out_features) / in_features**0.5

    def forward(self, x):
        self.weight = self.weight.to(x.device)
        return torch.relu(x @ self.weight)


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
