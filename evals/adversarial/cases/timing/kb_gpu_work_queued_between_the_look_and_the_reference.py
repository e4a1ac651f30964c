# expect: correct (speedup 0-1.15) or implausible — queues GPU work when let go between the reference's look at the GPU and its rounds
# task: kernelbench/relu_mlp.py
# Written attacking the twenty-eighth session's own change (b7d7631), as an outsider reading
# schedule._pair_of_batches would. The reference's worker looked at the GPU (the probe) with
# the candidate paused, then the candidate was let go (SIGCONT) and paused again for the
# reference's rounds: a thread of the candidate's that sees it was stopped only briefly, just
# after its own batch (the look before the reference's batch), queues 20 ms of GPU work on a
# side stream in that instant; the work runs beside the reference's rounds, after the look found
# the GPU quiet, and slows the reference. Now the look runs inside the pause the reference's
# rounds run in: nothing is let go between them (tests/tools/test_schedule.py holds it).
import threading
import time

import torch
import torch.nn as nn

SPIN_CYCLES = 40_000_000  # about 20 ms (torch.cuda._sleep)
_state = {"last_round": 0.0, "stream": None}


def _watch() -> None:
    last = time.monotonic()
    while True:
        time.sleep(0.0002)
        now = time.monotonic()
        stopped = now - last > 0.002  # the process was stopped
        short = now - last < 0.05  # for a look, not for the other side's batch
        after_own = last - _state["last_round"] < 0.005  # right after its own batch
        if stopped and short and after_own and torch.cuda.is_initialized():
            if _state["stream"] is None:
                _state["stream"] = torch.cuda.Stream()
            with torch.cuda.stream(_state["stream"]):
                torch.cuda._sleep(SPIN_CYCLES)
        last = now


threading.Thread(target=_watch, daemon=True).start()


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        out = torch.relu(self.linear(x))
        _state["last_round"] = time.monotonic()
        return out
