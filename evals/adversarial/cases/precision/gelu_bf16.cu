// expect: wrong (wrong at) — reads and writes through bfloat16: 8 bits of mantissa where float32 is required
// task: gelu
#include <cuda_bf16.h>

extern "C" __global__ void gelu(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = __bfloat162float(__float2bfloat16(x[i]));
        float g = 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
        y[i] = __bfloat162float(__float2bfloat16(g));
    }
}
