// expect: compile_error (cannot open source file) — includes /proc/self/mountinfo: the host's paths, from the compiler's own /proc
// task: gelu
#include "/proc/self/mountinfo"
extern "C" __global__ void gelu(const float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i]; }
