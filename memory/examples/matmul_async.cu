// matmul, double-buffered, with asynchronous copies (sm_80 and newer): cp.async moves the next
// slice from global straight into the other shared buffer, without a register in between and
// without the thread waiting for it; cp.async.wait_group 1 waits only for the slice about to be
// used. A source size of 0 bytes zero-fills what lies outside the matrices.
// Launch: unchanged, block [16, 16], grid ["ceil_div(N, 16)", "ceil_div(M, 16)"].
#define TILE 16

__device__ __forceinline__ void copy_async(float* shared, const float* global, bool inside)
{
    unsigned to = (unsigned)__cvta_generic_to_shared(shared);
    int bytes = inside ? 4 : 0;   // 0: nothing is read, the 4 bytes are zero-filled
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(to), "l"(global), "r"(bytes));
}

extern "C" __global__ void matmul(const float* A, const float* B, float* C, int m, int n, int k)
{
    __shared__ float As[2][TILE][TILE];
    __shared__ float Bs[2][TILE][TILE];

    int tx = threadIdx.x, ty = threadIdx.y;
    int col = blockIdx.x * TILE + tx;
    int row = blockIdx.y * TILE + ty;
    // one slice into buffer `buf`; the address stays inside the matrix when nothing is read
    auto load = [&](int buf, int p0) {
        bool a_in = row < m && p0 + tx < k, b_in = p0 + ty < k && col < n;
        copy_async(&As[buf][ty][tx], a_in ? A + (size_t)row * k + p0 + tx : A, a_in);
        copy_async(&Bs[buf][ty][tx], b_in ? B + (size_t)(p0 + ty) * n + col : B, b_in);
    };
    load(0, 0);
    asm volatile("cp.async.commit_group;\n" ::);

    float acc = 0.0f;
    int cur = 0;
    for (int p0 = 0; p0 < k; p0 += TILE) {
        if (p0 + TILE < k) load(cur ^ 1, p0 + TILE);   // the next slice, in flight meanwhile
        asm volatile("cp.async.commit_group;\n" ::);      // (an empty group at the end)
        asm volatile("cp.async.wait_group 1;\n" ::);      // all but the newest group: this slice
        __syncthreads();   // every thread's copies of this slice have landed
#pragma unroll
        for (int p = 0; p < TILE; ++p) {
            acc += As[cur][ty][p] * Bs[cur][p][tx];
        }
        __syncthreads();   // done with this buffer before the next step refills it
        cur ^= 1;
    }
    if (row < m && col < n) {
        C[(size_t)row * n + col] = acc;
    }
}
