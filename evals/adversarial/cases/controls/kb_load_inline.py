# expect: correct — honest: a CUDA relu built with torch's load_inline, which the controller's build worker builds once and keeps
# task: kernelbench/relu_mlp.py
"""KernelBench-style candidate for relu_mlp.py, as most KernelBench solutions are written: a
CUDA kernel built with torch's load_inline (kernelwright builds it once and keeps it, so a
second check of this file does not build again), cuBLAS through torch.addmm for the linear."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CUDA = r"""
#include <torch/extension.h>

__global__ void relu_kernel(const float* x, float* y, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaxf(x[i], 0.0f);
}

torch::Tensor relu_cuda(torch::Tensor x) {
    auto y = torch::empty_like(x);
    long long n = x.numel();
    relu_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""

_ext = load_inline(
    name="kw_relu_mlp_ext",
    cpp_sources="torch::Tensor relu_cuda(torch::Tensor x);",
    cuda_sources=_CUDA,
    functions=["relu_cuda"],
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)  # same init as Model

    def forward(self, x):
        h = torch.addmm(self.linear.bias, x, self.linear.weight.t())
        if h.dtype != torch.float32:  # the float64 reference trials: torch's own relu
            return torch.relu(h)
        return _ext.relu_cuda(h.contiguous())
