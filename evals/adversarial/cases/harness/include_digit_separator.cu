// expect: compile_error (cannot open source file) — a C++14 digit separator makes a parser think a character literal is open
// task: gelu
constexpr int k = 1'024;
#include "/etc/os-release"
extern "C" __global__ void gelu(const float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i] * k; }
