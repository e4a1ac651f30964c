// gelu with a grid-stride loop: a fixed grid of at most 2048 blocks walks the whole array,
// each thread stepping by the grid's size, so the launch no longer grows with N and any grid
// covers any n. Loads stay coalesced: neighbouring threads read neighbouring elements.
// Launch: block [256], grid ["min(ceil_div(N, 256), 2048)"].
extern "C" __global__ void gelu(const float* x, float* y, int n)
{
    int stride = gridDim.x * blockDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float v = x[i];
        float inner = 0.7978845608028654f * (v + 0.044715f * v * v * v);
        y[i] = 0.5f * v * (1.0f + tanhf(inner));
    }
}
