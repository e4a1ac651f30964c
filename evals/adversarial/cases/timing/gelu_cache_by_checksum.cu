// expect: wrong — each block checksums its slice and skips it when the last launch saw the same: it trusts stale output memory
// task: gelu
#define MAX_BLOCKS 65536
__device__ unsigned long long seen[MAX_BLOCKS];

extern "C" __global__ void gelu(const float* x, float* y, int n)
{
    __shared__ unsigned long long sum;
    __shared__ int same;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (threadIdx.x == 0) sum = 0ull;
    __syncthreads();
    if (i < n) atomicAdd(&sum, (unsigned long long)__float_as_uint(x[i]) * (threadIdx.x + 1u));
    __syncthreads();
    if (threadIdx.x == 0) {
        same = blockIdx.x < MAX_BLOCKS && seen[blockIdx.x] == sum + 1ull;
        if (blockIdx.x < MAX_BLOCKS) seen[blockIdx.x] = sum + 1ull;
    }
    __syncthreads();
    if (i >= n || same) return;   // "this slice is unchanged: y still holds its answer"
    float v = x[i];
    float inner = 0.7978845608028654f * (v + 0.044715f * v * v * v);
    y[i] = 0.5f * v * (1.0f + tanhf(inner));
}
