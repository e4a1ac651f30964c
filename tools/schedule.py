"""The controller's side of the timing: which worker runs which rounds, when, and for how long.

The reference and the candidate are timed in their own processes, never in one: a candidate
can reach nothing of the reference's (its buffers, its model, its clock). The controller hands
both the same calls (an input seed and sign seeds each), one call per message, so that no
worker knows an input before the message that times it: it makes the input set, then times the
call on it. No later call's input exists while a call runs, so no call's work can be done
early (batched with the next, or with the cache warm). Calls go in batches, in the order
R C C R R C C R ..., on the same CPU (pool.timing_cpus), so drift over time falls on both alike;
each worker's batch runs with the other worker and everything it started paused (SIGSTOP: no
CPU, no new GPU work), so both are timed alone and alike (the reference's left running beside
the candidate's batches had put its self-check 0.95 to 1.04x on a 0.1 ms forward, against 0.99
to 1.02x with both paused), and the reference's worker first makes sure no other context holds
the GPU. Every message's wall time is taken by the controller's own clock:
what a worker reports is bounded by it (timing.unexplained_us).

A round is one call (CUDA tasks) or, for KernelBench problems, as many as fit about 2 ms of the
reference's time: the statistics compare rounds (the mean of their calls).

A side may be timed in several processes (`more` pairs of workers, KernelBench): the same
forward settles at a level of its own in each process, a few percent apart, which no number of
rounds in one process averages out. The pairs take turns, a stint each (R C C R R C C R), every
worker of the other pairs paused meanwhile; each pair's rounds are compared within the pair
(the same inputs at the same index). The first batch of a stint follows the pair's longest
pause, and is slower for it (on an H100, a reference always first read 2 to 4% slower against
itself): a pair's stints start with each side in turn (C R R C C R R C the next time), and the
rounds stop only once every pair has had an even number of stints.

It stops when the median ratio is known within `precision`, or its time budget is spent.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from .plan import RoundSeeds
from .protocol import Expect
from .sandbox import Sandbox, WorkerFailure
from .timing import ratio_settled

ROUND_KEYS = ("ms", "host_ms")
OVERRUN = 4.0  # rounds stop after any pair of batches once this many budgets are spent
# While the timed outputs so far do not decide their own test (Budget.outputs_settled), the
# rounds go on past their seconds, to this many budgets: a matmul on TF32 tensor cores in its
# timed calls alone (mean z^2 about 1.75 against a limit that falls toward 1.05 as calls add
# up) passed one check of three on an H200, its rounds stopped by the 0.6 s at 160 signed sums
# (limit 1.72); at twice that, some 400 (limit 1.47).
UNDECIDED_BUDGETS = 2.0
# The looks at the GPU before each batch are on no wall, and neither do they spend the rounds'
# seconds: a candidate that slept 13 s in its own look (or left GPU work for the reference's
# to wait out) ended the rounds by OVERRUN after one pair of batches, 26 calls, too few for
# the drift test (a red-team simulation). The candidate's own look must answer within
# WAKE_LIMIT_S (an honest one takes milliseconds; the look waits at most 2 s for the GPU);
# all of its looks together within WAKES_LIMIT_S, or the check is refused. The reference's
# looks, which wait for other work on a shared GPU (honest candidates alike), only end the
# rounds past LOOKS_LIMIT_S in all, as OVERRUN does: what was timed is then judged.
WAKE_LIMIT_S = 2.5
WAKES_LIMIT_S = 30.0
LOOKS_LIMIT_S = 120.0
# Several processes a side: the rounds stop after this many cycles at the least (each pair's
# stints, twice over): the medians that a forger lying in a minority of its batches cannot
# move need batches enough in every pair. After one cycle (eight a side a pair) a forger
# lying in a random 40% of its batches read 1.32x (the suite's kb_forge_some_batches, H100).
MIN_CYCLES = 2


@dataclass
class Rounds:
    """What the rounds produced: each side's replies, round by round (the same inputs at the
    same index), and per round both sides' wall times by the controller's clock."""

    ref: list[dict[str, Any]] = field(default_factory=list)
    cand: list[dict[str, Any]] = field(default_factory=list)
    walls: list[tuple[float, float, float, float, int]] = field(default_factory=list)
    # each call's [input seed, sign seed, sign seed], in the order of `ref` and `cand`
    entries: list[list[int]] = field(default_factory=list)
    # per batch, each worker's first empty launch, and the last once the GPU settled
    ref_quiet_us: list[float] = field(default_factory=list)
    cand_quiet_us: list[float] = field(default_factory=list)
    ref_settled_us: list[float] = field(default_factory=list)
    off_walls_ms: float = 0.0  # the looks at the GPU before the batches, by the controller's clock
    wakes_ms: float = 0.0  # the candidate's looks (woken before its batches), of those
    wall_ms: float = 0.0  # the warm-ups' and the rounds'
    warmup_ms: float = 0.0  # the warm-ups' (and the calls a round measured)
    calls: int = 1  # timed calls a round, each on its own input set
    call_wall_ms: float = 0.0  # a call's wall time in the reference's worker, where measured
    processes: int = 1  # each side's, taking turns
    process: list[int] = field(default_factory=list)  # per call, which pair of workers timed it
    # whether the timed calls' inputs were handed over (Budget.handover), and, where they
    # were to be and could not be, why
    handover: bool = False
    handover_problem: str = ""
    made: int = 0  # input sets made so far (each call's token)

    def ms(self, side: str) -> list[float]:
        return [float(r["ms"]) for r in (self.ref if side == "ref" else self.cand)]

    def host_ms(self, side: str) -> list[float]:
        return [float(r["host_ms"]) for r in (self.ref if side == "ref" else self.cand)]

    def round_ms(self, side: str) -> list[float]:
        """Per round, the mean of its calls' samples: the unit the statistics compare. Work a
        candidate moves between a round's calls still counts, in the round's sum."""
        ms, k = self.ms(side), max(1, self.calls)
        return [sum(ms[i : i + k]) / k for i in range(0, len(ms) - k + 1, k)]

    def round_process(self) -> list[int]:
        """Per round, which pair of workers timed it (0 where not recorded)."""
        k = max(1, self.calls)
        return [
            self.process[i] if i < len(self.process) else 0 for i in range(0, len(self.ref), k)
        ][: len(self.round_ms("ref"))]


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
    # KernelBench: every timed call's inputs with a span scaled by this (1: get_inputs()'s own)
    input_scale: float = 1.0
    # KernelBench: rounds of several calls, sized from the reference's own time (measured with
    # the candidate's worker paused); CUDA tasks: one call a round
    several_calls: bool = False
    # whether the timed calls' outputs so far decide their own test (judge.TimedCalls): the
    # rounds do not stop early, on a settled ratio, while they do not; None: they always do
    outputs_settled: Callable[[Sequence[dict[str, Any]], Sequence[dict[str, Any]]], bool] | None = (
        field(default=None, compare=False)
    )
    # KernelBench, where the GPU shares memory as descriptors: every timed call's inputs made
    # by its pair's reference worker and handed over (handover.py), never in the candidate's
    # process; its checksums there before and after the call kept in each reply
    handover: bool = False


# A round's calls add up to about ROUND_MS of the reference's time: the statistics compare
# rounds, whose noise falls as they grow.
ROUND_MS = 2.0
MAX_CALLS = 16


def calls_per_round(ref_call_ms: Any) -> int:
    """How many timed calls a round holds, from the reference's own rounds (pure): as many as
    fit ROUND_MS of the reference's time, 1 to MAX_CALLS."""
    try:
        ms = float(ref_call_ms)
    except (TypeError, ValueError):
        return 1
    if not ms > 0:
        return 1
    return min(MAX_CALLS, max(1, int(ROUND_MS / ms)))


def cycle_batch(per_batch: int, seconds: float, batches: int, round_wall_ms: float) -> int:
    """Rounds a batch where each side is timed in several processes (pure): as many as let
    the least the rounds run (MIN_CYCLES cycles of `batches` batches, every pair's stints)
    take about half the budget's `seconds` at `round_wall_ms` a round, at least 2 and at most
    `per_batch`; further cycles run while they fit the budget. The rounds stop at the end of
    a cycle, so that every pair has had as many stints, starting with each side alike; 16
    rounds a batch over three pairs had made a cycle 768 calls, 12 s of a 6 GiB forward's
    (its inputs made afresh each call), four times the budget. A cycle sized to half the
    budget made the least two cycles overrun it (1/1's rounds 3.4 s of a 3 s budget, H100).
    Unchanged where the round's wall time is unknown."""
    if not (seconds > 0 and round_wall_ms > 0 and batches > 0):
        return per_batch
    least = MIN_CYCLES * batches * round_wall_ms
    return max(2, min(per_batch, int(seconds * 1e3 / 2 / least)))


def _reply(header: dict[str, Any], who: str) -> dict[str, Any]:
    """A call's reply, with valid samples."""
    result = header.get("result")
    if (
        header.get("type") != "round"
        or not isinstance(result, dict)
        or not all(
            isinstance(v := result.get(k), int | float) and math.isfinite(v) and v >= 0
            for k in ROUND_KEYS
        )
    ):
        raise WorkerFailure("crashed", f"{who} worker sent no valid samples")
    return result


def _measure(ref: Sandbox, others: list[Sandbox], budget: Budget) -> tuple[int, float]:
    """Calls a round, from a few rounds of the reference's timed with every other worker (the
    candidate's, and any further pairs') paused (the warm-ups ran side by side: a candidate
    busy then would slow the reference's and buy itself rounds of one call, with the widest
    allowance a call); and a call's wall ms there, inputs and sketches included (0 where the
    worker does not say)."""
    with _paused(*others):
        ref.send({"cmd": "measure", "calls": 8, "probe": True})
        header, _ = ref.receive(budget.warmup_timeout_s, "timing the reference", Expect(sizes=()))
    if header.get("type") != "measured":
        raise WorkerFailure("crashed", "the reference worker sent no valid samples")
    wall = header.get("wall_ms")
    if not (isinstance(wall, int | float) and 0 < wall < 1e6):
        wall = 0.0
    return calls_per_round(header.get("ms")), float(wall)


def _round(
    box: Sandbox,
    group: list[list[int]],
    timeout_s: float,
    phase: str,
    who: str,
    maker: tuple[Sandbox, bool, Rounds] | None = None,
) -> tuple[float, list[dict[str, Any]]]:
    """A round's calls, a message each, with its input seed and sign seeds. Returns their wall
    ms by the controller's clock, added up, and their replies. `maker`: (the pair's reference
    worker, whether it is paused through this batch, the rounds so far): each call's inputs
    made there and handed over (_handed_call), its seed never sent to `box`."""
    wall, replies = 0.0, []
    for entry in group:
        if maker is not None:
            ref, ref_paused, out = maker
            with _running(ref, ref_paused):
                made = _make(ref, entry, out, timeout_s)
            if made is None:  # it was handed over in the warm-up: the same problem's inputs
                raise WorkerFailure("crashed", "the reference worker could not hand over inputs")
            took, reply = _handed_call(box, ref, made, entry, timeout_s, phase, who, ref_paused)
            wall += took
            replies.append(reply)
            continue
        t0 = time.perf_counter()
        box.send({"cmd": "round", "round": entry})
        header, _ = box.receive(timeout_s, phase, Expect(sizes=()))
        wall += (time.perf_counter() - t0) * 1e3
        replies.append(_reply(header, who))
    return wall, replies


def _probe(
    box: Sandbox, timeout_s: float, phase: str, who: str, wait: bool = True
) -> dict[str, Any]:
    """Before a batch, a message of its own that no wall counts: the (reference's) worker
    waits until no other context runs on the GPU (up to 2 s). Inside the batch's first call,
    that wait fell on the reference's wall and was credited to the candidate as the
    reference's harness time: a candidate that left 20 ms of GPU work behind each batch the
    reference's followed bought that much room to forge its samples in (the suite's
    kb_forge_behind_the_reference_probe)."""
    box.send({"cmd": "probe"} if wait else {"cmd": "probe", "wait": False})
    header, _ = box.receive(timeout_s, phase, Expect(sizes=()))
    if header.get("type") != "probed":
        raise WorkerFailure("crashed", f"the {who} worker did not probe the GPU")
    return header


@contextlib.contextmanager
def _paused(*boxes: Sandbox) -> Iterator[None]:
    """The workers and everything they started stopped meanwhile, and let go after, come what
    may. A worker that runs a candidate's host code is watched (Sandbox.pause): a CUDA
    kernel cannot ask the kernel to wake its process, and the reference's process is ours."""
    with contextlib.ExitStack() as stack:
        for box in boxes:
            box.pause(watch=box.host_code)
            stack.callback(box.resume)
        yield


def _us(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and value >= 0 else float("inf")


def run(
    ref: Sandbox,
    cand: Sandbox,
    budget: Budget,
    pin: set[int] | None = None,
    more: Sequence[tuple[Sandbox, Sandbox]] = (),
) -> Rounds:
    """Warm every worker up, then time batches in turn until the budget says stop. `more`:
    further (reference, candidate) pairs of workers, each side's in processes of its own."""
    out = Rounds()
    start = time.perf_counter()
    pairs = [(ref, cand), *more]
    out.processes = len(pairs)
    workers = [
        (box, who + (f" (process {n + 1})" if n else ""))
        for n, pair in enumerate(pairs)
        for box, who in zip(pair, ("reference", "candidate"), strict=True)
    ]
    everyone = [box for box, _ in workers]
    # side by side, each where it already runs: what the warm-up ran is never counted. Not
    # yet pinned: six workers pinned to the timing's two CPUs built their models and copied
    # their weights to the GPU one after another there (2/12's warm-up: 5.2 s on an H100)
    warmup = {"cmd": "warmup", "calls": 3, "seconds": 0.25, "model_seed": budget.model_seed}
    if budget.input_scale != 1.0:
        warmup["scale"] = budget.input_scale
    for box, _ in workers:
        box.send(warmup)
    for box, who in workers:
        header, _ = box.receive(budget.warmup_timeout_s, f"warming up the {who}", Expect(sizes=()))
        if header.get("type") != "warm":
            raise WorkerFailure("crashed", f"the {who} worker did not warm up")
    for box in everyone:  # then pinned (every thread, those the warm-up started too), before
        if pin:  # any call is measured or timed
            box.pin(pin)
    if budget.handover:  # a few calls on handed-over inputs, each side, dropped: the path warm
        out.handover = _handover_ready(pairs, budget, out)
    if budget.several_calls:
        out.calls, out.call_wall_ms = _measure(ref, everyone[1:], budget)
    out.warmup_ms = (time.perf_counter() - start) * 1e3
    for box in everyone:
        box.spin(0.005)
    try:
        _batches(pairs, budget, out)
    finally:
        for box in everyone:
            box.spin(0.0)
    out.wall_ms = (time.perf_counter() - start) * 1e3
    return out


HANDED_WARMUP = 2  # calls a side, on handed-over inputs, before any is timed


def _handover_ready(pairs: list[tuple[Sandbox, Sandbox]], budget: Budget, out: Rounds) -> bool:
    """False, with the reason in `out`, where a call's inputs cannot be handed over (an input
    that is not a tensor nor a plain value): every call's inputs are then made where it is
    timed. Else each side's worker of every pair times HANDED_WARMUP calls on inputs its
    pair's reference worker made (results dropped), the other side paused as in the rounds."""
    seeds = RoundSeeds()
    first = _make(pairs[0][0], seeds.take(1)[0], out, budget.round_timeout_s)
    if first is None:
        return False
    os.close(first[1])  # a look only: witnessed, and let go, unused
    _witness(pairs[0][0], first[2], budget.round_timeout_s)
    for ref, cand in pairs:
        for box, other, who in ((ref, cand, "reference"), (cand, ref, "candidate")):
            with _paused(other):
                _round(box, seeds.take(HANDED_WARMUP), budget.round_timeout_s,
                       f"warming up the {who} on handed-over inputs", who,
                       (ref, other is ref, out))  # fmt: skip
    return True


def _make(
    ref: Sandbox, entry: list[int], out: Rounds, timeout_s: float
) -> tuple[dict[str, Any], int, int] | None:
    """The reference's worker makes a call's inputs from the entry's seed (handover.py): what
    the timing worker is told, the descriptor (the caller closes it) and the call's token;
    None, with the reason in `out`, where they cannot be handed over."""
    out.made += 1
    token = out.made
    ref.send({"cmd": "make", "token": token, "seed": int(entry[0])})
    header, _ = ref.receive(timeout_s, "making a timed call's inputs", Expect(sizes=()))
    if header.get("type") != "made":
        raise WorkerFailure("crashed", "the reference worker made no inputs to hand over")
    if "problem" in header:
        out.handover_problem = str(header["problem"])[:300]
        return None
    spec = {"inputs": header.get("inputs"), "size": header.get("size")}
    if not isinstance(spec["inputs"], list) or type(spec["size"]) is not int:
        raise WorkerFailure("crashed", "the reference worker described its inputs wrongly")
    (fd,) = ref.receive_fds(1, timeout_s, "making a timed call's inputs")
    return spec, fd, token


def _witness(ref: Sandbox, token: int, timeout_s: float) -> dict[str, Any]:
    """The reference's worker's look at the inputs it made under `token`, after their call:
    their checksums before and after, and how long it first waited for a quiet GPU."""
    ref.send({"cmd": "witness", "token": token})
    seen, _ = ref.receive(timeout_s, "checking a timed call's inputs", Expect(sizes=()))
    if seen.get("type") != "witnessed":
        raise WorkerFailure("crashed", "the reference worker did not check the inputs it made")
    return seen


@contextlib.contextmanager
def _running(box: Sandbox, paused: bool) -> Iterator[None]:
    """The reference's worker let run meanwhile where it is `paused` (through the candidate's
    batch: it makes and witnesses each call's inputs), stopped again after (Sandbox.hold)."""
    if not paused:
        yield
        return
    box.hold(False)
    try:
        yield
    finally:
        box.hold(True)


def _handed_call(
    box: Sandbox,
    ref: Sandbox,
    made: tuple[dict[str, Any], int, int],
    entry: list[int],
    timeout_s: float,
    phase: str,
    who: str,
    ref_paused: bool,
) -> tuple[float, dict[str, Any]]:
    """One call on inputs `ref` made (`made`): the descriptor handed to `box` with the sign
    seeds only, the call's reply read, then the reference's worker witnesses the inputs
    (their checksums before and after: the reply's "inputs" and "inputs_after", which
    judge.TimedCalls holds to the reference's call's and to each other) once the GPU is quiet.
    Returns the call's wall ms by
    the controller's clock, from the message to the reply, with any wait for the GPU the
    witness met (work the call left running counts on its wall), and its reply with the
    witness's checksums. `ref_paused`: the reference's worker is stopped through the call
    (the candidate's batch) and let run only to witness."""
    spec, fd, token = made
    try:
        t0 = time.perf_counter()
        box.send({"cmd": "handed", "handed": spec, "signs": [int(entry[1]), int(entry[2])]})
        box.send_fds([fd])
    finally:
        os.close(fd)
    header, _ = box.receive(timeout_s, phase, Expect(sizes=()))
    wall = (time.perf_counter() - t0) * 1e3
    reply = _reply(header, who)
    with _running(ref, ref_paused):
        seen = _witness(ref, token, timeout_s)
    waited = seen.get("waited_ms")
    if isinstance(waited, int | float) and 0 < waited < 1e7:
        wall += float(waited)
    # as a CUDA task's rounds say them (judge.TimedCalls: "inputs" the same as the reference's
    # call's, "inputs_after" as "inputs"), but by the worker that made them
    return wall, {**reply, "inputs": seen.get("before"), "inputs_after": seen.get("after")}


def _batches(pairs: list[tuple[Sandbox, Sandbox]], budget: Budget, out: Rounds) -> None:
    seeds = RoundSeeds()
    timed_from = time.perf_counter()
    k = out.calls
    per_batch = max(2, -(-budget.batch // k)) if k > 1 else budget.batch
    several = len(pairs) > 1
    # one pair: R C C R, again and again; several: a stint is twice that, and alternates
    stint_orders = (("ref", "cand"), ("cand", "ref")) * (2 if several else 1)
    cycle = 2 * len(pairs) if several else 1  # stints before the rounds may stop
    if several:
        per_batch = cycle_batch(per_batch, budget.seconds, 2 * len(stint_orders) * cycle,
                                k * out.call_wall_ms)  # fmt: skip
    for stint in itertools.count():
        which = stint % len(pairs)
        ref, cand = pairs[which]
        idle = [box for pair in pairs if pair != (ref, cand) for box in pair]
        flip = several and (stint // len(pairs)) % 2 == 1  # this pair's stints, every other
        with _paused(*idle):  # the other pairs' workers: stopped through this pair's stint
            for order in stint_orders:
                order = order[::-1] if flip else order
                _pair_of_batches(ref, cand, order, seeds.take(per_batch * k), budget, out)
                out.process.extend([which] * (len(out.ref) - len(out.process)))
                if out.off_walls_ms - out.wakes_ms > LOOKS_LIMIT_S * 1e3:
                    return  # as OVERRUN: what was timed is judged (the notes say it was busy)
                if out.wakes_ms > WAKES_LIMIT_S * 1e3:
                    raise WorkerFailure(
                        "timeout",
                        f"the candidate's worker took {out.wakes_ms / 1e3:.0f} s in all to answer"
                        f" its looks at the GPU before its batches (at most {WAKES_LIMIT_S:.0f} s;"
                        " an honest one takes milliseconds)",
                    )
                spent = time.perf_counter() - timed_from - out.off_walls_ms / 1e3
                # calls far slower than the budget allows: one R-C pair of batches is all
                if budget.seconds > 0 and spent >= OVERRUN * budget.seconds:
                    return
        n, cycles = len(out.ref), (stint + 1) // cycle
        if (stint + 1) % cycle or (several and cycles < MIN_CYCLES) or n < budget.min_rounds:
            continue
        if n >= budget.max_rounds:
            return
        # the seconds stop the rounds only once the outputs decide their own test; undecided,
        # they go on to UNDECIDED_BUDGETS of them (an honest candidate's mean z^2 stays under 1
        # and costs no round more)
        decided = budget.outputs_settled is None or budget.outputs_settled(out.ref, out.cand)
        seconds = budget.seconds * (1.0 if decided else UNDECIDED_BUDGETS)
        # several pairs: a cycle that would end past the budget at this pace is not begun
        late = several and seconds > 0 and spent * (cycles + 1) / cycles > seconds
        if spent >= seconds or late:
            return
        if decided and ratio_settled(out.round_ms("ref"), out.round_ms("cand"), budget.precision):
            return


def _pair_of_batches(
    ref: Sandbox,
    cand: Sandbox,
    order: tuple[str, str],
    drawn: list[list[int]],
    budget: Budget,
    out: Rounds,
) -> None:
    """One batch a side, in `order`, on the same calls; each side timed with the other paused."""
    k = out.calls
    chunk = [drawn[i : i + k] for i in range(0, len(drawn), k)]
    walls: dict[str, list[tuple[float, float]]] = {}
    for side in order:
        box, who = (ref, "reference") if side == "ref" else (cand, "candidate")
        phase = f"timing the {who}"
        # Before either side's batch, the reference's worker looks at the GPU, the candidate's
        # paused (what it reads is trusted). Before the reference's batch, inside the very
        # pause its rounds run in: let go between the look and the rounds, the candidate could
        # queue GPU work to run beside them. The look also wakes the reference's worker for
        # its rounds; the candidate's is woken alike, by a look of its own inside the pause
        # its rounds run in (its reading not believed): woken by its first timed call instead,
        # after the reference's batch, that call's wall carried about 1 ms more than the
        # reference's (an H200: the problem's own Model read 0.91x to 0.97x against itself,
        # an honest 1.2x kernel 0.96x). Off the walls, that look is a window no clock counts;
        # the candidate cannot use it on its batch's calls, whose seeds it has not yet been
        # sent, and work that needs no inputs it may do once, at build time, anyway.
        looked = f"the reference's look at the GPU before the {who}'s batch"
        t0 = time.perf_counter()
        if side == "cand":
            with _paused(cand):
                probed = _probe(ref, budget.round_timeout_s, looked, "reference")
        with _paused(cand if side == "ref" else ref):  # each timed alone
            if side == "ref":
                probed = _probe(ref, budget.round_timeout_s, looked, "reference")
                out.ref_settled_us.append(_us(probed.get("settled_us")))
            else:
                woken = time.perf_counter()
                # one look, no wait for a quiet GPU: the reference's has waited for it
                _probe(cand, WAKE_LIMIT_S, "waking the candidate's worker", who, wait=False)
                out.wakes_ms += (time.perf_counter() - woken) * 1e3
            out.off_walls_ms += (time.perf_counter() - t0) * 1e3
            (out.ref_quiet_us if side == "ref" else out.cand_quiet_us).append(
                _us(probed.get("quiet_us"))
            )
            walls[side] = []
            maker = (ref, side == "cand", out) if out.handover else None
            for group in chunk:
                wall, replies = _round(box, group, budget.round_timeout_s, phase, who, maker)
                (out.ref if side == "ref" else out.cand).extend(replies)
                walls[side].append((wall, sum(float(r["ms"]) for r in replies)))
    for (cw, cs), (rw, rs) in zip(walls["cand"], walls["ref"], strict=True):
        out.walls.append((cw, cs, rw, rs, k))
    out.entries.extend(drawn)
