// expect: wrong — ignores its scalar a and multiplies by 2.5, the task's one value of it: wrong for every other a
// task: cpp/axpy
// A KNOWN MISS (thirty-first session, a red-team review of the C++ path, by reading the code;
// not run on a GPU): a C++ task's scalar arguments are one expression of the sizes, the same in
// every trial, timed call and audit (axpy.toml: a = 2.5), so this kernel reads correct, and
// its drop-in best_host.cu ships it under axpy()'s signature, wrong for any caller's a. A
// ParEval problem's rand() % E is fixed the same way (E / 3). Closing it: a scalar drawn from
// the trial's seed on both sides (the function's and the kernel's), as inputs are. The README
// lists it under "Not guaranteed".
extern "C" __global__ void axpy(int n, float a, const float* x, float* y) {
    (void)a;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.5f * x[i] + y[i];
}
