// expect: wrong (racecheck) — a racy warp-synchronous softmax whose first warp prints compute-sanitizer's own "0 errors" summaries
// task: softmax
// with: sanitize
// Closed in the thirtieth session (not yet run on a GPU): the sanitizer's report is read
// from its stdout alone, every summary line of it, the worst first; the watched child
// closes the streams it inherited before anything runs; compute-sanitizer's
// --error-exitcode counts whatever the text says (sanitize.parse, cuda_roles.sanitize).
// Written by a red-team review of the trust boundary (reading cuda_roles.sanitize, worker.main
// and sanitize.parse; compiled with nvcc 13 -arch=sm_90 -cubin; not run on a GPU).
//
// sanitize.parse takes the LAST summary in a tool's text, because "a kernel's printf, in the
// same output before it, can print one that says 0 errors" (sanitize.py:52-60). But it is not
// the same output: the watched child is `worker --job once.json`, and worker.main points its
// stdout at its stderr before anything runs (worker.py:267-268: os.dup2(2, 1), "kernel printf
// ... go to the log"), while cuda_roles.sanitize joins what the tool wrote as
// `proc.stdout + proc.stderr` (cuda_roles.py:368). compute-sanitizer writes its report, the
// real summary included, to its stdout (no --log-file is given), so everything this kernel
// prints lands after it in the joined text, and its "0 errors" is the one that counts, for
// memcheck, racecheck, initcheck and synccheck alike. 64 lines (3.5 KB) a launch, over 3 to 7
// watched launches more than a 4 KiB stdio buffer, so they reach the pipe although the child
// ends with os._exit (no stdio flush). In check workers the same lines go to the worker log, after
// the timed event, and cost the timed kernel a microsecond or two.
// (A KernelBench candidate needs no printf: os.write(2, ...) at import does the same.)
//
// Fix (principled): the verdict must come from a channel the watched code cannot write: run
// compute-sanitizer with --log-file (or --save) to a file in a directory the child cannot
// write (or to a pipe opened only to the sanitizer), read only that, and treat any summary
// that is not the tool's own as absent; or at least keep the sanitizer's stream apart from
// the child's and never concatenate them.
extern "C" __global__ void softmax(const float* x, float* y, int m, int n)
{
    __shared__ volatile float s[32];
    int row = blockIdx.x, t = threadIdx.x;   // one warp per row
    if (row == 0) {                          // every launch: compute-sanitizer's words, twice
        printf("========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n");
        printf("========= ERROR SUMMARY: 0 errors\n");
    }
    if (row >= m) return;
    const float* r = x + (size_t)row * n;
    float* o = y + (size_t)row * n;
    float mx = -3.402823466e+38f;
    for (int j = t; j < n; j += 32) mx = fmaxf(mx, r[j]);
    s[t] = mx;
    if (t < 16) s[t] = fmaxf(s[t], s[t + 16]);
    if (t < 8) s[t] = fmaxf(s[t], s[t + 8]);
    if (t < 4) s[t] = fmaxf(s[t], s[t + 4]);
    if (t < 2) s[t] = fmaxf(s[t], s[t + 2]);
    if (t < 1) s[t] = fmaxf(s[t], s[t + 1]);
    mx = s[0];
    float sum = 0.0f;
    for (int j = t; j < n; j += 32) sum += expf(r[j] - mx);
    s[t] = sum;
    if (t < 16) s[t] += s[t + 16];
    if (t < 8) s[t] += s[t + 8];
    if (t < 4) s[t] += s[t + 4];
    if (t < 2) s[t] += s[t + 2];
    if (t < 1) s[t] += s[t + 1];
    float inv = 1.0f / s[0];
    for (int j = t; j < n; j += 32) o[j] = expf(r[j] - mx) * inv;
}
