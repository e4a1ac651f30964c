# expect: crashed (broke the result protocol) — a timed call's ms of 400 digits: JSON carries it
# task: kernelbench/relu_mlp.py
# Written by a red-team review (thirty-first session), shown on a CPU against the real
# schedule.run: the controller's float() of the number raised OverflowError outside every
# handler, so `kernelwright check` ended in a traceback and a loop's whole run with it. Now a
# header integer past 64 bits is a protocol error (protocol._bounded_int), a round's samples
# must be finite, and what cannot be judged of a candidate's message is a verdict.
import sys

import torch
import torch.nn as nn

_rounds = sys.modules.get("kernelwright.tools.rounds")
if _rounds is not None:

    def _huge(method):
        def call(self, *args):
            reply = method(self, *args)
            reply["ms"] = 10**400  # every timed call, handed-over inputs or not
            return reply

        return call

    _rounds.TorchRounds.handed = _huge(_rounds.TorchRounds.handed)
    _real_round = _rounds.TorchRounds.round

    def _round(self, *args):
        f, names = sys._getframe(1), set()
        while f is not None:
            names.add(f.f_code.co_name)
            f = f.f_back
        reply = _real_round(self, *args)
        if "serve" in names and "warm_up" not in names:  # a timed call, not the warm-up
            reply["ms"] = 10**400
        return reply

    _rounds.TorchRounds.round = _round


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.linear(x))
