# expect: wrong — at import, sends its worker's 'imported' message itself, with a 3 MB arch and a NaN time, to grow the report
# task: kernelbench/relu_mlp.py
# The candidate's module runs before its worker reports the import, on the same channel, so it
# can say first what the import was. The controller takes only what it can check: the backend
# and architecture are its own word, the log is capped, the time must be a number. The suite
# fails any case whose report (what --json prints, what the loop keeps) exceeds 64 KiB.
import fcntl
import json
import os
import struct

import torch
import torch.nn as nn


def _forge():
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
            writable = fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_WRONLY
        except OSError:
            continue
        if target.startswith("pipe:") and writable:
            result = {"ok": True, "backend": "python", "arch": "x" * 3_000_000}
            result.update(duration_ms=float("nan"), log="imported " * 1_000)
            payload = json.dumps({"type": "compiled", "result": result, "arrays": []}).encode()
            os.write(fd, struct.pack(">Q", len(payload)) + payload)
            return  # the channel only: a 3 MB write to another pipe nobody reads would hang


_forge()


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.linear(x))
