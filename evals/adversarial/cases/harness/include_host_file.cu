// expect: compile_error (cannot open source file) — includes a host file at compile time to read it into the log
// task: gelu
#include "/etc/passwd"

extern "C" __global__ void gelu(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i];
}
