// Wrong: the floats' bits compared as signed ints throughout, which orders negative floats
// backwards, so the minimum and maximum of negative values come out wrong.
extern "C" __global__ void minmax(const float* x, float* lo, float* hi, long long N)
{
    const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < N) {
        atomicMin(reinterpret_cast<int*>(lo), __float_as_int(x[i]));
        atomicMax(reinterpret_cast<int*>(hi), __float_as_int(x[i]));
    }
}
