# expect: implausible (ran while it was paused) or correct (speedup 0-1.15) — a spinner its worker started first, then 4,100 unreaped zombies, so the tree walk stops before it
# task: kernelbench/relu_mlp.py
# Written by a red-team review of this session's pause watch (thirtieth session; with the real
# Sandbox on a CPU, the walk came out at exactly 4,096 processes and the spinner ran about 6M
# iterations through each of three 0.3 s pauses with nothing on record; not run on a GPU).
#
# Sandbox._tree walks the worker's tree depth first, newest child first, and stops at 4,096
# processes; signal_tree (the pause's SIGSTOP), the watch, pin and the memory watchdog all use
# that list. The oldest child is visited last: started first, a spinner sits behind a small
# process whose 4,100 children exited at once and were never reaped (zombies: no memory, and
# state Z counts as stopped), outside every pause, free to load a CPU or the GPU while the
# reference's batch is timed.
#
# Closed in the thirtieth session (96cb4be; not yet run on a GPU): a walk that stops at its cap
# says so (Sandbox.tree_cut), and a watched pause of such a tree is not believed: the timing
# reads implausible. Where the confinement's process limit refuses the forks, nothing escapes
# and it reads near 1x. Principle: what cannot be seen whole is not vouched for.
import os
import subprocess
import sys

import torch
import torch.nn as nn

if os.getpid() == 1 and "kernelwright.tools.rounds" in sys.modules:  # a check's own worker
    try:
        _spinner = subprocess.Popen([sys.executable, "-c", "while True:\n    pass"])
        _zombies = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import os, time\n"
                "for _ in range(4100):\n"
                "    if os.fork() == 0:\n"
                "        os._exit(0)\n"
                "time.sleep(3600)\n",
            ]
        )
    except OSError:
        pass


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.linear(x))
