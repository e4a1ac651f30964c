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


def test_a_scaled_trial_scales_a_span_drawn_from_its_seed_never_the_whole_input() -> None:
    """Both workers draw the same span from a trial's seed; it is a half, an eighth or a 64th
    of the input at any offset, so code that looks at its first or last elements to choose a
    careful path for wide inputs is seen on the rest; an input of one element is scaled."""
    n = 1 << 20
    fractions, firsts, lasts, starts = set(), 0, 0, set()
    for seed in range(600):
        start, stop = runners.scaled_span(n, seed, 0)
        assert (start, stop) == runners.scaled_span(n, seed, 0)  # alike in every worker
        assert 0 <= start < stop <= n and stop - start < n
        fractions.add(n // (stop - start))
        firsts += start < 64
        lasts += stop > n - 64
        starts.add(start)
    assert fractions == set(runners.SPAN_FRACTIONS)
    assert firsts + lasts < 6 and len(starts) > 590
    assert runners.scaled_span(n, 7, 0) != runners.scaled_span(n, 7, 1)  # each input its own
    assert runners.scaled_span(1, 3, 0) == (0, 1) and runners.scaled_span(5, 3, 0)[1] <= 5


def _signs(start: int, stop: int, scale: float) -> list[float]:
    """What a scaled span's elements are multiplied by: its first half by the scale, its
    second by minus the scale."""
    mid = start + (stop - start + 1) // 2
    return [scale] * (mid - start) + [-scale] * (stop - mid)


def test_a_scaled_inputs_span_is_multiplied_in_place_whatever_its_layout() -> None:
    """Contiguous: the span of its elements; strided (a transposed matrix): whole rows of its
    first dimension; an expanded tensor, which cannot be written in place: made whole first.
    The span's first half is scaled, its second negated too. Where torch is installed (the GPU
    machine; not CI)."""
    torch = pytest.importorskip("torch")
    x = torch.randn(64, 48)
    keep = x.clone()
    got = runners._scaled(x, 32.0, 11, 0)
    start, stop = runners.scaled_span(64 * 48, 11, 0)
    assert got is x  # in place
    flat, want = got.reshape(-1), keep.reshape(-1)
    times = torch.tensor(_signs(start, stop, 32.0))
    assert torch.equal(flat[start:stop], want[start:stop] * times)
    assert (times < 0).any() and (times > 0).any()
    assert torch.equal(flat[:start], want[:start]) and torch.equal(flat[stop:], want[stop:])

    t = torch.randn(48, 64).t()  # strided
    keep = t.clone()
    start, stop = runners.scaled_span(64, 5, 1)
    got = runners._scaled(t, 64.0, 5, 1)
    times = torch.tensor(_signs(start, stop, 64.0)).unsqueeze(1)  # whole rows
    assert torch.equal(got[start:stop], keep[start:stop] * times)
    assert torch.equal(got[:start], keep[:start]) and torch.equal(got[stop:], keep[stop:])

    s = torch.randn(1, 64, 48).transpose(1, 2)  # strided, one row: the rows of that row
    keep = s.clone()
    start, stop = runners.scaled_span(48, 7, 0)
    got = runners._scaled(s, 32.0, 7, 0)
    times = torch.tensor(_signs(start, stop, 32.0)).unsqueeze(1)
    assert (times < 0).any() and torch.equal(got[0, start:stop], keep[0, start:stop] * times)
    assert torch.equal(got[0, :start], keep[0, :start])
    assert torch.equal(got[0, stop:], keep[0, stop:])

    e = torch.randn(1, 40).expand(8, 40)  # one row's memory for all eight
    got = runners._scaled(e, 128.0, 3, 2)
    start, stop = runners.scaled_span(8 * 40, 3, 2)
    times = torch.tensor(_signs(start, stop, 128.0))
    assert got.is_contiguous() and torch.equal(
        got.reshape(-1)[start:stop], e.reshape(-1)[start:stop] * times
    )
    # one element: scaled, not negated (the span's first half is all of it)
    assert torch.equal(runners._scaled(torch.tensor(1.5), 32.0, 1, 0), torch.tensor(48.0))
    assert _signs(4, 5, 2.0) == [2.0] and _signs(4, 7, 2.0) == [2.0, 2.0, -2.0]


def test_a_tensor_get_inputs_keeps_is_handed_out_as_a_copy_and_never_scaled_in_place() -> None:
    """Every call's tensors are its own: a tensor get_inputs() keeps on the GPU between calls,
    or a view of one, is copied (found once a process, from a set made and let go), so a
    scaled call (verify.py scales every timed call where the scaled trial counted) never
    writes the problem's own tensor, in any process. Where torch and a GPU are."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    import types

    kept = torch.ones(4096, device="cuda")
    buf = torch.ones(8192, device="cuda")
    problem = types.SimpleNamespace(
        get_inputs=lambda: [kept, buf[:4096], torch.ones(4096), torch.ones(4096)[:2048], 3]
    )
    runner = runners.TorchRunner.__new__(runners.TorchRunner)
    runner.torch, runner.problem, runner._keeps = torch, problem, None
    runner._seed = lambda seed: None  # type: ignore[method-assign]
    runner._apply = lambda overrides: None  # type: ignore[method-assign]
    first = runner.fresh_inputs(5, 32.0)
    again = runner.fresh_inputs(6, 32.0)
    assert runner._keeps == frozenset({0, 1})  # the kept tensor and the view of kept memory
    assert torch.equal(kept, torch.ones(4096, device="cuda"))  # never written
    assert torch.equal(buf, torch.ones(8192, device="cuda"))
    for made, seed in ((first, 5), (again, 6)):
        start, stop = runners.scaled_span(4096, seed, 0)
        times = torch.tensor(_signs(start, stop, 32.0), device="cuda")
        assert made[0] is not kept and torch.equal(made[0][start:stop], kept[start:stop] * times)
        assert made[4] == 3
