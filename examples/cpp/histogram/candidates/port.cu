// The naive port of histogram(): one thread per pixel, one atomic add in global memory each.
// The counts start at zero (init = "fill:0") and the kernel adds to them, as the C++ code does.
// N, the number of pixels, comes after the function's own arguments (a vector's length).
extern "C" __global__ void histogram(const int* pixels, unsigned int* counts, long long N)
{
    const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < N) {
        atomicAdd(&counts[pixels[i]], 1u);
    }
}
