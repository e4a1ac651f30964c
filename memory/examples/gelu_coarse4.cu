// gelu with thread coarsening: each thread computes four elements, a block's 256 threads
// cover 1024 consecutive elements. The four are blockDim.x apart, so each of the four loads
// of a warp is still one coalesced 128-byte access; a quarter of the threads are launched.
// Launch: block [256], grid ["ceil_div(N, 1024)"].
#define PER_THREAD 4

extern "C" __global__ void gelu(const float* x, float* y, int n)
{
    int base = blockIdx.x * blockDim.x * PER_THREAD + threadIdx.x;
#pragma unroll
    for (int k = 0; k < PER_THREAD; ++k) {
        int i = base + k * blockDim.x;
        if (i < n) {
            float v = x[i];
            float inner = 0.7978845608028654f * (v + 0.044715f * v * v * v);
            y[i] = 0.5f * v * (1.0f + tanhf(inner));
        }
    }
}
