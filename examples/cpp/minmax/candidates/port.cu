// The naive port of minmax(): one thread per element, an atomic min and max each on lo and hi,
// which start as +inf and -inf (init = "fill:..."). CUDA has no float atomicMin: a float's
// bits order as a signed int where it is not negative, and in reverse as an unsigned int
// where it is. N, the length, comes after the function's own arguments.
__device__ void atomic_min_float(float* at, float v)
{
    if (__float_as_int(v) >= 0) {  // the sign bit clear
        atomicMin(reinterpret_cast<int*>(at), __float_as_int(v));
    } else {
        atomicMax(reinterpret_cast<unsigned int*>(at), __float_as_uint(v));
    }
}

__device__ void atomic_max_float(float* at, float v)
{
    if (__float_as_int(v) >= 0) {  // the sign bit clear
        atomicMax(reinterpret_cast<int*>(at), __float_as_int(v));
    } else {
        atomicMin(reinterpret_cast<unsigned int*>(at), __float_as_uint(v));
    }
}

extern "C" __global__ void minmax(const float* x, float* lo, float* hi, long long N)
{
    const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < N) {
        atomic_min_float(lo, x[i]);
        atomic_max_float(hi, x[i]);
    }
}
