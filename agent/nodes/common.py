"""Small pieces several nodes share: when a candidate is kept, timing, when the run stops."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from kernelwright.agent.kinds import as_candidate, profile_view
from kernelwright.agent.state import LoopState

__all__ = ["as_candidate", "profile_view"]  # kept here for the nodes and tests that use them

KEEP_MARGIN = 1.005  # a candidate replaces the best only if faster by more than this
GAIN = 1.02  # a gain below 2% counts toward the plateau


def beats(speedup: float, best: float) -> bool:
    """Whether a correct candidate at `speedup` replaces the run's best (at `best`)."""
    return speedup > best * KEEP_MARGIN


@contextmanager
def stopwatch() -> Iterator[dict[str, float]]:
    """Yields a dict whose "s" holds the seconds the block took, once it ends."""
    box = {"s": 0.0}
    start = time.perf_counter()
    try:
        yield box
    finally:
        box["s"] = time.perf_counter() - start


def should_stop(state: LoopState) -> str:
    """Why the run ends now, or "" to go on (pure)."""
    if state.get("stop_reason"):
        return state["stop_reason"]
    attempts = state.get("attempts", [])
    if len(attempts) >= state["max_candidates"]:
        return f"budget: {len(attempts)} candidates tried"
    if state.get("elapsed_s", 0.0) >= state["max_seconds"]:
        return f"budget: {state.get('elapsed_s', 0.0):.0f} s spent"
    if state.get("rounds_without_gain", 0) >= state["plateau_rounds"]:
        return f"plateau: {state['rounds_without_gain']} candidates without a 2% gain"
    best_ms, floor_ms = state.get("best_ms"), state.get("floor_ms")
    if best_ms and floor_ms and best_ms <= floor_ms / 0.9:
        return f"near the roofline: {best_ms:.4f} ms against a floor of {floor_ms:.4f} ms"
    return ""
