// gemv() with one warp per row: the warp's loads of the row are coalesced, and its 32 partial
// sums are added with shuffles. 8 warps a block (block = 256).
extern "C" __global__ void gemv(const double* A, const double* x, double* y,
                                unsigned long long M, unsigned long long N)
{
    const unsigned long long row = blockIdx.x * 8ULL + threadIdx.x / 32;
    const unsigned lane = threadIdx.x % 32;
    if (row >= M) {
        return;
    }
    const double* a = A + row * N;
    double sum = 0.0;
    for (unsigned long long j = lane; j < N; j += 32) {
        sum += a[j] * x[j];
    }
    for (int offset = 16; offset > 0; offset /= 2) {
        sum += __shfl_down_sync(0xffffffffu, sum, offset);
    }
    if (lane == 0) {
        y[row] = sum;
    }
}
