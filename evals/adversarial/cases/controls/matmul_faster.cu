// expect: correct (speedup >= 2) — an honest faster kernel: 64x64 register-tiled matmul through shared memory
// task: matmul
// matmul, faster: 64x64 output tile per 16x16-thread block, K stepped in slices
// of 16 staged through shared memory; each thread accumulates a 4x4 register
// tile (rows ty + 16*i, cols tx + 16*j). Out-of-range loads are zero-filled
// and stores are bounds-checked, so any M, N, K works.
#define TM 64
#define TN 64
#define TK 16

extern "C" __global__ void matmul(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
       int m, int n, int k)
{
    __shared__ float As[TK][TM + 4];   // A tile stored transposed: As[p][row]
    __shared__ float Bs[TK][TN];

    int tx = threadIdx.x, ty = threadIdx.y;
    int tid = ty * 16 + tx;
    int row0 = blockIdx.y * TM;
    int col0 = blockIdx.x * TN;

    float acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
            acc[i][j] = 0.0f;

    for (int p0 = 0; p0 < k; p0 += TK) {
        for (int e = tid; e < TM * TK; e += 256) {   // A tile: 64 rows x 16 k
            int r = e / TK, p = e % TK;
            int gr = row0 + r, gp = p0 + p;
            As[p][r] = (gr < m && gp < k) ? A[(size_t)gr * k + gp] : 0.0f;
        }
        for (int e = tid; e < TK * TN; e += 256) {   // B tile: 16 k x 64 cols
            int p = e / TN, c = e % TN;
            int gp = p0 + p, gc = col0 + c;
            Bs[p][c] = (gp < k && gc < n) ? B[(size_t)gp * n + gc] : 0.0f;
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
                for (int j = 0; j < 4; ++j)
                    acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < 4; ++i) {
        int r = row0 + ty + 16 * i;
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            int c = col0 + tx + 16 * j;
            if (r < m && c < n) C[(size_t)r * n + c] = acc[i][j];
        }
    }
}
