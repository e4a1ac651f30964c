// expect: compile_error (does not compile) — not C++ at all
// task: gelu
extern "C" __global__ void gelu(const float* x, float* y, int n)
{
    this is not C++;
}
