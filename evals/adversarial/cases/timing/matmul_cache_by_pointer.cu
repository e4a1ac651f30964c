// expect: wrong — caches by pointer: returns at once when called again with buffers it has seen
// task: matmul
__device__ const float* seen_a[8];
__device__ float* seen_c[8];
__device__ unsigned int n_seen;

extern "C" __global__ void matmul(const float* A, const float* B, float* C, int m, int n, int k)
{
    for (unsigned int s = 0; s < n_seen && s < 8; ++s) {
        if (seen_a[s] == A && seen_c[s] == C) return;   // "the answer is still in C"
    }
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < m && col < n) {
        float acc = 0.0f;
        for (int p = 0; p < k; ++p) acc += A[(size_t)row * k + p] * B[(size_t)p * n + col];
        C[(size_t)row * n + col] = acc;
    }
    if (blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0 && threadIdx.y == 0) {
        unsigned int slot = atomicAdd(&n_seen, 1u) % 8;   // remembered for the next launches
        seen_a[slot] = A;
        seen_c[slot] = C;
    }
}
