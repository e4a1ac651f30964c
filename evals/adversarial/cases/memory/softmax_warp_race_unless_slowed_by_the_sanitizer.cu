// expect: wrong (reads the GPU's clock) — a warp-synchronous race, left out only where a few shared-memory accesses take 20,000 cycles: under compute-sanitizer's instrumentation
// task: softmax
// with: sanitize
// Written by a red-team review (twenty-ninth session, by reading the code; not yet run on a
// GPU).
//
// 889a5da made the watched launches indistinguishable by their inputs, outputs and addresses
// (sanitize.watched, cuda_roles.cuda_run_once/_own_allocation), and sanitize.unfinished says
// the sanitizer's "slowdown is easy to see" (a kernel that hangs only under it). A kernel that
// sees it can as easily behave: memcheck, racecheck, initcheck and synccheck all patch every
// shared-memory access with a call into their instrumentation, so eight volatile round trips
// read on clock64() take tens of thousands of cycles there and a few hundred anywhere else.
// This kernel then takes the synchronised reduction when watched and the racy one
// (memory/softmax_warp_sync_race: right on today's GPUs) in every trial and timed call.
//
// Fix (principled): a kernel's result may not depend on time. Refuse candidates whose code
// reads a clock (%clock, %clock64, %globaltimer in its PTX, CS2R/S2R SR_CLOCK*/SR_GLOBALTIMER*
// in its SASS: cuobjdump in the compile worker) outside what the task allows; or run the
// watched launches with the sanitizer's instrumentation where the kernel cannot time it
// (not available today), so only the first stops this.
extern "C" __global__ void softmax(const float* x, float* y, int m, int n)
{
    __shared__ volatile float s[32];
    int row = blockIdx.x, t = threadIdx.x;   // one warp per row
    if (row >= m) return;
    // a few shared-memory round trips, timed on the SM's own clock: about 300 cycles on a
    // GPU, tens of thousands where every access calls the sanitizer's instrumentation
    long long t0 = clock64();
    s[t] = 0.0f;
    for (int k = 0; k < 8; ++k) s[t] = s[t] + 1.0f;
    long long spent = clock64() - t0;
    spent = __shfl_sync(0xffffffffu, spent, 0);  // lane 0's, uniform over the warp
    bool watched = spent > 20000;
    const float* r = x + (size_t)row * n;
    float* o = y + (size_t)row * n;
    float mx = -3.402823466e+38f;
    for (int j = t; j < n; j += 32) mx = fmaxf(mx, r[j]);
    s[t] = mx;
    if (watched) __syncwarp();
    if (t < 16) s[t] = fmaxf(s[t], s[t + 16]);
    if (watched) __syncwarp();
    if (t < 8) s[t] = fmaxf(s[t], s[t + 8]);
    if (watched) __syncwarp();
    if (t < 4) s[t] = fmaxf(s[t], s[t + 4]);
    if (watched) __syncwarp();
    if (t < 2) s[t] = fmaxf(s[t], s[t + 2]);
    if (watched) __syncwarp();
    if (t < 1) s[t] = fmaxf(s[t], s[t + 1]);
    if (watched) __syncwarp();
    mx = s[0];
    if (watched) __syncwarp();
    float sum = 0.0f;
    for (int j = t; j < n; j += 32) sum += expf(r[j] - mx);
    s[t] = sum;
    if (watched) __syncwarp();
    if (t < 16) s[t] += s[t + 16];
    if (watched) __syncwarp();
    if (t < 8) s[t] += s[t + 8];
    if (watched) __syncwarp();
    if (t < 4) s[t] += s[t + 4];
    if (watched) __syncwarp();
    if (t < 2) s[t] += s[t + 2];
    if (watched) __syncwarp();
    if (t < 1) s[t] += s[t + 1];
    if (watched) __syncwarp();
    float inv = 1.0f / s[0];
    for (int j = t; j < n; j += 32) o[j] = expf(r[j] - mx) * inv;
}
