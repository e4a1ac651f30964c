// expect: wrong — FP32 in trials; TF32 tensor cores in timed calls, told apart by where the harness placed A, B and C
// task: matmul
//
// Why the current verifier passes it (read against tools/ at the time of writing):
//
// 1. Telling a timed call from a trial, with no state and no clock. Every array the harness
//    hands a kernel sits `lead + GUARD_BYTES` into a CuPy buffer (runners.guarded: `arr =
//    buf[skip + g : ...]`, GUARD_BYTES = 256). CuPy's pool hands out buffers at multiples of
//    512 bytes, so the array's address mod 512 is (lead + 256) mod 512. Trials (cuda_roles
//    .trial_run -> runner.inputs / runner.outputs with no `spread`, so leads() gives 0; the
//    post-timing bench trial and the held-out one included; the VMM outputs of a `device`
//    trial are granule-aligned + 256 too) always put A, B and C at 256 mod 512. A timing round
//    (rounds.CudaRounds.round: `spread=seed`) places each array at `lead` = 256 * k, k drawn
//    from the round's seed (runners._leads, uniform in [0, 32768)): all three at 256 mod 512
//    in only 1 round in 8. The sanitizer's and ncu's one launch (cuda_run_once) uses no spread
//    either. So "any of A, B, C not at 256 mod 512" means "timed call", and a trial never
//    looks like one.
//
// 2. What a timed call may get wrong. Timed outputs are not compared element by element: both
//    workers send a sketch (sketch.py) and sketch.problem allows each signed sum to differ by
//    Z_MAX = 6 times sqrt(sum t_i^2), t_i = 2 (atol + rtol |r_i|), where r is the *reference
//    kernel's* own fp32 output (judge.rounds_problem -> sketch.problem); over all calls,
//    drift_problem fails only a mean z^2 above 1 + 6 sqrt(2/m) + 0.05. For errors d_i of
//    random sign, E[z^2] = sum d_i^2 / sum t_i^2. Rounding A and B to TF32 (cvt.rna, what
//    wmma::__float_to_tf32 does) at the bench size (2048^3, uniform(-1, 1), atol 1e-3,
//    rtol 1e-4) gives E[z^2] = 0.68 (simulated in float64 on 128 x 2048 outputs), so no
//    number of rounds catches it, while 58% of the elements are outside the task's tolerance
//    (max error 1.8e-2): the task's own comment says TF32 "fails on ~59% of elements", and
//    precision/matmul_tf32, which rounds in its trials too, is caught there. Here the trials
//    never see TF32: every trial runs the exact FP32 path below.
//
// What it gains: TF32 tensor cores (mma.sync through WMMA) against FP32 FMA, in the timed
// calls only. A sound verifier compares what a timed call computed with the truth as tightly
// as the trials do (or cannot be told apart from a trial), and answers wrong.
#include <mma.h>
using namespace nvcuda;

__device__ __forceinline__ bool looks_like_a_trial(const void* a, const void* b, const void* c)
{
    return ((unsigned long long)a & 511ull) == 256ull && ((unsigned long long)b & 511ull) == 256ull &&
           ((unsigned long long)c & 511ull) == 256ull;
}

extern "C" __global__ void matmul(const float* A, const float* B, float* C, int m, int n, int k)
{
    // The task's launch: 16x16 threads (8 warps) per 16x16 tile of C.
    bool fast = !looks_like_a_trial(A, B, C) && m % 16 == 0 && n % 16 == 0 && k % 64 == 0 &&
                blockDim.x == 16 && blockDim.y == 16;
    if (!fast) {  // exact FP32, as the reference computes it: what every trial sees
        int col = blockIdx.x * blockDim.x + threadIdx.x;
        int row = blockIdx.y * blockDim.y + threadIdx.y;
        if (row < m && col < n) {
            float acc = 0.0f;
            for (int p = 0; p < k; ++p) acc += A[(size_t)row * k + p] * B[(size_t)p * n + col];
            C[(size_t)row * n + col] = acc;
        }
        return;
    }
    // Timed: each of the 8 warps multiplies the block's 16x16 tile over an eighth of K on TF32
    // tensor cores (inputs rounded to nearest, fp32 accumulation); the eight partial tiles are
    // summed through shared memory.
    __shared__ __align__(32) float part[8][16 * 16];   // wmma wants 256-bit aligned tiles
    int warp = (threadIdx.y * 16 + threadIdx.x) / 32;
    int row0 = blockIdx.y * 16, col0 = blockIdx.x * 16;
    int span = k / 8, k0 = warp * span;
    wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int p = k0; p < k0 + span; p += 8) {
        wmma::load_matrix_sync(fa, A + (size_t)row0 * k + p, k);
        wmma::load_matrix_sync(fb, B + (size_t)p * n + col0, n);
        for (int t = 0; t < fa.num_elements; ++t) fa.x[t] = wmma::__float_to_tf32(fa.x[t]);
        for (int t = 0; t < fb.num_elements; ++t) fb.x[t] = wmma::__float_to_tf32(fb.x[t]);
        wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma::store_matrix_sync(part[warp], acc, 16, wmma::mem_row_major);
    __syncthreads();
    int e = threadIdx.y * 16 + threadIdx.x;
    float sum = 0.0f;
    for (int w = 0; w < 8; ++w) sum += part[w][e];
    C[(size_t)(row0 + threadIdx.y) * n + col0 + threadIdx.x] = sum;
}
