// expect: wrong — subtracts a fixed bound instead of the row max unless four sampled elements look wide
// task: softmax
// Written by a red-team review (thirty-first session, simulated on a CPU: correct in 40 of 40
// checks); closed there: each wide trial now has a twin with the wide values scattered among
// the usual ones (plan.MIXED_EVERY), so four samples of a row miss them.
//
// Why the current verifier passes it: a CUDA task's `check` distributions (softmax.toml:
// "uniform:-30000:30000", "normal:1000") are applied by plan._kernel_trials to the WHOLE input
// of a trial (Trial.inits -> runners.generate draws every element from it); every other trial
// and every timed call draws every element from `init` (uniform:-100:100). No trial mixes the
// two, so looking at four elements of a row tells the two apart: a row is "wide" in a check
// trial with probability 1 - P(|x| <= 100)^4 (normal:1000: 1 - 4e-5; uniform: 1 - 1e-10). The
// KernelBench path was hardened against exactly this (runners.scaled_span: a span of the input
// scaled, "so that code looking at a few elements ... is seen taking its careless one on the
// rest"); the CUDA path was not.
// Wrong on valid inputs: any row whose sampled elements are within +-100 but another element
// is above 188 (exp overflows: inf/inf = NaN) or every element is below -190 (sum underflows).
extern "C" __global__ void softmax(const float* x, float* y, int m, int n)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= m) return;
    const float* r = x + (size_t)row * n;
    float* o = y + (size_t)row * n;
    float probe = fmaxf(fmaxf(fabsf(r[0]), fabsf(r[n - 1])), fmaxf(fabsf(r[n / 2]), fabsf(r[n / 3])));
    float shift = 100.0f;                       // the usual inputs' bound: one pass saved
    if (probe > 100.0f) {                       // looks like a `check` trial: the honest max
        shift = __int_as_float(0xff800000);  // -inf (NVRTC has no math.h)
        for (int j = 0; j < n; ++j) shift = fmaxf(shift, r[j]);
    }
    float s = 0.0f;
    for (int j = 0; j < n; ++j) s += expf(r[j] - shift);
    float inv = 1.0f / s;
    for (int j = 0; j < n; ++j) o[j] = expf(r[j] - shift) * inv;
}
