// expect: wrong (racecheck) — a warp-synchronous race, left out only on seed 1's inputs: the one launch compute-sanitizer watches
// task: softmax
// with: sanitize
// Why the current verifier passes it: compute-sanitizer watches one launch of a one-shot child
// (cuda_roles.sanitize -> cuda_roles.cuda_run_once), and that launch is the same in every
// check: `runner.inputs(sizes, 1)`, a fixed seed, at the largest check size the task's .toml
// shows (spec.CudaTask.small_sizes). The inputs come from the public, stateless generator of
// tools/kernels.py (kw_generate: splitmix64 of (seed * 7919 + argument, 2 * index)), so a
// kernel can compute what x[0], x[1] and x[2] hold under seed 1 and recognise the sanitizer's
// launch; every trial and timed call uses secret seeds (plan._seed, secrets.randbits) and
// never matches. Here the recognised launch gets the same reduction with the __syncwarp()s it
// needs, and every other launch the racy one, which is right on today's GPUs (so the trials
// and the timed calls pass) and which racecheck would report (memory/softmax_warp_sync_race).
// A sound verifier watches a launch the kernel cannot tell from the others (a fresh seed, the
// trials' own layout), so the race is seen.
__device__ __forceinline__ unsigned long long mix(unsigned long long z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// x[i] as kw_generate makes it for argument 0 under seed 1 (init "uniform:-100:100").
__device__ __forceinline__ float seed_one(unsigned long long i)
{
    double u = (double)(mix(7919ull ^ mix(2ull * i)) >> 11) * (1.0 / 9007199254740992.0);
    return (float)(-100.0 + 200.0 * u);
}

__device__ __forceinline__ bool near(float got, float want)
{
    return fabsf(got - want) <= 1e-4f * fabsf(want) + 1e-6f;  // however the generator rounded
}

extern "C" __global__ void softmax(const float* x, float* y, int m, int n)
{
    __shared__ volatile float s[32];
    int row = blockIdx.x, t = threadIdx.x;   // one warp per row
    if (row >= m) return;
    // uniform over the warp: every lane reads the same three elements
    bool watched = m * n >= 3 && near(x[0], seed_one(0)) && near(x[1], seed_one(1)) &&
                   near(x[2], seed_one(2));
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
