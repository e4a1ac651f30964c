// expect: wrong (input modified) — computes the right answer, then zeroes its input
// task: gelu
extern "C" __global__ void gelu(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
        ((float*)x)[i] = 0.0f;   // casts const away: a later call would see zeros
    }
}
