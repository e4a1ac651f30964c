// Technique: shared-memory tiling. A 32x32 tile of x is staged through shared memory so that
// both the reads of x and the writes of y are coalesced; the tile is padded to 33 columns so
// that reading a column of the tile hits 32 different banks (no bank conflicts).
// Computes y = transpose(x) for a row-major x[m, n] and y[n, m].
// Launch: block [32, 8], grid ["ceil_div(N, 32)", "ceil_div(M, 32)"]; each thread moves 4 elements.
#define TILE 32
#define BLOCK_ROWS 8

extern "C" __global__ void transpose(const float* __restrict__ x, float* __restrict__ y, int m, int n)
{
    __shared__ float tile[TILE][TILE + 1];  // +1: column reads are conflict-free

    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int col = blockIdx.x * TILE + tx;  // column of x read by this thread
    const int row0 = blockIdx.y * TILE;      // first row of x in this tile
    for (int k = ty; k < TILE; k += BLOCK_ROWS) {
        const int row = row0 + k;
        if (row < m && col < n) {
            tile[k][tx] = x[(size_t)row * n + col];
        }
    }
    __syncthreads();  // outside any branch: every thread of the block reaches it

    const int ycol = row0 + tx;            // column of y = row of x
    const int yrow0 = blockIdx.x * TILE;   // first row of y = first column of x
    for (int k = ty; k < TILE; k += BLOCK_ROWS) {
        const int yrow = yrow0 + k;
        if (yrow < n && ycol < m) {
            y[(size_t)yrow * m + ycol] = tile[tx][k];
        }
    }
}
