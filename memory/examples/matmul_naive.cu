// C[M, N] = A[M, K] @ B[K, N], float32, all row-major.
// Naive: one thread per output element, 16x16 blocks; every thread reads a
// full row of A and a full column of B straight from global memory.
extern "C" __global__ void matmul(const float* A, const float* B, float* C, int m, int n, int k)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < m && col < n) {
        float acc = 0.0f;
        for (int p = 0; p < k; ++p) {
            acc += A[(size_t)row * k + p] * B[(size_t)p * n + col];
        }
        C[(size_t)row * n + col] = acc;
    }
}
