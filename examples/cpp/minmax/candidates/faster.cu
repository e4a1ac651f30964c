// minmax() reduced in each block first (a grid-stride loop, warp shuffles, then the warps'
// results in shared memory), with one atomic min and max per block.
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
    __shared__ float warp_lo[32], warp_hi[32];
    const float inf = __int_as_float(0x7f800000);
    float a = inf, b = -inf;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < N; i += stride) {
        a = fminf(a, x[i]);
        b = fmaxf(b, x[i]);
    }
    for (int d = 16; d > 0; d /= 2) {
        a = fminf(a, __shfl_down_sync(0xffffffffu, a, d));
        b = fmaxf(b, __shfl_down_sync(0xffffffffu, b, d));
    }
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0) {
        warp_lo[warp] = a;
        warp_hi[warp] = b;
    }
    __syncthreads();
    if (warp == 0) {
        const int warps = (blockDim.x + 31) / 32;
        a = lane < warps ? warp_lo[lane] : inf;
        b = lane < warps ? warp_hi[lane] : -inf;
        for (int d = 16; d > 0; d /= 2) {
            a = fminf(a, __shfl_down_sync(0xffffffffu, a, d));
            b = fmaxf(b, __shfl_down_sync(0xffffffffu, b, d));
        }
        if (lane == 0) {
            atomic_min_float(lo, a);
            atomic_max_float(hi, b);
        }
    }
}
