// expect: wrong (wrote outside) — correct as written, but its .toml's [compile] sets PAST_END=1, which writes one past y's end
// task: gelu
// The verifier must check the build that its options make, the one `check` times: a knob that
// is off in the source and on in the sidecar is still the candidate's own code.
#ifndef PAST_END
#define PAST_END 0
#endif
extern "C" __global__ void gelu(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n + PAST_END) {
        float v = i < n ? x[i] : 0.0f;
        y[i] = 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
    }
}
