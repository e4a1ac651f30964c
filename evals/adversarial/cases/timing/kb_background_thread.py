# expect: wrong (during timing) — when timed, hands its work to a background thread and returns at once
# task: kernelbench/relu_mlp.py
import sys
import threading
import time

import torch
import torch.nn as nn


def _being_timed():
    frame = sys._getframe(1)
    while frame is not None:
        code = frame.f_code  # the harness's Clock.timed (or .sample), which times one call
        if code.co_name in ("timed", "sample") and code.co_filename.endswith("timing.py"):
            return True
        frame = frame.f_back
    return False


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        if not _being_timed():
            return torch.relu(self.linear(x))
        out = torch.empty(x.shape[0], self.linear.out_features, device=x.device)

        def work():
            time.sleep(0.002)  # long after the harness's end event
            with torch.no_grad():
                out.copy_(torch.relu(self.linear(x)))

        threading.Thread(target=work, daemon=True).start()
        return out  # filled in "soon"
