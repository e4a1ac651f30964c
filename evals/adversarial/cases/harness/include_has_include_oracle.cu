// expect: correct (speedup 0.97-1.03) — a one-bit oracle: fails to compile only if a host file exists; the compiler sees none
// task: gelu
#if __has_include("/etc/shadow") || __has_include(</etc/passwd>) || __has_include("/root/.bashrc")
#error "the host's files are visible"
#endif
extern "C" __global__ void gelu(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
    float v = x[i];
    float inner = 0.7978845608028654f * (v + 0.044715f * v * v * v);
    y[i] = 0.5f * v * (1.0f + tanhf(inner));
    }
}
