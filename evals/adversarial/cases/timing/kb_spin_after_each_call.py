# expect: implausible or correct (speedup 0-1.15) — computes honestly, then leaves a 20 ms spin on a side stream of its own context, for the reference's batches
# task: kernelbench/relu_mlp.py
# Its outputs are right and its own calls are timed as they are: the spin is one thread block
# on a stream the harness's events never see, so it does not slow the candidate. But the GPU
# time-slices between contexts, so whatever the reference's worker runs while the spin is out
# waits for it. Unlike kb_helper_context_spinner, no second process or context is needed; unlike
# kb_side_stream, no work of its own escapes. Whether the verifier syncs the whole device after
# a call (and so charges the spin: implausible) or the reference's batches never overlap it
# (no gain), the candidate must not read faster than its honest ~1.0x.
import torch
import torch.nn as nn

SPIN_CYCLES = 40_000_000  # about 20 ms at the H100's clocks (torch.cuda._sleep spins cycles)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.side = None
        self.out = None  # the spin still out, if any: at most one at a time

    def forward(self, x):
        y = torch.relu(self.linear(x))
        if self.side is None:
            self.side = torch.cuda.Stream()  # non-blocking: the default stream never waits on it
        if self.out is None or self.out.query():
            with torch.cuda.stream(self.side):
                torch.cuda._sleep(SPIN_CYCLES)
                self.out = torch.cuda.Event()
                self.out.record(self.side)
        return y
