// matmul with register tiling on top of shared-memory tiling: a 16x16 block computes a 64x64
// tile of C, each thread a 4x4 block of it (rows ty + 16*i, cols tx + 16*j) kept in registers.
// Per 16-wide K step a thread reads 4 values of A and 4 of B from shared memory and does 16
// multiply-adds with them, instead of 2 reads per multiply-add.
// Launch: block [16, 16], grid ["ceil_div(N, 64)", "ceil_div(M, 64)"].
#define TM 64
#define TN 64
#define TK 16

extern "C" __global__ void matmul(const float* A, const float* B, float* C, int m, int n, int k)
{
    __shared__ float As[TK][TM + 4];   // A's tile transposed, As[p][row]; +4: its stores
                                       // fall in different banks
    __shared__ float Bs[TK][TN];

    int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 16 + tx;
    int row0 = blockIdx.y * TM, col0 = blockIdx.x * TN;
    float acc[4][4] = {};
    for (int p0 = 0; p0 < k; p0 += TK) {
        for (int e = tid; e < TM * TK; e += 256) {   // A tile: 64 rows x 16 k
            int r = e / TK, p = e % TK;
            As[p][r] = (row0 + r < m && p0 + p < k) ? A[(size_t)(row0 + r) * k + p0 + p] : 0.0f;
        }
        for (int e = tid; e < TK * TN; e += 256) {   // B tile: 16 k x 64 columns
            int p = e / TN, c = e % TN;
            Bs[p][c] = (p0 + p < k && col0 + c < n) ? B[(size_t)(p0 + p) * n + col0 + c] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int p = 0; p < TK; ++p) {
            float a[4], b[4];
#pragma unroll
            for (int i = 0; i < 4; ++i) a[i] = As[p][ty + 16 * i];
#pragma unroll
            for (int j = 0; j < 4; ++j) b[j] = Bs[p][tx + 16 * j];
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int j = 0; j < 4; ++j) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            int r = row0 + ty + 16 * i, c = col0 + tx + 16 * j;
            if (r < m && c < n) C[(size_t)r * n + c] = acc[i][j];
        }
}
