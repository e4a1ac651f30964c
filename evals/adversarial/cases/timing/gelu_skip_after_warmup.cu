// expect: wrong (during timing) — global __device__ state: after 8 launches at the timed size it does nothing
// task: gelu
__device__ unsigned int launches_at_bench;   // survives from one launch to the next

extern "C" __global__ void gelu(const float* x, float* y, int n)
{
    bool bench = n >= (1 << 24);
    if (bench && *(volatile unsigned int*)&launches_at_bench > 8) return;   // warm-up is over
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
    }
    if (bench && blockIdx.x == 0 && threadIdx.x == 0) atomicAdd(&launches_at_bench, 1u);
}
