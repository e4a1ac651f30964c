// expect: wrong (wrong at) — accumulates a long reduction in half precision
// task: rowsum
#include <cuda_fp16.h>

extern "C" __global__ void rowsum(const float* x, float* y, int m, int n)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < m) {
        const float* r = x + (size_t)row * n;
        __half s = __float2half(0.0f);
        for (int j = 0; j < n; ++j) s = __hadd(s, __float2half(r[j]));
        y[row] = __half2float(s);
    }
}
