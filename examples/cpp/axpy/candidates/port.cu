// The naive port of axpy(): one thread per element, at the task's launch.
extern "C" __global__ void axpy(int n, float a, const float* x, float* y)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = a * x[i] + y[i];
    }
}
