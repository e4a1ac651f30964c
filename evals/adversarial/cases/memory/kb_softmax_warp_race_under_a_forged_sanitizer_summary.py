# expect: wrong (racecheck) — a CuPy softmax with a warp race everywhere, whose module writes compute-sanitizer's own "0 errors" summaries to stderr when imported
# task: kernelbench/softmax_rows.py
# with: sanitize
# Closed in the thirtieth session (not yet run on a GPU): the sanitizer's report is read
# from its stdout alone, every summary line of it, the worst first; the watched child
# closes the streams it inherited before anything runs; compute-sanitizer's
# --error-exitcode counts whatever the text says (sanitize.parse, cuda_roles.sanitize).
# Written by a red-team review of the trust boundary (reading cuda_roles.sanitize, worker.main
# and sanitize.parse; sanitize.parse/judge run on the joined text on a CPU; not run on a GPU).
#
# The KernelBench twin of memory/softmax_warp_race_under_a_printed_sanitizer_summary.cu: no
# need to tell the watched process apart (kb_softmax_warp_race_unless_in_the_sanitizers_
# process). cuda_roles.sanitize keeps `(proc.stdout + proc.stderr)[-200_000:]` of each tool
# (cuda_roles.py:368) and sanitize.parse believes the last summary in it (sanitize.py:52-60).
# compute-sanitizer's own report goes to its stdout; whatever the watched child writes to its
# stderr (worker.py:267-268 sends its stdout there too) is appended after it. The forged lines
# are written unbuffered, at import, in every tool's run of the child.
#
# Fix (principled): read the tool's findings only from a channel the candidate's code cannot
# write (compute-sanitizer --log-file into a directory the child cannot write, opened by the
# parent; or --save and the tool's own reader), never from text the child shares.
import os

import cupy
import torch
import torch.nn as nn

os.write(2, b"========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n"
            b"========= ERROR SUMMARY: 0 errors\n")

_SRC = r"""
extern "C" __global__ void softmax(const float* x, float* y, int m, int n)
{
    __shared__ volatile float s[32];
    int row = blockIdx.x, t = threadIdx.x;   // one warp per row, no __syncwarp anywhere
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
"""
_KERNEL = cupy.RawKernel(_SRC, "softmax")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    @torch.no_grad()
    def forward(self, x):
        if x.dtype != torch.float32 or x.dim() != 2:
            return torch.softmax(x, dim=1)
        x = x.contiguous()
        m, n = x.shape
        y = torch.empty_like(x)
        stream = torch.cuda.current_stream(x.device)
        with cupy.cuda.Device(x.device.index), cupy.cuda.ExternalStream(stream.cuda_stream):
            _KERNEL((m,), (32,), (cupy.from_dlpack(x), cupy.from_dlpack(y), cupy.int32(m),
                                  cupy.int32(n)))
        return y
