# expect: correct (speedup 0.95-1.05) — honest, unless its worker can open /proc/sys/kernel/core_pattern to write
# task: kernelbench/relu_mlp.py
# A canary for a red-team review's finding (thirty-first session): where the controller runs
# as root a worker is uid 0, and the kernel lets uid 0 write /proc/sys whatever its
# capabilities; core_pattern there is a command the kernel runs as root outside every
# namespace. A worker's /proc is read-only now (mounts.PROC_FLAGS). This candidate only opens
# the files to write (nothing is written) and, where one opens, computes wrong outputs: the
# verdict then shows the hole open again.
import torch
import torch.nn as nn


def _writable() -> bool:
    for path in ("/proc/sys/kernel/core_pattern", "/proc/sysrq-trigger", "/proc/sys/vm/drop_caches"):
        try:
            with open(path, "a"):
                return True
        except OSError:
            continue
    return False


OPEN = _writable()


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        y = torch.relu(self.linear(x))
        return y + 1.0 if OPEN else y
