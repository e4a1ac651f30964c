// expect: wrong (NaN) — writes NaN everywhere
// task: gelu
extern "C" __global__ void gelu(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __int_as_float(0x7fc00000);
}
