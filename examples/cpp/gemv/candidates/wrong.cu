// Wrong: each row's last column is left out of its sum.
extern "C" __global__ void gemv(const double* A, const double* x, double* y,
                                unsigned long long M, unsigned long long N)
{
    const unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < M) {
        double sum = 0.0;
        for (unsigned long long j = 0; j + 1 < N; ++j) {
            sum += A[i * N + j] * x[j];
        }
        y[i] = sum;
    }
}
