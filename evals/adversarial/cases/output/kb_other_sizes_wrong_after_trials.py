# expect: wrong (wrong at) — right at every size for its first 40 calls (the trials), then right only at the size it was timed at
# task: kernelbench/relu_mlp.py
# A time bomb past the held-out sizes: the trials (other batches above and below the problem's)
# all run before the timing; until the fifteenth session only the problem's own size was checked
# after it, so the code that was timed was never seen at another size (found in review in the
# fourteenth session). A user's program that calls it more than 40 times gets zeros at any
# other batch. Caught by the batches tried after the timing, in every process that timed.
import torch
import torch.nn as nn

_calls = [0]
_timed_rows: dict[str, int] = {}


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        _calls[0] += 1
        y = torch.relu(self.linear(x))
        if _calls[0] > 40:  # past the trials: the warm-up and the timing, at one size
            rows = _timed_rows.setdefault("rows", x.shape[0])
            if x.shape[0] != rows:
                return torch.zeros_like(y)
        return y
