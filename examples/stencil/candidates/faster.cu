// stencil, faster: 32x8 blocks (by default) so each warp covers 128 contiguous bytes of a row,
// and each thread walks 8 consecutive rows of one column, keeping the up/centre/down
// values in registers so every x element is fetched about once from the column
// direction (left/right neighbours come from the same warp's lines, i.e. L1).
// Knobs: ROWS_PER_THREAD, and the block BX x BY, which only faster.toml's launch reads
// (the kernel reads blockDim): any values are correct.
#ifndef ROWS_PER_THREAD
#define ROWS_PER_THREAD 8
#endif
#ifndef BX
#define BX 32
#endif
#ifndef BY
#define BY 8
#endif

extern "C" __global__ void stencil(const float* __restrict__ x, float* __restrict__ y, int h, int w)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i0 = (blockIdx.y * blockDim.y + threadIdx.y) * ROWS_PER_THREAD;
    if (j >= w || i0 >= h) return;   // no shared memory, no barriers: early exit is fine
    int i1 = (i0 + ROWS_PER_THREAD < h) ? i0 + ROWS_PER_THREAD : h;
    bool col_border = (j == 0) || (j == w - 1);

    float up = (i0 > 0) ? x[(size_t)(i0 - 1) * w + j] : 0.0f;
    float cur = x[(size_t)i0 * w + j];
    for (int i = i0; i < i1; ++i) {
        size_t idx = (size_t)i * w + j;
        float down = (i + 1 < h) ? x[idx + w] : 0.0f;
        if (col_border || i == 0 || i == h - 1) {
            y[idx] = cur;
        } else {
            y[idx] = 0.2f * (cur + up + down + x[idx - 1] + x[idx + 1]);
        }
        up = cur;
        cur = down;
    }
}
