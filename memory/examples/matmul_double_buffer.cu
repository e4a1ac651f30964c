// matmul, shared-memory tiled, double-buffered: two tiles of A and of B in shared memory. While
// the block multiplies the tile in one buffer, each thread has already fetched its elements of
// the next slice into registers; it stores them into the other buffer afterwards, so the global
// loads overlap the arithmetic and one __syncthreads() per step is enough.
// Launch: unchanged, block [16, 16], grid ["ceil_div(N, 16)", "ceil_div(M, 16)"].
#define TILE 16

extern "C" __global__ void matmul(const float* A, const float* B, float* C, int m, int n, int k)
{
    __shared__ float As[2][TILE][TILE];
    __shared__ float Bs[2][TILE][TILE];

    int tx = threadIdx.x, ty = threadIdx.y;
    int col = blockIdx.x * TILE + tx;
    int row = blockIdx.y * TILE + ty;
    // prologue: the first slice into buffer 0
    As[0][ty][tx] = (row < m && tx < k) ? A[(size_t)row * k + tx] : 0.0f;
    Bs[0][ty][tx] = (ty < k && col < n) ? B[(size_t)ty * n + col] : 0.0f;
    __syncthreads();

    float acc = 0.0f;
    int cur = 0;
    for (int p0 = 0; p0 < k; p0 += TILE) {
        int next = p0 + TILE;
        float a = 0.0f, b = 0.0f;   // the next slice's elements, fetched before the math
        if (next < k) {
            a = (row < m && next + tx < k) ? A[(size_t)row * k + next + tx] : 0.0f;
            b = (next + ty < k && col < n) ? B[(size_t)(next + ty) * n + col] : 0.0f;
        }
#pragma unroll
        for (int p = 0; p < TILE; ++p) {
            acc += As[cur][ty][p] * Bs[cur][p][tx];
        }
        if (next < k) {   // block-uniform condition: every thread takes the same branch
            As[cur ^ 1][ty][tx] = a;   // the other buffer: nobody reads it in this step
            Bs[cur ^ 1][ty][tx] = b;
        }
        __syncthreads();   // the next buffer is full, and this one may be overwritten next step
        cur ^= 1;
    }
    if (row < m && col < n) {
        C[(size_t)row * n + col] = acc;
    }
}
