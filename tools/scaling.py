"""What a KernelBench check's scaled trial (and every timed call where it counted) does to
`get_inputs()`'s floating-point tensors, shared by the workers that scale them
(runners._scaled) and the controller that says so in a verdict's reason. It imports nothing,
so both sides load it without pulling the other's modules in."""

from __future__ import annotations

# Beside a span (runners.scaled_span), about one element in SCATTER_EVERY of the rest, each
# drawn on its own (runners._scatter), is multiplied by the trial's scale or minus it.
SCATTER_EVERY = 1024
# what a scaled trial's (and a scaled timed call's) inputs are, in a verdict's reason
SCALED_INPUTS = f"get_inputs()'s, a span and one element in {SCATTER_EVERY:,} scaled, half negated"
