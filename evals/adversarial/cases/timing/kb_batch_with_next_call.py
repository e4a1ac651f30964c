# expect: correct (speedup 0-1.15) — does the next call's work with this one's (one batched GEMM), from any input seed sent to its worker early
# task: kernelbench/relu_mlp.py
# A worker that knew a later call's input while timing this one could do both at once: one
# GEMM of twice the rows costs far less than two, and the later call is answered for free. Each
# call's seed comes only in the message that times it, so there is nothing to read ahead.
import sys

import torch
import torch.nn as nn

_seen = []  # every seed this worker was sent, in order
_early = {}  # the seed of a later call: its output, computed early

_protocol = sys.modules.get("kernelwright.tools.protocol")
_runners = sys.modules.get("kernelwright.tools.runners")
_runner = []
_rest = []  # what else the harness passes when it makes an input set (its scale)
if _protocol is not None:
    _read = _protocol.FrameReader.read_message

    def _recording(self, *args, **kwargs):
        header, arrays = _read(self, *args, **kwargs)
        for key in ("round", "next", "seeds"):
            value = header.get(key) if isinstance(header, dict) else None
            if isinstance(value, list) and value and isinstance(value[0], int):
                _seen.append(value[0])
        return header, arrays

    _protocol.FrameReader.read_message = _recording
if _runners is not None:
    _fresh = _runners.TorchRunner.fresh_inputs
    _made = []  # the seeds the harness made input sets for, in order

    def _keep(self, seed, *rest):
        _runner[:], _rest[:] = [self], rest
        _made.append(seed)
        return _fresh(self, seed, *rest)

    _runners.TorchRunner.fresh_inputs = _keep


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        current = _made[-1] if _made else None
        if current in _early:
            return _early.pop(current)
        ahead = [s for s in _seen if s not in _made and s not in _early]
        if ahead and _runner:
            (later,) = _fresh(_runner[0], ahead[0], *_rest)[:1]
            both = torch.relu(self.linear(torch.cat([x, later])))
            _early[ahead[0]] = both[x.shape[0] :]
            return both[: x.shape[0]]
        return torch.relu(self.linear(x))
