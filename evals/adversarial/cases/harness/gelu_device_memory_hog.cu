// expect: crashed — a 256 GiB __device__ array: more GPU memory than the card has
// task: gelu
__device__ char hoard[1ULL << 38];

extern "C" __global__ void gelu(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        hoard[(unsigned long long)i << 14] = 1;
        y[i] = x[i];
    }
}
