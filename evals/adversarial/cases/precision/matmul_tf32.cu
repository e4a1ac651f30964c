// expect: wrong (wrong at) — rounds A and B to TF32 (10-bit mantissa), as tensor cores would
// task: matmul
__device__ __forceinline__ float tf32(float v)
{
    unsigned int u;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(u) : "f"(v));
    return __uint_as_float(u);
}

extern "C" __global__ void matmul(const float* A, const float* B, float* C, int m, int n, int k)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < m && col < n) {
        float acc = 0.0f;
        for (int p = 0; p < k; ++p) {
            acc += tf32(A[(size_t)row * k + p]) * tf32(B[(size_t)p * n + col]);
        }
        C[(size_t)row * n + col] = acc;
    }
}
