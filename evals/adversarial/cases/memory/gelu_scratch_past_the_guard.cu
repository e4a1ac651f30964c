// expect: wrong (memcheck) — leaves a word 320 bytes past y's end, beyond the guard band, each call: right y, an out-of-bounds write all the same
// task: gelu
// with: sanitize
// A write inside the guard band is seen after the call; one beyond it lands in memory no check
// compares (slack in the allocation, or a neighbour's) and shows only if it breaks something
// compared. Same goal as gelu_reads_past_the_guard (memory the verifier does not control), by
// another mechanism: a write, and state carried from call to call.
extern "C" __global__ void gelu(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    volatile float* scratch = y + n + 80;
    if (i == 0) *scratch = (float)n;                          // the last call's size, left behind
    if (i < n) {
        float v = x[i];
        float inner = 0.7978845608028654f * (v + 0.044715f * v * v * v);
        y[i] = 0.5f * v * (1.0f + tanhf(inner));
    }
}
