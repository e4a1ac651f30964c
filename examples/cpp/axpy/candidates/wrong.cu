// Wrong: the guard stops one short, so the last element of y is never updated.
extern "C" __global__ void axpy(int n, float a, const float* x, float* y)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n - 1) {
        y[i] = a * x[i] + y[i];
    }
}
