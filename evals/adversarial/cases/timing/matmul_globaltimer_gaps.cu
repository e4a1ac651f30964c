// expect: wrong (during timing) — reads %globaltimer: a launch soon after the last one is a timed burst, and it skips the work
// task: matmul
__device__ unsigned long long last_start;

extern "C" __global__ void matmul(const float* A, const float* B, float* C, int m, int n, int k)
{
    __shared__ int skip;
    unsigned long long now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (threadIdx.x == 0 && threadIdx.y == 0) {
        unsigned long long prev = last_start;
        skip = m == 2048 && prev != 0ull && now - prev < 50000000ull;  // within 50 ms
    }
    __syncthreads();
    if (blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0 && threadIdx.y == 0) last_start = now;
    if (skip) return;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < m && col < n) {
        float acc = 0.0f;
        for (int p = 0; p < k; ++p) acc += A[(size_t)row * k + p] * B[(size_t)p * n + col];
        C[(size_t)row * n + col] = acc;
    }
}
