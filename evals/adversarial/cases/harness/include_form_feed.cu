// expect: compile_error (cannot open source file) — a form feed in a comment shifts a line-by-line include filter
// task: gelu
/*  */ #define X 1
#include "/etc/os-release"
extern "C" __global__ void gelu(const float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i]; }
