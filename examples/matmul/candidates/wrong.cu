// WRONG: off-by-one in the K loop (p < k - 1) drops the last product from every dot product.
extern "C" __global__ void matmul(const float* A, const float* B, float* C, int m, int n, int k)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < m && col < n) {
        float acc = 0.0f;
        for (int p = 0; p < k - 1; ++p) {
            acc += A[(size_t)row * k + p] * B[(size_t)p * n + col];
        }
        C[(size_t)row * n + col] = acc;
    }
}
