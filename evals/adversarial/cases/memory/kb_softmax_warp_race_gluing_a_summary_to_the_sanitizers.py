# expect: wrong (racecheck) — a CuPy warp race that, as its watched child exits, writes a "0 errors" racecheck summary with no newline into the sanitizer's own stdout
# task: kernelbench/softmax_rows.py
# with: sanitize
# Written by a red-team review of this session's sanitizer fixes (thirtieth session; the parse
# of such a joined line run on a CPU; not run on a GPU).
#
# The report is the sanitizer's stdout alone, but the watched child can reopen it where ptrace
# rules allow (/proc/PPID/fd/1). Written with no newline just before the child exits, the
# forged summary starts the line the sanitizer's own summary is then printed on, and the
# first match on that line, the forged "(0 errors, 0 warnings)", was the count that counted.
#
# Closed in the thirtieth session (96cb4be; not yet run on a GPU): every summary on a line
# counts and the worst wins, and a summary line keeps its end (the sanitizer's own summary
# ends the line it is on). Principle: text the candidate adds can only add to a finding.
import os

import cupy
import torch
import torch.nn as nn

_exit = os._exit


def _glued_exit(code: int) -> None:
    try:
        if not open(f"/proc/{os.getppid()}/comm").read().startswith("compute-sanit"):
            return _exit(code)  # a check's own worker: its parent is no sanitizer
        w = os.open(f"/proc/{os.getppid()}/fd/1", os.O_WRONLY)
        os.write(w, b"x" * 400 + b"========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)")
        os.close(w)
    except OSError:
        pass
    _exit(code)


os._exit = _glued_exit

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
