// matmul with shared-memory tiling: a 16x16 block computes a 16x16 tile of C, stepping through
// K in 16-wide slices. Each slice of A and of B is loaded once into shared memory by the whole
// block (one element per thread) and then read 16 times from there, instead of every thread
// reading its full row and column from global memory. Out-of-range loads are zero-filled.
// Launch: unchanged, block [16, 16], grid ["ceil_div(N, 16)", "ceil_div(M, 16)"].
#define TILE 16

extern "C" __global__ void matmul(const float* A, const float* B, float* C, int m, int n, int k)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];

    int tx = threadIdx.x, ty = threadIdx.y;
    int col = blockIdx.x * TILE + tx;
    int row = blockIdx.y * TILE + ty;
    float acc = 0.0f;
    for (int p0 = 0; p0 < k; p0 += TILE) {
        As[ty][tx] = (row < m && p0 + tx < k) ? A[(size_t)row * k + p0 + tx] : 0.0f;
        Bs[ty][tx] = (p0 + ty < k && col < n) ? B[(size_t)(p0 + ty) * n + col] : 0.0f;
        __syncthreads();   // the tile is complete before anyone reads it
#pragma unroll
        for (int p = 0; p < TILE; ++p) {
            acc += As[ty][p] * Bs[p][tx];
        }
        __syncthreads();   // everyone is done with the tile before it is overwritten
    }
    if (row < m && col < n) {
        C[(size_t)row * n + col] = acc;
    }
}
