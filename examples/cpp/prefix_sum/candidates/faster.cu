// prefix_sum() in one block of 1024 threads walking the input in tiles of 8192: each thread
// scans 8 consecutive elements (loaded as two 16-byte vectors where the tile is whole), the
// threads' totals are scanned in shared memory (warp shuffles, then the warps' totals), each
// thread writes its 8 running sums, and the tile's total is carried into the next.
#define ITEMS 8

extern "C" __global__ void prefix_sum(const int* x, long long* out, long long N)
{
    __shared__ long long warp_totals[32];
    __shared__ long long carry;
    const int t = threadIdx.x, lane = t % 32, warp = t / 32;
    if (t == 0) {
        carry = 0;
    }
    __syncthreads();
    for (long long base = 0; base < N; base += 1024 * ITEMS) {
        const long long first = base + (long long)t * ITEMS;
        long long v[ITEMS];
        if (base + 1024 * ITEMS <= N) {  // a whole tile: x + first is 32-byte aligned
            const int4 a = reinterpret_cast<const int4*>(x + first)[0];
            const int4 b = reinterpret_cast<const int4*>(x + first)[1];
            v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w;
            v[4] = b.x; v[5] = b.y; v[6] = b.z; v[7] = b.w;
        } else {
            for (int k = 0; k < ITEMS; ++k) {
                v[k] = first + k < N ? (long long)x[first + k] : 0;
            }
        }
        for (int k = 1; k < ITEMS; ++k) {
            v[k] += v[k - 1];
        }
        long long total = v[ITEMS - 1];  // this thread's 8, then an inclusive scan over threads
        for (int d = 1; d < 32; d *= 2) {
            const long long up = __shfl_up_sync(0xffffffffu, total, d);
            if (lane >= d) {
                total += up;
            }
        }
        if (lane == 31) {
            warp_totals[warp] = total;
        }
        __syncthreads();
        if (warp == 0) {
            long long w = warp_totals[lane];
            for (int d = 1; d < 32; d *= 2) {
                const long long up = __shfl_up_sync(0xffffffffu, w, d);
                if (lane >= d) {
                    w += up;
                }
            }
            warp_totals[lane] = w;
        }
        __syncthreads();
        const long long before =
            carry + (warp > 0 ? warp_totals[warp - 1] : 0) + total - v[ITEMS - 1];
        for (int k = 0; k < ITEMS; ++k) {
            if (first + k < N) {
                out[first + k] = before + v[k];
            }
        }
        __syncthreads();
        if (t == 1023) {
            carry = before + v[ITEMS - 1];  // the tile's total so far (zeros past N)
        }
        __syncthreads();
    }
}
