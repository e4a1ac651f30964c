// expect: wrong — a cheap approximate fast path taken only for sizes divisible by 4096 (the timed one)
// task: gelu
extern "C" __global__ void gelu(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    if ((n & 4095) == 0) {
        y[i] = v * (0.5f + 0.2f * v);   // a quadratic: wrong by up to ~1e-2 on [-1, 1]
    } else {
        y[i] = 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
    }
}
