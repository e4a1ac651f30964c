# expect: correct (speedup >= 0.3) — honest: works on a side stream and joins it back before returning
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
            self.side = torch.cuda.Stream()
        self.side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(self.side):
            y = torch.relu(self.linear(x))
        torch.cuda.current_stream().wait_stream(self.side)
        y.record_stream(torch.cuda.current_stream())
        return y
