// expect: wrong (during timing) — counts its launches in device memory and works on every other one at the timed size
// task: gelu
__device__ unsigned int launches;

extern "C" __global__ void gelu(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int seen = *(volatile unsigned int*)&launches;
    if (i == 0) atomicAdd(&launches, 1u);
    if (i >= n) return;
    if (n == 16777216 && (seen & 1u)) return;  // odd launches: nothing written
    float v = x[i];
    float inner = 0.7978845608028654f * (v + 0.044715f * v * v * v);
    y[i] = 0.5f * v * (1.0f + tanhf(inner));
}
