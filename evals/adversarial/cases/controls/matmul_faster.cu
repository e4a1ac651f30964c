// expect: correct (speedup >= 2) — an honest faster kernel: 64x64 register-tiled matmul through shared memory
// task: matmul
// matmul, faster: a (TY*RM)x(TX*RN) output tile per TXxTY-thread block (64x64 per
// 16x16 by default), K stepped in slices of TK staged through shared memory; each
// thread accumulates an RMxRN register tile (rows ty + TY*i, cols tx + TX*j).
// Out-of-range loads are zero-filled and stores are bounds-checked, so any M, N, K
// works. Knobs (kernelwright tune sets them with -D; faster.toml's launch follows).
#ifndef TX
#define TX 16
#endif
#ifndef TY
#define TY 16
#endif
#ifndef RM
#define RM 4
#endif
#ifndef RN
#define RN 4
#endif
#ifndef TK
#define TK 16
#endif
#define TM (TY * RM)
#define TN (TX * RN)
#define THREADS (TX * TY)

extern "C" __global__ void matmul(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
       int m, int n, int k)
{
    __shared__ float As[TK][TM + 4];   // A tile stored transposed: As[p][row]
    __shared__ float Bs[TK][TN];

    int tx = threadIdx.x, ty = threadIdx.y;
    int tid = ty * TX + tx;
    int row0 = blockIdx.y * TM;
    int col0 = blockIdx.x * TN;

    float acc[RM][RN];
#pragma unroll
    for (int i = 0; i < RM; ++i)
#pragma unroll
        for (int j = 0; j < RN; ++j)
            acc[i][j] = 0.0f;

    for (int p0 = 0; p0 < k; p0 += TK) {
        for (int e = tid; e < TM * TK; e += THREADS) {   // A tile: TM rows x TK k
            int r = e / TK, p = e % TK;
            int gr = row0 + r, gp = p0 + p;
            As[p][r] = (gr < m && gp < k) ? A[(size_t)gr * k + gp] : 0.0f;
        }
        for (int e = tid; e < TK * TN; e += THREADS) {   // B tile: TK k x TN cols
            int p = e / TN, c = e % TN;
            int gp = p0 + p, gc = col0 + c;
            Bs[p][c] = (gp < k && gc < n) ? B[(size_t)gp * n + gc] : 0.0f;
        }
        __syncthreads();

#pragma unroll
        for (int p = 0; p < TK; ++p) {
            float a[RM], b[RN];
#pragma unroll
            for (int i = 0; i < RM; ++i) a[i] = As[p][ty + TY * i];
#pragma unroll
            for (int j = 0; j < RN; ++j) b[j] = Bs[p][tx + TX * j];
#pragma unroll
            for (int i = 0; i < RM; ++i)
#pragma unroll
                for (int j = 0; j < RN; ++j)
                    acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < RM; ++i) {
        int r = row0 + ty + TY * i;
#pragma unroll
        for (int j = 0; j < RN; ++j) {
            int c = col0 + tx + TX * j;
            if (r < m && c < n) C[(size_t)r * n + c] = acc[i][j];
        }
    }
}
