"""Where a timing round's arrays sit in their buffers (no GPU needed: offsets only)."""

from __future__ import annotations

import pytest

runners = pytest.importorskip("kernelwright.tools.runners")


def test_a_rounds_offsets_come_from_its_seed_alike_in_every_worker() -> None:
    a, b = runners.leads(12345, 3), runners.leads(12345, 3)
    assert a == b and len(a) == 3
    assert all(v % runners.GUARD_BYTES == 0 and 0 <= v < runners.SPREAD_BYTES for v in a)
    assert runners.leads(0, 3) == [0, 0, 0]  # trials: no spread
    seen = {tuple(runners.leads(seed, 2)) for seed in range(1, 200)}
    assert len(seen) > 190  # a placement per round, not one reused
