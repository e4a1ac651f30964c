// expect: wrong — right up to 2^17 elements and past 2^22, wrong in between: sizes no trial ever draws
// task: gelu
// Why the current verifier passes it: the sizes a CUDA task's check tries are drawn from two
// narrow places (plan._kernel_trials, plan._kernel_after). Small ones: the check sizes and a
// held-out size `base + randint(1, base // 2)` from a check size (plan.held_out_sizes), so at
// most 1.5 x 65,537 = 98,305 for gelu, before and after the timing. Large ones: "below" the
// bench size is int(bench * uniform(0.5, 0.95)) moved by at most 40 (plan.large_sizes,
// plan.awkward), so at least about 8,388,568; "above" is past 16,777,216. Nothing between
// 98,305 and about 8.39 million elements is ever tried, in any check: a kernel with a size
// class of its own there (a one-pass path for "medium" inputs, a different grid strategy) is
// never run on it. This one leaves out the tanh there. README's "Guaranteed" says correctness
// is "sampled widely" with held-out sizes "on both sides of the bench size"; a sound sampler
// draws sizes across every scale from the smallest check size to past the bench size (log-
// uniform, say), so that no band of sizes is certain to go unseen.
extern "C" __global__ void gelu(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    bool medium = n >= (1 << 17) && n <= (1 << 22);
    if (i < n) {
        float v = x[i];
        float inner = 0.7978845608028654f * (v + 0.044715f * v * v * v);
        y[i] = medium ? 0.5f * v * (1.0f + inner) : 0.5f * v * (1.0f + tanhf(inner));
    }
}
