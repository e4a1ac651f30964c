// expect: correct (speedup >= 2) — an honest faster kernel: 32x32 shared-memory tiles, coalesced both ways
// task: transpose
// transpose, faster: TILE x TILE tile staged through shared memory (padded to
// TILE + 1 columns to avoid bank conflicts) so both the reads of x and the writes
// of y are coalesced. TILE x BLOCK_ROWS threads, each moving TILE / BLOCK_ROWS
// elements of the tile. Knobs: the kernel assumes blockDim == (TILE, BLOCK_ROWS)
// and BLOCK_ROWS dividing TILE; faster.toml's launch and [tune] values keep both.
#ifndef TILE
#define TILE 32
#endif
#ifndef BLOCK_ROWS
#define BLOCK_ROWS 8
#endif

extern "C" __global__ void transpose(const float* __restrict__ x, float* __restrict__ y, int m, int n)
{
    __shared__ float tile[TILE][TILE + 1];

    int tx = threadIdx.x, ty = threadIdx.y;
    int c = blockIdx.x * TILE + tx;            // column of x
    int r0 = blockIdx.y * TILE;                // first row of x in this tile
    for (int k = 0; k < TILE; k += BLOCK_ROWS) {
        int r = r0 + ty + k;
        if (r < m && c < n) tile[ty + k][tx] = x[(size_t)r * n + c];
    }
    __syncthreads();                           // reached by every thread

    int yc = r0 + tx;                          // column of y (= row of x)
    int yr0 = blockIdx.x * TILE;               // first row of y (= column of x)
    for (int k = 0; k < TILE; k += BLOCK_ROWS) {
        int yr = yr0 + ty + k;
        if (yr < n && yc < m) y[(size_t)yr * m + yc] = tile[tx][ty + k];
    }
}
