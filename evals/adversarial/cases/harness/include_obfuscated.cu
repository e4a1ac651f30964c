// expect: compile_error (cannot open source file) — hides a host #include behind a line splice, a %: digraph and a macro
// task: gelu
#define HOST_FILE "/etc/hostname"
%:inc\
lude HOST_FILE

extern "C" __global__ void gelu(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i];
}
