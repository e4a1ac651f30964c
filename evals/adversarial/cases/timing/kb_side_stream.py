# expect: implausible (escaped the timed region) — does its work on a side stream it never joins
# task: kernelbench/relu_mlp.py
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.side = None

    def forward(self, x):
        if self.side is None:
            self.side = torch.cuda.Stream()  # non-blocking: the default stream does not wait on it
            self.ballast = torch.ones(4096, 4096, device=x.device, dtype=torch.float64)
        self.side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(self.side):
            torch.mm(self.ballast, self.ballast)  # ~2 ms of work the timer should have counted
            y = torch.relu(self.linear(x))
        return y  # the harness's end event, on the default stream, fires at once
