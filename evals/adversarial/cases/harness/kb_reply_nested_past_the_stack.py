# expect: crashed (nested deeper) — its worker's replies carry a field nested 600 deep: it parses, and a reason that quoted it raised RecursionError out of the check
# task: kernelbench/relu_mlp.py
# Written by a red-team review of this session's protocol fix (thirtieth session; on a CPU,
# Python 3.11: a header about 900 deep parses, and a repr or == of it about 150 frames
# further down the stack raises RecursionError; not run on a GPU).
#
# 8570b0b made a header nested past Python's stack a protocol error; one that parses was
# still held by the controller, and any repr, == or json.dumps of it deeper in the stack (a
# verdict's reason quoting what a worker said, judge's dtype and meta words) raised
# RecursionError, which no caller catches: the check itself crashed instead of giving the
# candidate a verdict.
#
# Closed in the thirtieth session (96cb4be; not yet run on a GPU): a header nested deeper than
# 32 (ours nest four at most) is a protocol error as it is read: the worker broke the result
# protocol, crashed. Principle: what a worker sends is bounded before anything reads it.
import sys

import torch
import torch.nn as nn

_serving = sys.modules.get("kernelwright.tools.serving")
if _serving is not None:
    _send = _serving.Worker.send
    _deep: list = []
    for _ in range(600):  # deep past any header of ours; within json.dumps' own stack
        _deep = [_deep]

    def _nested_send(self, header, arrays=()):
        return _send(self, {**header, "deep": _deep}, arrays)

    _serving.Worker.send = _nested_send


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.linear(x))
