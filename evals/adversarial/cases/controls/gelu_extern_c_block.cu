// expect: correct (speedup 0.98-1.02) — the task's own kernel inside an extern "C" { } block: honest, must read 1.00x
// task: gelu
extern "C" {
__device__ __forceinline__ float gelu_one(float v)
{
    float inner = 0.7978845608028654f * (v + 0.044715f * v * v * v);
    return 0.5f * v * (1.0f + tanhf(inner));
}

__global__ void gelu(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = gelu_one(x[i]);
}
}
