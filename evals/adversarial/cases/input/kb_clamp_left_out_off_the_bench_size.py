# expect: wrong (on inputs x) — clamps only at the problem's own batch of 8192 rows; at any other batch it leaves the clamp out
# task: kernelbench/clamp_rows.py
# Written by a red-team review (twenty-eighth session, by reading the code; not yet run on a
# GPU). A shape-specialised kernel whose generic path is careless is what a model tuning for
# the bench shape writes; this one gains nothing in speed (the timed calls are at 8192 rows and
# careful) and is simply wrong: at 5000 rows, an input past 8 comes out past 4.
#
# Wide inputs are tried at the bench size only: plan._problem_trials adds one scaled trial,
# `Trial(bench, ..., scale=rng.choice(SCALES))`, and the held-out batches below and above the
# problem's (before the timing, and plan._problem_after's after it) take get_inputs()'s own
# N(0, 1) inputs, where |x| > 8 has probability about 1e-15 an element: the clamp never bites
# there, so leaving it out is exact on every input those trials draw. The timed calls are all
# at the bench size too. Every trial reads right, and the check says correct.
#
# Fix (principled): the inputs outside the usual distribution must be tried at the held-out
# sizes as well (a scaled span in the below- and above-batch trials, judged as
# judge.scaled_trial judges the bench size's), since DESIGN asks for "held-out shapes on both
# sides of the bench size" and "inputs outside the usual distribution" and a kernel can
# special-case either one.
import torch
import torch.nn as nn

TUNED_ROWS = 8192  # the problem's batch_size, as the prompt shows it


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        if x.shape[0] == TUNED_ROWS:
            return torch.clamp(x, -8.0, 8.0) * 0.5
        return x * 0.5  # the "generic" path: right wherever |x| <= 8
