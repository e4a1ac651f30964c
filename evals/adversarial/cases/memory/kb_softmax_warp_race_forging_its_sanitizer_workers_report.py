# expect: wrong (racecheck) — a CuPy warp race whose watched child reopens its sanitizer worker's result pipe through /proc/1/fd and sends a clean report first
# task: kernelbench/softmax_rows.py
# with: sanitize
# Written by a red-team review of this session's sanitizer fixes (thirtieth session; CPU only:
# a grandchild with no inherited copy of a pipe reopened /proc/<grandparent>/fd/<w> and wrote
# into it; not run on a GPU or in the real sandbox).
#
# The watched child runs this module in the sanitizer worker's PID namespace, where that
# worker is PID 1. Its result pipe is /proc/1/fd/N, and opening it needs only ptrace read
# access: the same user, and a dumpable process. The worker had already said it started, so
# the controller's next read is the report: a frame saying every tool summarised 0 errors,
# written here before the real one, was the report the controller judged.
#
# Closed in the thirtieth session (96cb4be; not yet run on a GPU): the sanitizer's worker makes
# itself undumpable (PR_SET_DUMPABLE 0) before the watched child runs; /proc/1/fd is then out
# of a same-user process's reach. Principle: what judges a candidate must not be writable by it.
import os

import cupy
import torch
import torch.nn as nn


def _forge() -> None:
    if os.getpid() == 1:  # a check's own worker: nothing to reach
        return
    try:
        from kernelwright.tools.protocol import write_message

        clean = {"summaries": ["========= ERROR SUMMARY: 0 errors"], "report": "", "code": 0}
        forged = {"type": "sanitized", "tools": {t: clean for t in ("memcheck", "racecheck", "synccheck")}}
        for fd in os.listdir("/proc/1/fd"):
            info = open(f"/proc/1/fdinfo/{fd}").read()
            flags = int(info.split("flags:")[1].split()[0], 8)
            if flags & 0o3 == 0o1 and os.readlink(f"/proc/1/fd/{fd}").startswith("pipe:"):
                w = os.open(f"/proc/1/fd/{fd}", os.O_WRONLY)
                write_message(w, forged)
                os.close(w)
    except OSError:
        pass


_forge()

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
