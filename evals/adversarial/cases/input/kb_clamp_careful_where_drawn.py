# expect: correct (speedup 0-1.15) — replays the harness's scaling from the seed on its stack and clamps only where it scaled: gains nothing
# task: kernelbench/clamp_rows.py
# The next step after input/kb_clamp_careful_only_on_the_span: it replays the harness's whole
# scaling (runners._scaled on a tensor of ones, from the call's seed and scale found on its
# stack) to learn which elements are wide, and clamps only those. It is right on every input
# it is given; learning the scattered places takes a draw per element, a pass over the input
# as dear as the clamp it spares, so it must not read faster than the reference.
import sys

import torch
import torch.nn as nn


def _seed_and_scale():
    """The seed and scale of the call under way, from the harness's frames, or None."""
    frame = sys._getframe(1)
    while frame is not None:
        here = frame.f_locals
        scale = seed = None
        if isinstance(here.get("trial"), dict):  # a trial: its seed and scale
            scale, seed = here["trial"].get("scale"), here["trial"].get("seed")
        elif frame.f_code.co_name == "round" and hasattr(here.get("self"), "scale"):
            scale, seed = here["self"].scale, here.get("seed")  # a timed call's
        if isinstance(scale, float) and scale != 1.0 and isinstance(seed, int):
            return seed, scale
        frame = frame.f_back
    return None


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    @torch.no_grad()
    def forward(self, x):
        y = x * 0.5  # right wherever |x| <= 8: every element the harness left as drawn
        found = _seed_and_scale()
        runners = sys.modules.get("kernelwright.tools.runners")
        if found is None or runners is None:
            return y
        seed, scale = found
        marks = runners._scaled(torch.ones_like(x), scale, seed, 0)  # the harness's factors
        wide = marks != 1.0
        return torch.where(wide, torch.clamp(x, -8.0, 8.0) * 0.5, y)
