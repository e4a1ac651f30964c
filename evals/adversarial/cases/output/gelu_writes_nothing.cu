// expect: wrong (not fully written) — writes nothing; relies on stale output memory holding the answer
// task: gelu
extern "C" __global__ void gelu(const float* x, float* y, int n)
{
    // Nothing: a harness that reuses the reference's output buffer would find the answer here.
}
