// matmul with loop invariants hoisted: the row of A and the column of B are turned into
// pointers once, before the loop; inside it the A pointer steps by 1 and the B pointer by n,
// instead of recomputing row * k + p and p * n + col (a multiply each) every iteration.
// Launch: unchanged, block [16, 16], grid ["ceil_div(N, 16)", "ceil_div(M, 16)"].
extern "C" __global__ void matmul(const float* A, const float* B, float* C, int m, int n, int k)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < m && col < n) {
        const float* a = A + (size_t)row * k;   // hoisted: fixed for the whole loop
        const float* b = B + col;
        float acc = 0.0f;
        for (int p = 0; p < k; ++p, b += n) {
            acc += a[p] * *b;
        }
        C[(size_t)row * n + col] = acc;
    }
}
