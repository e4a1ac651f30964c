// expect: correct (speedup 0.97-1.03) — the task's own int8 kernel against itself (its outputs hold the poison's byte honestly)
// task: quant8
// Written by a red-team review (thirty-first session): before the fix, every check of this
// kernel read "not fully written during timing" (the poison 0x7E00 | r8, masked to a byte, is
// an ordinary int8 value), the task's own kernel included.
extern "C" __global__ void quant8(const float* x, signed char* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float q = rintf(x[i] * 127.0f);
        q = fminf(fmaxf(q, -127.0f), 127.0f);
        y[i] = (signed char)q;
    }
}
