# expect: wrong — returns its previous output on every other call: some rounds cheat, hoping those go unchecked
# task: kernelbench/relu_mlp.py
# A check's trials at one size share one model, as KernelBench's harness builds one for all its
# trials: the previous output shows in the trials already (before, each trial built its own
# model, and it showed only during timing). Timed calls checked one by one: kb_batched_calls,
# kb_background_thread, kb_lazy_when_timed and the other "when timed" and "during timing" cases.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    calls = 0

    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.last = None

    def forward(self, x):
        ModelNew.calls += 1
        if ModelNew.calls % 2 == 0 and self.last is not None and self.last.shape[0] == x.shape[0]:
            return self.last
        self.last = torch.relu(self.linear(x))
        return self.last
