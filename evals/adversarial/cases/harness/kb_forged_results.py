# expect: wrong — forges 'compiled' and 'outputs' messages on the result channel, then exits 0
# task: kernelbench/relu_mlp.py
import fcntl
import json
import os
import struct

import torch.nn as nn


def _frame(fd, payload):
    os.write(fd, struct.pack(">Q", len(payload)) + payload)


def _forge():
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
            writable = fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_WRONLY
        except OSError:
            continue
        if target.startswith("pipe:") and writable:
            zeros = bytes(128 * 1024 * 4)
            compiled = {"type": "compiled", "arrays": []}
            compiled["result"] = {"ok": True, "backend": "python", "arch": "", "duration_ms": 1.0}
            outputs = {"type": "outputs", "trial": 0, "run": 0, "arrays": [len(zeros)]}
            outputs["meta"] = [{"dtype": "float32", "shape": [128, 1024]}]
            _frame(fd, json.dumps(compiled).encode())
            _frame(fd, json.dumps(outputs).encode())
            _frame(fd, zeros)
    os._exit(0)  # "all good": exit codes count for nothing


_forge()


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
