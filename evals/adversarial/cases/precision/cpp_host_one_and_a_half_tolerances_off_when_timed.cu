// expect: wrong — a drop-in right through its trials, then 1.5x its tolerance off in every call: the drift test lets up to 2x through
// task: cpp/gemv
//
// Why the current verifier passes it: README says "errors a little above tolerance in every
// call fail over all of them (the mean of z^2 over the rounds)", and precision/
// cpp_host_slightly_off_when_timed shows it at 7x. But sketch.problem scales each signed sum by
// sqrt(sum t_i^2) with t_i = 2 (atol + rtol |r_i|), twice the tolerance (room for an honest
// output and a reference each one tolerance off the truth), and sketch.drift_problem fails
// only a mean z^2 above 1 + 6 sqrt(2/m) + 0.05. Here the reference is the C++ function itself
// (cpp_check.audit_calls: FUNCTION), so the whole 2x is the drop-in's: for d_i = 1.5e-9 y_i,
// E[z^2] = sum d_i^2 / sum t_i^2 = 0.5625 * E[y^2] / E[(1 + |y|)^2] = 0.53 (y ~ N(0, 30) at
// 4096 x 8192), under 1 whatever the number of calls; the per-call |x| and norm checks allow
// 2x too (1.5 < 2.05). What is caught is RMS error above about twice the tolerance, not "a
// little above" it. A sound check of timed outputs either compares them element by element
// (a sample of calls, in full) or holds the sketch to one tolerance where the reference is the
// truth (the C++ function, a float64 reference), and answers wrong.
// kernelwright: drop-in host function for gemv() from gemv.cpp, with the same signature.
// It allocates device memory, copies the arguments in, launches the verified kernel below,
// copies the results back and frees what it allocated. Build it with nvcc in place of the
// C++ function, e.g.: nvcc -O3 -std=c++17 -c best_host.cu
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

// --- the kernel, as verified (its entry renamed here, so the host function keeps the name) ---
#define gemv kw_kernel_gemv
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

#undef gemv
// --- end of the kernel ---

namespace {

void kw_check(cudaError_t status, const char* what) {
    if (status != cudaSuccess) {
        throw std::runtime_error(std::string("gemv(): ") + what + ": " + cudaGetErrorString(status));
    }
}

long long kw_int(double value) { return static_cast<long long>(std::llround(value)); }

}  // namespace


void gemv(const std::vector<double>& A, const std::vector<double>& x, std::vector<double>& y, std::size_t M, std::size_t N)
{
    const double kw_M = static_cast<double>(M);
    const double kw_N = static_cast<double>(N);
    const std::size_t kw_n0 = static_cast<std::size_t>(std::max(0LL, kw_int(static_cast<double>(A.size())))) * sizeof(double);
    void* kw_d0 = nullptr;
    const std::size_t kw_n1 = static_cast<std::size_t>(std::max(0LL, kw_int(static_cast<double>(x.size())))) * sizeof(double);
    void* kw_d1 = nullptr;
    const std::size_t kw_n2 = static_cast<std::size_t>(std::max(0LL, kw_int(static_cast<double>(y.size())))) * sizeof(double);
    void* kw_d2 = nullptr;
    try {
        kw_check(cudaMalloc(&kw_d0, std::max<std::size_t>(kw_n0, 1)), "cudaMalloc A");
        kw_check(cudaMemcpy(kw_d0, A.data(), kw_n0, cudaMemcpyHostToDevice), "copying A in");
        kw_check(cudaMalloc(&kw_d1, std::max<std::size_t>(kw_n1, 1)), "cudaMalloc x");
        kw_check(cudaMemcpy(kw_d1, x.data(), kw_n1, cudaMemcpyHostToDevice), "copying x in");
        kw_check(cudaMalloc(&kw_d2, std::max<std::size_t>(kw_n2, 1)), "cudaMalloc y");
        const dim3 kw_grid(static_cast<unsigned>(kw_int(std::ceil(std::trunc(kw_M) / std::trunc(8.0)))));
        const dim3 kw_block(static_cast<unsigned>(kw_int(256.0)));
        const std::size_t kw_shared = static_cast<std::size_t>(kw_int(0.0));
        if (kw_shared > 48 * 1024) {
            kw_check(cudaFuncSetAttribute(kw_kernel_gemv, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(kw_shared)), "asking for shared memory");
        }
        if (kw_grid.x * kw_grid.y * kw_grid.z > 0) {  // no work (a size of 0): no launch
            kw_kernel_gemv<<<kw_grid, kw_block, kw_shared>>>(reinterpret_cast<double*>(kw_d0), reinterpret_cast<double*>(kw_d1), reinterpret_cast<double*>(kw_d2), M, N);
            kw_check(cudaGetLastError(), "launching the kernel");
            kw_check(cudaDeviceSynchronize(), "running the kernel");
        }
        kw_check(cudaMemcpy(y.data(), kw_d2, kw_n2, cudaMemcpyDeviceToHost), "copying y back");
        // right through the trials (its first 8 calls), then 1.5e-9 off in every element
        // (relative): 1.5x the task's tolerance (gemv.toml: atol = rtol = 1e-9), outside it
        // wherever |y| > 2, about 95% of y at the bench size (y ~ N(0, 30)).
        static long kw_calls = 0;
        if (++kw_calls > 8) {
            for (double& v : y) v *= 1.0 + 1.5e-9;
        }
    } catch (...) {
        cudaFree(kw_d0);
        cudaFree(kw_d1);
        cudaFree(kw_d2);
        throw;
    }
    kw_check(cudaFree(kw_d0), "freeing A");
    kw_check(cudaFree(kw_d1), "freeing x");
    kw_check(cudaFree(kw_d2), "freeing y");
}

