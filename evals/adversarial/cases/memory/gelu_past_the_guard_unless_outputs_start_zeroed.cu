// expect: wrong (memcheck) — writes 320 bytes past y, except where y starts as zeros: the one launch compute-sanitizer watches
// task: gelu
// with: sanitize
// Why the current verifier passes it: a write beyond the 256-byte guard band is seen only by
// memcheck (README "Not guaranteed"; memory/gelu_scratch_past_the_guard). memcheck watches one
// launch (cuda_roles.sanitize -> cuda_roles.cuda_run_once), whose outputs are made by
// `runner.outputs(sizes, 0)`: poisoned with the bits 0, i.e. +0.0f everywhere. No other launch
// starts that way: a trial's outputs hold a quiet-NaN pattern or its complement (plan.poisons:
// 0x7FC07Exx and 0x803F81yy in float32), a timed call's the round poison (0x7FC00001). So the
// kernel reads y[0] before writing it: +0.0f means "watched", and only then does it keep its
// stray write in bounds. (Its inputs, from the fixed seed 1, say the same: see
// softmax_warp_race_unless_seed_one.) A sound verifier watches a launch the kernel cannot tell
// apart (the trials' poison, a fresh seed), and memcheck reports the write.
extern "C" __global__ void gelu(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 0 && n > 0) {
        bool watched = __float_as_uint(y[0]) == 0u;   // read before this thread writes it
        if (!watched) *((volatile float*)(y + n + 80)) = (float)n;
    }
    if (i < n) {
        float v = x[i];
        float inner = 0.7978845608028654f * (v + 0.044715f * v * v * v);
        y[i] = 0.5f * v * (1.0f + tanhf(inner));
    }
}
