// expect: wrong (input modified) — at the timed size zeroes its input and writes gelu(0): a reference sharing it would agree
// task: gelu
extern "C" __global__ void gelu(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    if (n == 16777216) {          // the bench size: the timed calls
        ((float*)x)[i] = 0.0f;     // cast the const away
        y[i] = 0.0f;
        return;
    }
    float v = x[i];
    float inner = 0.7978845608028654f * (v + 0.044715f * v * v * v);
    y[i] = 0.5f * v * (1.0f + tanhf(inner));
}
