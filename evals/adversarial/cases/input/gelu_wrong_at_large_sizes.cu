// expect: wrong (wrong at) — takes a cheaper approximation for large sizes that are not a multiple of 4096 (the bench size is one)
// task: gelu
extern "C" __global__ void gelu(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    if (n > (1 << 21) && (n & 4095)) {
        float v = x[i];
        y[i] = v / (1.0f + __expf(-1.702f * v));  // x * sigmoid(1.702 x): 1e-2 off
        return;
    }
    float v = x[i];
    float inner = 0.7978845608028654f * (v + 0.044715f * v * v * v);
    y[i] = 0.5f * v * (1.0f + tanhf(inner));
}
