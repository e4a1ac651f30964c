// histogram() with a private histogram per block in shared memory: the block's threads add
// there (a grid-stride loop over the pixels), then one atomic add per bin and block goes to
// global memory.
extern "C" __global__ void histogram(const int* pixels, unsigned int* counts, long long N)
{
    __shared__ unsigned int local[256];
    for (int b = threadIdx.x; b < 256; b += blockDim.x) {
        local[b] = 0;
    }
    __syncthreads();
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < N; i += stride) {
        atomicAdd(&local[pixels[i]], 1u);
    }
    __syncthreads();
    for (int b = threadIdx.x; b < 256; b += blockDim.x) {
        if (local[b]) {
            atomicAdd(&counts[b], local[b]);
        }
    }
}
