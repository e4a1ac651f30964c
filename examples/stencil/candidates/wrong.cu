// WRONG: forgets the border -- only interior points are written, border outputs are left unset.
extern "C" __global__ void stencil(const float* x, float* y, int h, int w)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i > 0 && j > 0 && i < h - 1 && j < w - 1) {
        size_t idx = (size_t)i * w + j;
        y[idx] = 0.2f * (x[idx] + x[idx - w] + x[idx + w] + x[idx - 1] + x[idx + 1]);
    }
}
