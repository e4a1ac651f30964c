"""The controller's side of the timing: which worker runs which rounds, when, and for how long.

The reference and the candidate are timed in their own processes, never in one: a candidate
can reach nothing of the reference's (its buffers, its model, its clock). The controller hands
both the same rounds (input seed, sign seeds), one round per message so that no worker ever
knows a round's inputs before that round starts, in batches, in the order R C C R R C C R ...,
so drift over time falls on both alike; it pauses the candidate's worker and everything it
started (SIGSTOP: no CPU, no new GPU work) while the reference's batch runs, and the reference's
worker first makes sure no other context holds the GPU. Every batch's wall time is taken by the
controller's own clock: what a worker reports is bounded by it (timing.unexplained_us).

It stops when the median ratio is known within `precision`, or its time budget is spent.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from .plan import RoundSeeds
from .protocol import Expect
from .sandbox import Sandbox, WorkerFailure
from .timing import ratio_settled

ROUND_KEYS = ("ms", "host_ms")
OVERRUN = 4.0  # rounds stop after any pair of batches once this many budgets are spent


@dataclass
class Rounds:
    """What the rounds produced: each side's replies, round by round (the same inputs at the
    same index), and per round both sides' wall times by the controller's clock."""

    ref: list[dict[str, Any]] = field(default_factory=list)
    cand: list[dict[str, Any]] = field(default_factory=list)
    walls: list[tuple[float, float, float, float, int]] = field(default_factory=list)
    # per batch, each worker's first empty launch, and the last once the GPU settled
    ref_quiet_us: list[float] = field(default_factory=list)
    cand_quiet_us: list[float] = field(default_factory=list)
    ref_settled_us: list[float] = field(default_factory=list)
    # per round, each side's first phase by the controller's clock (two phases; else 0)
    ref_prepare_ms: list[float] = field(default_factory=list)
    cand_prepare_ms: list[float] = field(default_factory=list)
    wall_ms: float = 0.0

    def ms(self, side: str) -> list[float]:
        return [float(r["ms"]) for r in (self.ref if side == "ref" else self.cand)]

    def host_ms(self, side: str) -> list[float]:
        return [float(r["host_ms"]) for r in (self.ref if side == "ref" else self.cand)]


@dataclass(frozen=True)
class Budget:
    seconds: float = 0.6  # of rounds, once both sides are warm
    min_rounds: int = 24
    max_rounds: int = 400
    batch: int = 8
    precision: float = 0.005  # stop once the median ratio is known within +-0.5%
    round_timeout_s: float = 20.0
    warmup_timeout_s: float = 60.0
    model_seed: int = 0
    # KernelBench: a round is two messages, its inputs made first and then the call, so the
    # controller's clock bounds the call on its own (verdicts.py); CUDA tasks run trusted host
    # code only, one message a round
    two_phase: bool = False


def _reply(header: dict[str, Any], who: str) -> dict[str, Any]:
    result = header.get("result")
    if (
        header.get("type") != "round"
        or not isinstance(result, dict)
        or not all(isinstance(result.get(k), int | float) and result[k] >= 0 for k in ROUND_KEYS)
    ):
        raise WorkerFailure("crashed", f"{who} worker sent no valid samples")
    return result


def _us(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and value >= 0 else float("inf")


def run(ref: Sandbox, cand: Sandbox, budget: Budget, pin: set[int] | None = None) -> Rounds:
    """Warm both workers up, then time batches in turn until the budget says stop."""
    out = Rounds()
    start = time.perf_counter()
    workers = ((ref, "reference"), (cand, "candidate"))
    for box, _ in workers:  # side by side: what the warm-up ran is never counted
        if pin:
            box.pin(pin)
        box.send({"cmd": "warmup", "calls": 3, "seconds": 0.25, "model_seed": budget.model_seed})
    for box, who in workers:
        header, _ = box.receive(budget.warmup_timeout_s, f"warming up the {who}", Expect(sizes=()))
        if header.get("type") != "warm":
            raise WorkerFailure("crashed", f"the {who} worker did not warm up")
    for box in (ref, cand):
        box.spin(0.005)
    try:
        _batches(ref, cand, budget, out)
    finally:
        for box in (ref, cand):
            box.spin(0.0)
    out.wall_ms = (time.perf_counter() - start) * 1e3
    return out


def _batches(ref: Sandbox, cand: Sandbox, budget: Budget, out: Rounds) -> None:
    seeds, pairs = RoundSeeds(), 0
    timed_from = time.perf_counter()
    while True:
        chunk = seeds.take(budget.batch)
        walls: dict[str, list[tuple[float, float]]] = {}
        for side in ("ref", "cand") if pairs % 2 == 0 else ("cand", "ref"):
            box, who = (ref, "reference") if side == "ref" else (cand, "candidate")
            if side == "ref":
                cand.pause()
            try:
                walls[side] = []
                for i, entry in enumerate(chunk):  # one round a message: no worker knows the next
                    phase = f"timing the {who}"
                    if budget.two_phase:  # inputs first, then the call: each on the clock
                        t0 = time.perf_counter()
                        box.send({"cmd": "prepare", "seed": entry[0], "probe": i == 0})
                        first, _ = box.receive(budget.round_timeout_s, phase, Expect(sizes=()))
                        if first.get("type") != "ready":
                            raise WorkerFailure("crashed", f"{who} worker sent no valid samples")
                        prepared = (time.perf_counter() - t0) * 1e3
                        t0 = time.perf_counter()
                        box.send({"cmd": "call", "signs": list(entry[1:])})
                    else:
                        t0, prepared = time.perf_counter(), 0.0
                        box.send({"cmd": "round", "round": entry, "probe": i == 0})
                    header, _ = box.receive(budget.round_timeout_s, phase, Expect(sizes=()))
                    wall = (time.perf_counter() - t0) * 1e3
                    reply = _reply(header, who)
                    (out.ref if side == "ref" else out.cand).append(reply)
                    walls[side].append((wall, float(reply["ms"])))
                    (out.ref_prepare_ms if side == "ref" else out.cand_prepare_ms).append(prepared)
                    if i == 0:
                        if budget.two_phase:
                            header = first
                        quiet, settled = header.get("quiet_us"), header.get("settled_us")
                        quiets = out.ref_quiet_us if side == "ref" else out.cand_quiet_us
                        quiets.append(_us(quiet))
                        if side == "ref":
                            out.ref_settled_us.append(_us(settled))
            finally:
                if side == "ref":
                    cand.resume()
        for (cw, cs), (rw, rs) in zip(walls["cand"], walls["ref"], strict=True):
            out.walls.append((cw, cs, rw, rs, 1))
        pairs += 1
        n = len(out.ref)
        spent = time.perf_counter() - timed_from
        # calls far slower than the budget allows: one R-C pair of batches is all there will be
        if budget.seconds > 0 and spent >= OVERRUN * budget.seconds:
            break
        if (
            pairs % 2 == 0
            and n >= budget.min_rounds
            and (
                n >= budget.max_rounds
                or spent >= budget.seconds
                or ratio_settled(out.ms("ref"), out.ms("cand"), budget.precision)
            )
        ):
            break
