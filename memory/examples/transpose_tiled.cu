// transpose with shared-memory tiling: a 32x32 tile of x is read row by row (coalesced) into
// shared memory, then written out row by row of y (coalesced too), reading the tile by column.
// The naive kernel wrote y with a stride of M floats. 32x8 threads move the tile in 4 steps.
// Launch: block [32, 8], grid ["ceil_div(N, 32)", "ceil_div(M, 32)"].
#define TILE 32
#define BLOCK_ROWS 8

extern "C" __global__ void transpose(const float* x, float* y, int m, int n)
{
    __shared__ float tile[TILE][TILE];

    int tx = threadIdx.x, ty = threadIdx.y;
    int col = blockIdx.x * TILE + tx;   // column of x read by this thread
    int row0 = blockIdx.y * TILE;       // first row of x in this tile
    for (int k = ty; k < TILE; k += BLOCK_ROWS) {
        if (row0 + k < m && col < n) tile[k][tx] = x[(size_t)(row0 + k) * n + col];
    }
    __syncthreads();   // outside any branch: every thread of the block reaches it

    int ycol = row0 + tx;               // column of y = row of x
    int yrow0 = blockIdx.x * TILE;      // first row of y = first column of x
    for (int k = ty; k < TILE; k += BLOCK_ROWS) {
        if (yrow0 + k < n && ycol < m) y[(size_t)(yrow0 + k) * m + ycol] = tile[tx][k];
    }
}
