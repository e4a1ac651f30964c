# expect: wrong (wrong at) — in a process whose first 3 calls share one size (one that ran no trials), right only at that size
# task: kernelbench/relu_mlp.py
# The further timing processes run no trials, and neither does a user's program: both start
# by calling the model at one size. This candidate then computes only that size, and zeros at
# any other. The trials run in the first process, which sees several sizes at once and stays
# right; the further processes only ever see the timed size, where it is right (found in
# review in the fourteenth session), though a user's program gets zeros as soon as its batch
# changes. Caught by the batches tried after the timing in every process, the further ones
# included.
import torch
import torch.nn as nn

_first: list[tuple[int, ...]] = []


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        if len(_first) < 3:
            _first.append(tuple(x.shape))
        y = torch.relu(self.linear(x))
        one_size = len(_first) == 3 and len(set(_first)) == 1
        if one_size and tuple(x.shape) != _first[0]:
            return torch.zeros_like(y)
        return y
