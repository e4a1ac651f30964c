"""The controller's schedule of timing rounds, with recorded workers (no GPU): both sides get
the same rounds in turn, R C C R; each is paused whenever the other's batch runs; the
rounds stop when the ratio is known or the budget is spent; a worker's malformed reply is a
broken worker."""

from __future__ import annotations

import random
from typing import Any

import pytest

from kernelwright.tools import schedule
from kernelwright.tools.sandbox import WorkerFailure


class FakeWorker:
    """Answers the schedule's commands as a worker would; logs what happens to it."""

    def __init__(self, name: str, log: list[str], ms: float, noise: float = 0.0) -> None:
        self.name, self.log, self.ms, self.noise = name, log, ms, noise
        self.rng = random.Random(name)
        self.pending: dict[str, Any] = {}
        self.rounds_seen: list[list[int]] = []
        self.paused = False
        self.in_batch = False  # a round seen since its last pause or probe
        self.probes = 0
        self.label = name
        self.host_code = name.startswith("cand")  # a KernelBench candidate's, say
        self.watched: list[bool] = []  # each pause: whether it was to be seen to hold

    def pin(self, cpus: set[int]) -> None:
        self.log.append(f"{self.name} pinned {sorted(cpus)}")

    def spin(self, seconds: float) -> None:
        self.log.append(f"{self.name} spin {seconds}")

    def pause(self, watch: bool = True) -> None:
        self.watched.append(watch)
        self.paused = True
        self.in_batch = False
        self.log.append(f"{self.name} paused")

    def resume(self) -> None:
        self.paused = False
        self.log.append(f"{self.name} resumed")

    def send(self, header: dict[str, Any], arrays: Any = None) -> None:
        assert not self.paused, f"{self.name} was sent a command while paused"
        self.pending = header

    def receive(
        self, timeout_s: float, phase: str, expect: Any = None
    ) -> tuple[dict[str, Any], list[bytes]]:
        cmd = self.pending
        if cmd["cmd"] == "warmup":
            return {"type": "warm"}, []
        if cmd["cmd"] == "measure":
            return {"type": "measured"}, []
        if cmd["cmd"] == "probe":  # before a batch, apart from its calls
            self.probes += 1
            self.in_batch = False
            return {"type": "probed", "quiet_us": 10.0, "settled_us": 10.0}, []
        assert "probe" not in cmd
        if not self.in_batch:  # a batch's first call
            self.in_batch = True
            self.log.append(f"{self.name} rounds")
        self.rounds_seen.append(cmd["round"])
        result = {"ms": self.ms * (1 + self.rng.gauss(0, self.noise)), "host_ms": 2 * self.ms}
        return {"type": "round", "result": result}, []


def _run(ref: Any, cand: Any, **budget: Any) -> schedule.Rounds:
    return schedule.run(ref, cand, schedule.Budget(**budget), pin={2, 3})  # type: ignore[arg-type]


def test_turns_pauses_and_the_same_rounds_on_both_sides() -> None:
    log: list[str] = []
    ref, cand = FakeWorker("ref", log, 1.0), FakeWorker("cand", log, 0.5)
    out = _run(ref, cand, min_rounds=32, batch=8, seconds=0.0)
    turns = [e.split()[0] for e in log if e.endswith("rounds")]
    assert turns == ["ref", "cand", "cand", "ref"] * 2  # R C C R, R C C R
    # the reference's worker looks at the GPU before every batch; the candidate's is woken
    # alike before its own, by a look inside the pause its rounds run in
    assert ref.probes == 8 and cand.probes == 4
    for i, entry in enumerate(log):  # every batch inside a pause of the other worker: alike
        if entry.endswith(" rounds"):
            other = "cand" if entry == "ref rounds" else "ref"
            assert log[i - 1] == f"{other} paused" and log[i + 1] == f"{other} resumed"
    assert ref.rounds_seen == cand.rounds_seen and len(ref.rounds_seen) == 32
    assert len({tuple(r) for r in ref.rounds_seen}) == 32  # every round's seeds are fresh
    assert "ref pinned [2, 3]" in log and "cand pinned [2, 3]" in log
    assert len(out.walls) == 32 and all(w[4] == 1 for w in out.walls)  # per round
    assert out.ms("ref") == [1.0] * 32 and out.ms("cand") == [0.5] * 32
    # each call's seeds, in the replies' order: what a later audit of a call recomputes from
    assert out.entries == cand.rounds_seen


def test_only_the_candidates_pauses_are_watched() -> None:
    """A pause of a worker that runs the candidate's host code is seen to hold (Sandbox.pause's
    watch: its threads counted while stopped); the reference's worker is ours, and its pauses
    are not counted."""
    log: list[str] = []
    ref, cand = FakeWorker("reference", log, 1.0), FakeWorker("candidate", log, 0.5)
    _run(ref, cand, min_rounds=16, batch=8, seconds=0.0)
    assert cand.watched and all(cand.watched)
    assert ref.watched and not any(ref.watched)


def test_quiet_rounds_stop_early_noisy_ones_run_to_the_budget() -> None:
    quiet = _run(FakeWorker("ref", [], 1.0), FakeWorker("cand", [], 0.5), min_rounds=24)
    assert len(quiet.ref) == 32  # the first even number of pairs past the minimum
    noisy = _run(
        FakeWorker("ref", [], 1.0, 0.3),
        FakeWorker("cand", [], 0.5, 0.3),
        min_rounds=24,
        max_rounds=160,
        seconds=60.0,
    )
    assert len(noisy.ref) == 160


def test_the_candidate_stays_paused_from_the_references_look_to_its_last_round() -> None:
    """Let go between the reference's look at the GPU and its rounds, a candidate's thread could
    queue GPU work to run beside the reference's batch, after the look had found the GPU quiet.
    From the look before the reference's batch to its last round, the candidate stays paused."""
    log: list[str] = []

    class Looking(FakeWorker):
        def receive(self, *args: Any, **kwargs: Any) -> tuple[dict[str, Any], list[bytes]]:
            if self.pending["cmd"] == "probe":
                self.log.append("ref looks")
            return super().receive(*args, **kwargs)

    _run(Looking("ref", log, 1.0), FakeWorker("cand", log, 0.5), min_rounds=16)
    looks = [i for i, e in enumerate(log) if e == "ref looks"]
    batches = [i for i, e in enumerate(log) if e == "ref rounds"]
    assert batches and len(looks) == 2 * len(batches)
    for at in batches:
        look = max(i for i in looks if i < at)
        assert "cand resumed" not in log[look:at]
        assert log[look - 1] == "cand paused"


def test_the_candidate_is_woken_as_the_reference_is_inside_the_pause_of_its_batch() -> None:
    """The reference's look wakes its worker for its rounds; woken by its first timed call
    instead, the candidate's worker carried about 1 ms more in that call's wall (an H200: the
    problem's own Model read 0.91x against itself). Its own look comes after the reference's,
    the reference paused, and nothing the candidate says there is kept."""
    log: list[str] = []

    class Waking(FakeWorker):
        def receive(self, *args: Any, **kwargs: Any) -> tuple[dict[str, Any], list[bytes]]:
            if self.pending["cmd"] == "probe":
                self.log.append(f"{self.name} looks")
                if self.name == "cand":  # what it says of the GPU is not believed
                    self.probes += 1
                    self.in_batch = False
                    return {"type": "probed", "quiet_us": 1e9, "settled_us": 1e9}, []
            return super().receive(*args, **kwargs)

    out = _run(Waking("ref", log, 1.0), Waking("cand", log, 0.5), min_rounds=16)
    batches = [i for i, e in enumerate(log) if e == "cand rounds"]
    assert batches
    for at in batches:
        woken = max(i for i, e in enumerate(log[:at]) if e == "cand looks")
        looked = max(i for i, e in enumerate(log[:woken]) if e == "ref looks")
        paused = max(i for i, e in enumerate(log[:woken]) if e == "ref paused")
        assert looked < paused < woken and "ref resumed" not in log[paused:at]
        assert not [e for e in log[woken + 1 : at] if e.startswith("cand")]
    assert max(out.cand_quiet_us + out.ref_settled_us) == 10.0


def test_a_candidate_that_does_not_wake_is_a_broken_worker() -> None:
    class Sleeper(FakeWorker):
        def receive(self, *args: Any, **kwargs: Any) -> tuple[dict[str, Any], list[bytes]]:
            if self.pending["cmd"] == "probe":
                return {"type": "round", "result": {"ms": 0.5, "host_ms": 1.0}}, []
            return super().receive(*args, **kwargs)

    with pytest.raises(WorkerFailure, match="candidate worker did not probe"):
        _run(FakeWorker("ref", [], 1.0), Sleeper("cand", [], 0.5))


def test_the_looks_spend_none_of_the_rounds_seconds_and_are_bounded() -> None:
    """The looks at the GPU are on no wall: neither may they end the rounds. A candidate that
    slept 13 s in its own look ended them by OVERRUN after one pair of batches (26 calls, too
    few for the drift test). Its look must answer within WAKE_LIMIT_S, all of its looks within
    WAKES_LIMIT_S, or the check is refused; the reference's looks, which wait for other work
    on a shared GPU, honest candidates alike, are not capped."""
    import time

    timeouts: list[float] = []

    class Sleepy(FakeWorker):
        def receive(self, timeout_s: float, *args: Any, **kwargs: Any) -> Any:
            if self.pending["cmd"] == "probe":
                timeouts.append(timeout_s)
                time.sleep(0.02)
            return super().receive(timeout_s, *args, **kwargs)

    # looks of 20 ms against 10 ms of rounds' seconds (OVERRUN: 40 ms): they would have ended
    # the rounds after the first pair of batches
    out = _run(Sleepy("ref", [], 1.0), Sleepy("cand", [], 0.5), min_rounds=24, seconds=0.01)
    assert len(out.ref) == len(out.cand) == 32  # the rounds the budget asks for
    assert out.off_walls_ms >= 6 * 20
    assert schedule.WAKE_LIMIT_S in timeouts and max(timeouts) > schedule.WAKE_LIMIT_S
    assert timeouts.count(schedule.WAKE_LIMIT_S) == 4  # the candidate's, one a batch of its

    old = schedule.WAKES_LIMIT_S
    try:
        schedule.WAKES_LIMIT_S = 0.05
        # the reference's own looks, however slow (a GPU shared with other work), are no limit
        out = _run(Sleepy("ref", [], 1.0), FakeWorker("cand", [], 0.5), min_rounds=24)
        assert len(out.ref) == 32 and out.off_walls_ms > 0.05e3 and out.wakes_ms < 0.05e3
        with pytest.raises(WorkerFailure, match="to answer its looks at the GPU") as err:
            _run(FakeWorker("ref", [], 1.0), Sleepy("cand", [], 0.5), min_rounds=24)
        assert err.value.verdict == "timeout"
    finally:
        schedule.WAKES_LIMIT_S = old
    # the reference's looks have a limit of their own, far above an honest check's: past it
    # (GPU work kept running between the batches) the rounds end, as OVERRUN ends them, and
    # what was timed is judged; the check does not go on for minutes
    old = schedule.LOOKS_LIMIT_S
    try:
        schedule.LOOKS_LIMIT_S = 0.03  # two looks of 20 ms at least in the first pair
        out = _run(Sleepy("ref", [], 1.0), FakeWorker("cand", [], 0.5), min_rounds=24)
        assert len(out.ref) == len(out.cand) == 8  # one pair of batches, then it stopped
    finally:
        schedule.LOOKS_LIMIT_S = old


def test_the_candidates_look_is_one_look_with_no_wait() -> None:
    """The reference's look waits (up to 2 s) for a quiet GPU; the candidate's, which only
    wakes its worker, looks once: on a GPU shared with bursty work, waits of its own would
    have added up against its cap and blamed an honest candidate."""
    sent: list[tuple[str, dict[str, Any]]] = []

    class Logged(FakeWorker):
        def send(self, header: dict[str, Any], arrays: Any = None) -> None:
            sent.append((self.name, header))
            super().send(header, arrays)

    _run(Logged("ref", [], 1.0), Logged("cand", [], 0.5), min_rounds=16)
    looks = [(who, h) for who, h in sent if h["cmd"] == "probe"]
    assert {who for who, _ in looks} == {"ref", "cand"}
    assert all(h.get("wait", True) is (who == "ref") for who, h in looks)


def test_rounds_go_on_while_the_outputs_are_undecided() -> None:
    """A settled ratio stops quiet rounds at the first even number of pairs past the minimum,
    unless the timed outputs so far do not decide their own test (judge.TimedCalls): then the
    rounds go on, to the budget at most, and stop as soon as they do."""
    seen: list[int] = []

    def after(n: int) -> Any:
        def settled(ref: Any, cand: Any) -> bool:
            assert len(ref) == len(cand)
            seen.append(len(cand))
            return len(cand) >= n

        return settled

    quiet = _run(FakeWorker("ref", [], 1.0), FakeWorker("cand", [], 0.5), min_rounds=24)
    assert len(quiet.ref) == 32
    late = _run(
        FakeWorker("ref", [], 1.0), FakeWorker("cand", [], 0.5), min_rounds=24,
        outputs_settled=after(64),
    )  # fmt: skip
    assert len(late.ref) == 64 and seen[-1] == 64 and seen[0] == 32
    capped = _run(
        FakeWorker("ref", [], 1.0), FakeWorker("cand", [], 0.5), min_rounds=24, max_rounds=48,
        outputs_settled=after(10**9),
    )  # fmt: skip
    assert len(capped.ref) == 48  # never past the budget


def test_undecided_outputs_carry_the_rounds_past_their_seconds_to_twice_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The seconds stopped a TF32 matmul's rounds before its drift was decided (it passed one
    check of three): undecided, the rounds go on to UNDECIDED_BUDGETS of the seconds, and a
    decided or honest check still stops at its seconds. On a clock of the test's own, each
    round 2 ms a side: nothing here depends on the machine's speed."""
    clock = [0.0]
    monkeypatch.setattr(schedule.time, "perf_counter", lambda: clock[0])

    class Slow(FakeWorker):
        def receive(self, *args: Any, **kwargs: Any) -> tuple[dict[str, Any], list[bytes]]:
            if self.pending["cmd"] == "round":
                clock[0] += 0.002
            return super().receive(*args, **kwargs)

    def run(settled: bool) -> tuple[int, float]:
        start = clock[0]
        out = _run(
            Slow("ref", [], 1.0, 0.3), Slow("cand", [], 0.5, 0.3), min_rounds=8, batch=8,
            seconds=0.3, max_rounds=10**6, outputs_settled=lambda ref, cand: settled,
        )  # fmt: skip
        return len(out.ref), clock[0] - start

    decided, t_decided = run(True)
    undecided, t_undecided = run(False)
    stint = 4 * 8 * 2 * 0.002  # a stint: two pairs of batches of 8 rounds, 2 ms a side
    assert 0.3 <= t_decided <= 0.3 + stint  # noisy ratios: the seconds stop them
    # twice the seconds, short of OVERRUN's four
    assert 0.6 <= t_undecided <= 0.6 + stint and undecided > 1.8 * decided


@pytest.mark.parametrize(
    "reply",
    [
        {"type": "rounds", "rounds": []},
        {"type": "rounds", "rounds": [{"ms": -1.0, "host_ms": 1.0}] * 8},
        {"type": "rounds", "rounds": [{"ms": "fast", "host_ms": 1.0}] * 8},
        {"type": "timing", "rounds": [{"ms": 1.0, "host_ms": 1.0}] * 8},
    ],
)
def test_a_malformed_reply_is_a_broken_worker(reply: dict[str, Any]) -> None:
    class Liar(FakeWorker):
        def receive(self, *args: Any, **kwargs: Any) -> tuple[dict[str, Any], list[bytes]]:
            if self.pending["cmd"] in ("warmup", "probe"):
                return super().receive(*args, **kwargs)
            return reply, []

    class NoProbe(FakeWorker):
        def receive(self, *args: Any, **kwargs: Any) -> tuple[dict[str, Any], list[bytes]]:
            if self.pending["cmd"] == "probe":
                return reply, []
            return super().receive(*args, **kwargs)

    with pytest.raises(WorkerFailure, match="no valid"):
        _run(FakeWorker("ref", [], 1.0), Liar("cand", [], 0.5))
    with pytest.raises(WorkerFailure, match="did not probe"):
        _run(NoProbe("ref", [], 1.0), FakeWorker("cand", [], 0.5))


def test_the_candidate_is_resumed_even_when_the_reference_fails() -> None:
    log: list[str] = []

    class Dying(FakeWorker):
        def receive(self, *args: Any, **kwargs: Any) -> tuple[dict[str, Any], list[bytes]]:
            if self.pending["cmd"] == "warmup":
                return {"type": "warm"}, []
            raise WorkerFailure("crashed", "gone")

    cand = FakeWorker("cand", log, 0.5)
    with pytest.raises(WorkerFailure):
        _run(Dying("ref", log, 1.0), cand)
    assert log[-4:-2] == ["cand paused", "cand resumed"] and not cand.paused


def test_no_worker_is_ever_told_a_round_before_it_starts() -> None:
    """A candidate that reads its harness's memory must find no future round there."""
    log: list[str] = []

    class Watcher(FakeWorker):
        def send(self, header: dict[str, Any], arrays: Any = None) -> None:
            super().send(header, arrays)
            if header["cmd"] == "round":
                assert len(header["round"]) == 3 and "rounds" not in header

    _run(Watcher("ref", log, 1.0), Watcher("cand", log, 0.5), min_rounds=16)


def test_calls_far_slower_than_the_budget_stop_after_one_pair_of_batches() -> None:
    """A candidate whose own threads starve it (or an honest forward of seconds) must not hold
    the check for minutes: past OVERRUN budgets, one R-C pair of batches is what is timed."""
    import time

    class Slow(FakeWorker):
        def receive(self, *args: Any, **kwargs: Any) -> tuple[dict[str, Any], list[bytes]]:
            if self.pending["cmd"] != "warmup":
                time.sleep(0.01)
            return super().receive(*args, **kwargs)

    out = _run(FakeWorker("ref", [], 1.0), Slow("cand", [], 0.5), batch=8, seconds=0.01)
    assert len(out.ref) == len(out.cand) == 8
    fast = _run(FakeWorker("ref", [], 1.0), FakeWorker("cand", [], 0.5), batch=8, seconds=60.0)
    assert len(fast.ref) == 32  # the minimum of 24 rounds, in whole R C C R pairs


def test_kernelbench_rounds_a_call_a_message_sized_by_the_reference() -> None:
    """KernelBench rounds: several calls, each in a message of its own with its own input seed
    and sign seeds (a worker never knows an input before the message that times it); as many
    calls a round as fit 2 ms of the reference's time, measured with the candidate paused."""
    sent: list[dict[str, Any]] = []

    class Logged(FakeWorker):
        def send(self, header: dict[str, Any], arrays: Any = None) -> None:
            sent.append(header)
            super().send(header, arrays)

    class Fast(Logged):  # a reference whose forward takes 0.25 ms: 8 calls a round
        def receive(self, *args: Any, **kwargs: Any) -> tuple[dict[str, Any], list[bytes]]:
            if self.pending["cmd"] == "warmup":  # side by side: a busy candidate could slow it
                return {"type": "warm", "ms": 5.0}, []
            if self.pending["cmd"] == "measure":
                assert cand.paused, "the reference was measured beside a running candidate"
                return {"type": "measured", "ms": 0.25}, []
            return super().receive(*args, **kwargs)

    ref, cand = Fast("ref", [], 0.25), Logged("cand", [], 0.1)
    out = _run(ref, cand, batch=16, seconds=60.0, several_calls=True)
    assert out.calls == 8 and len(out.ref) == len(out.cand) == 32
    assert not cand.paused
    assert ref.rounds_seen == cand.rounds_seen
    assert len({seen[0] for seen in ref.rounds_seen}) == 32  # an input set per call
    calls = [h for h in sent if h["cmd"] == "round"]
    assert len(calls) == 64 and all(len(h["round"]) == 3 for h in calls)
    # before each batch (two a side), a probe of the reference's; before the candidate's, its
    # own (the reference paused)
    assert sum(h["cmd"] == "probe" for h in sent) == 6 and cand.probes == 2
    assert len(out.walls) == 4 and all(w[4] == 8 for w in out.walls)

    class Silent(FakeWorker):
        def receive(self, *args: Any, **kwargs: Any) -> tuple[dict[str, Any], list[bytes]]:
            if self.pending["cmd"] == "round":
                return {"type": "round"}, []
            return super().receive(*args, **kwargs)

    with pytest.raises(WorkerFailure, match="no valid"):
        _run(FakeWorker("ref", [], 1.0), Silent("cand", [], 0.5), several_calls=True)

    ref = FakeWorker("ref", [], 1.0)  # said nothing of its calls' time: one a round
    out = _run(ref, FakeWorker("cand", [], 0.5), batch=8, seconds=60.0, several_calls=True)
    assert out.calls == 1 and len(ref.rounds_seen) == 32


@pytest.mark.parametrize(
    ("ms", "calls"),
    [
        (0.15, 13),  # a tiny forward: as many as fit 2 ms
        (0.01, schedule.MAX_CALLS),
        (2.5, 1),  # today's sizes: one a round, as before
        (None, 1),  # nothing said, or nonsense: one
        (-1.0, 1),
        ("x", 1),
        (float("nan"), 1),
    ],
)
def test_calls_a_round_from_the_references_own_rounds(ms: Any, calls: int) -> None:
    assert schedule.calls_per_round(ms) == calls


def test_several_processes_a_side_take_turns_with_every_other_worker_paused() -> None:
    """KernelBench's sides timed in several processes each: each pair gets whole stints
    (R C C R R C C R) in turn with every worker of the other pairs stopped, each side first in
    every other stint of its pair (a stint's first batch follows the pair's longest pause),
    each pair's two workers get the same calls, the reference is measured with every other
    worker stopped, and the rounds stop only once every pair has had an even number of
    stints, two cycles at the least (schedule.MIN_CYCLES)."""
    log: list[str] = []
    boxes: list[FakeWorker] = []

    class Watched(FakeWorker):
        def receive(self, *args: Any, **kwargs: Any) -> tuple[dict[str, Any], list[bytes]]:
            cmd = self.pending["cmd"]
            if cmd in ("round", "measure"):  # whoever is timed runs alone
                running = [b.name for b in boxes if not b.paused]
                assert running == [self.name], f"{self.name} timed beside {running}"
            if cmd == "measure":
                return {"type": "measured", "ms": 0.25}, []
            return super().receive(*args, **kwargs)

    pairs = [(Watched(f"ref{n}", log, 1.0), Watched(f"cand{n}", log, 0.5)) for n in range(3)]
    boxes.extend(b for pair in pairs for b in pair)
    (ref, cand), *more = pairs
    out = schedule.run(
        ref,  # type: ignore[arg-type]
        cand,  # type: ignore[arg-type]
        schedule.Budget(min_rounds=8, batch=8, seconds=0.0),
        pin={2, 3},
        more=more,  # type: ignore[arg-type]
    )
    turns = [e.split()[0] for e in log if e.endswith(" rounds")]
    first = ["ref{n}", "cand{n}", "cand{n}", "ref{n}"] * 2
    second = ["cand{n}", "ref{n}", "ref{n}", "cand{n}"] * 2
    one = [t.format(n=n) for stint in (first, second) for n in range(3) for t in stint]
    assert turns == one * 2  # two cycles
    for r, c in pairs:
        assert r.rounds_seen == c.rounds_seen and len(r.rounds_seen) == 128
    seen = [tuple(x) for r, _ in pairs for x in r.rounds_seen]
    assert len(set(seen)) == 384  # no call's inputs timed twice, in any process
    assert sorted(map(tuple, out.entries)) == sorted(seen)
    assert len(out.ref) == len(out.cand) == 384 and not any(b.paused for b in boxes)
    # every round knows its pair: a stint (four pairs of batches of 8) is one pair's, in turn
    assert out.round_process() == [n for _ in range(4) for n in range(3) for _ in range(32)]

    log.clear()
    for b in boxes:
        b.rounds_seen.clear()
    out = schedule.run(
        ref,  # type: ignore[arg-type]
        cand,  # type: ignore[arg-type]
        schedule.Budget(min_rounds=24, batch=16, seconds=60.0, several_calls=True),
        pin={2, 3},
        more=more,  # type: ignore[arg-type]
    )
    assert out.calls == 8  # measured on the first pair's reference, everyone else stopped
    assert len({len(r.rounds_seen) for r, _ in pairs}) == 1  # as many stints each


def test_workers_warm_up_where_they_run_and_are_pinned_before_anything_is_measured() -> None:
    """The warm-up (a model's build, its weights' copy to the GPU) runs side by side on the
    CPUs each worker already has, not all on the timing's two; every worker is pinned after it
    has warmed up and before the reference's calls are measured or any round is timed."""
    log: list[str] = []

    class Logged(FakeWorker):
        def send(self, header: dict[str, Any], arrays: Any = None) -> None:
            self.log.append(f"{self.name} {header['cmd']}")
            super().send(header, arrays)

        def receive(self, *args: Any, **kwargs: Any) -> tuple[dict[str, Any], list[bytes]]:
            if self.pending["cmd"] == "measure":
                return {"type": "measured", "ms": 0.25}, []
            return super().receive(*args, **kwargs)

    pairs = [(Logged(f"ref{n}", log, 1.0), Logged(f"cand{n}", log, 0.5)) for n in range(2)]
    (ref, cand), *more = pairs
    budget = schedule.Budget(min_rounds=8, batch=8, seconds=60.0, several_calls=True)
    schedule.run(ref, cand, budget, pin={2, 3}, more=more)  # type: ignore[arg-type]
    names = [b.name for pair in pairs for b in pair]
    warmed = max(log.index(f"{n} warmup") for n in names)
    pinned = [log.index(f"{n} pinned [2, 3]") for n in names]
    assert all(warmed < at for at in pinned)  # none pinned until every warm-up was sent
    assert max(pinned) < log.index("ref0 measure")
    assert max(pinned) < min(i for i, e in enumerate(log) if e.endswith(" round"))
    assert all(log.count(f"{n} pinned [2, 3]") == 1 for n in names)

    log.clear()  # nothing to pin (a machine of under four CPUs): nothing pinned, as before
    schedule.run(ref, cand, budget, pin=set(), more=more)  # type: ignore[arg-type]
    assert not [e for e in log if "pinned" in e]


def test_the_warm_ups_time_is_told_apart_from_the_rounds() -> None:
    """Rounds.warmup_ms: the controller's wall time until every worker had warmed up, within
    the whole run's wall_ms; a slow warm-up shows there, not in the rounds."""
    import time

    class SlowWarmUp(FakeWorker):
        def receive(
            self, timeout_s: float, phase: str, expect: Any = None
        ) -> tuple[dict[str, Any], list[bytes]]:
            if self.pending["cmd"] == "warmup":
                time.sleep(0.2)
            return super().receive(timeout_s, phase, expect)

    out = _run(SlowWarmUp("ref", [], 1.0), SlowWarmUp("cand", [], 0.5), min_rounds=24)
    assert 400 <= out.warmup_ms < out.wall_ms
    assert out.wall_ms - out.warmup_ms < 400  # the fakes' rounds take no time


@pytest.mark.parametrize(
    ("per_batch", "seconds", "batches", "wall", "want"),
    [
        (16, 3.0, 48, 5.0, 3),  # three pairs, 5 ms a call: two cycles of 3 rounds in 1.44 s
        (16, 3.0, 48, 10.0, 2),  # a 6 GiB forward's 10 ms a call: 2 rounds
        (16, 3.0, 48, 1.0, 15),  # quick calls: 15 rounds
        (16, 3.0, 48, 0.5, 16),  # quicker: as before
        (16, 3.0, 48, 100.0, 2),  # never under 2
        (16, 3.0, 48, 0.0, 16),  # not measured: as before
        (16, 0.0, 48, 10.0, 16),  # no budget: as before
    ],
)
def test_the_least_cycles_of_several_pairs_take_about_half_the_budget(
    per_batch: int, seconds: float, batches: int, wall: float, want: int
) -> None:
    assert schedule.cycle_batch(per_batch, seconds, batches, wall) == want


class _Clock:
    """schedule's clock, advanced only by the fakes' calls."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _timed_pairs(clock: _Clock, n: int, call_s: float, wall_ms: float) -> list[Any]:
    class Timed(FakeWorker):
        def receive(self, *args: Any, **kwargs: Any) -> tuple[dict[str, Any], list[bytes]]:
            if self.pending["cmd"] == "measure":
                return {"type": "measured", "ms": 4.0, "wall_ms": wall_ms}, []
            if self.pending["cmd"] == "round":
                clock.now += call_s
            return super().receive(*args, **kwargs)

    return [(Timed(f"ref{i}", [], 1.0, 0.1), Timed(f"cand{i}", [], 1.0, 0.1)) for i in range(n)]


def _three_pairs(clock: _Clock, call_s: float) -> tuple[schedule.Rounds, list[Any]]:
    """Three pairs timed on the stand-in clock, a call `call_s` long, 10 ms by the reference
    worker's own measure, a budget of 3 s."""
    clock.now = 0.0
    pairs = _timed_pairs(clock, 3, call_s, 10.0)
    (ref, cand), *more = pairs
    budget = schedule.Budget(seconds=3.0, min_rounds=24, batch=16, several_calls=True)
    return schedule.run(ref, cand, budget, pin={2, 3}, more=more), pairs


def test_several_pairs_size_their_batches_from_the_references_call_and_end_in_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each side in three processes, the reference's call 10 ms by its worker's wall clock
    (a 6 GiB forward with its inputs made afresh): batches of 2 rounds, so that the least the
    rounds run (two cycles, each every pair's two stints) takes about half the 3 s budget; the
    rounds end at a cycle's end, every pair with as many stints, and no cycle begins that
    would end past the budget. Noisy rounds never settle: the budget ends them."""
    clock = _Clock()
    monkeypatch.setattr(schedule.time, "perf_counter", clock)
    out, pairs = _three_pairs(clock, 0.010)
    assert out.calls == 1 and out.call_wall_ms == 10.0
    # a stint: four pairs of batches of 2 rounds; a cycle: each of the 3 pairs twice
    cycle = 3 * 2 * 4 * 2
    assert len(out.ref) % cycle == 0 and len(out.ref) // cycle == 3  # 0.96 s each
    assert clock.now <= 3.0
    assert len({len(r.rounds_seen) for r, _ in pairs}) == 1
    # a pace at which a third cycle would end past the budget: two, the least there is
    out, _ = _three_pairs(clock, 0.012)  # 10 ms measured, 12 ms taken: 1.15 s a cycle
    assert len(out.ref) == 2 * cycle and clock.now < 3.0
    out, _ = _three_pairs(clock, 0.018)  # 18 ms taken: the budget spent in one cycle
    assert len(out.ref) == 2 * cycle  # two all the same: the medians need the batches


def test_every_worker_is_told_the_timings_input_scale_before_its_first_call() -> None:
    """Where the check's scaled trial counted, every worker of both sides (the further pairs'
    too) hears the scale in its warm-up command, before any call; where not, no scale is said."""
    sent: dict[str, list[dict[str, Any]]] = {}

    class Told(FakeWorker):
        def send(self, header: dict[str, Any], arrays: Any = None) -> None:
            sent.setdefault(self.name, []).append(header)
            super().send(header, arrays)

    log: list[str] = []
    pairs = [(Told(f"ref{n}", log, 1.0), Told(f"cand{n}", log, 0.5)) for n in range(2)]
    (ref, cand), *more = pairs
    budget = schedule.Budget(min_rounds=8, batch=8, seconds=60.0, input_scale=64.0)
    schedule.run(ref, cand, budget, pin=set(), more=more)  # type: ignore[arg-type]
    for name, headers in sent.items():
        assert headers[0]["cmd"] == "warmup" and headers[0]["scale"] == 64.0, name
        assert all("scale" not in h for h in headers[1:])  # said once, never per call
    sent.clear()
    schedule.run(ref, cand, schedule.Budget(min_rounds=8, batch=8), pin=set())  # type: ignore[arg-type]
    assert sent and all("scale" not in h for hs in sent.values() for h in hs)


def test_a_candidate_that_ran_while_paused_is_said_by_its_process() -> None:
    """verify reads each candidate worker's watched pauses after the rounds: the first that
    ran while paused is the check's problem (an implausible timing), named by its process."""
    import types

    from kernelwright.tools.verify import _woke

    def box(said: str) -> Any:
        return types.SimpleNamespace(ran_while_paused=lambda: said)

    assert _woke([box(""), box("")]) == ""
    got = _woke([box(""), box("its process ran while it was paused, 2 of 9 times (x)")])
    assert got.startswith("the candidate's worker (timing process 2): its process ran")


class Handing(FakeWorker):
    """A worker of a KernelBench pair whose timed calls' inputs are handed over: the pair's
    reference makes each call's inputs ("make", a descriptor back) and witnesses them after
    the call ("witness"); the timing worker is sent "handed" with the sign seeds only. Logs
    which worker did what, and whether the reference was held (stopped) meanwhile."""

    def __init__(self, name: str, log: list[str], ms: float, problem: str = "",
                 waited: float = 0.0) -> None:  # fmt: skip
        super().__init__(name, log, ms)
        self.problem, self.waited = problem, waited
        self.held = False
        self.made: dict[int, int] = {}  # token -> seed
        self.last_token = 0
        self.written_tokens: set[int] = set()
        self.partner: Handing | None = None  # a candidate's: the reference that makes its inputs
        self.writes_call = 0  # a candidate's: which of its handed calls writes its inputs
        self.handed_seen: list[dict[str, Any]] = []
        self.next_fd = 100

    def hold(self, stopped: bool) -> None:
        assert not self.host_code
        self.paused = self.held = stopped  # SIGSTOP or SIGCONT: a pause's too
        self.log.append(f"{self.name} {'held' if stopped else 'let go'}")

    def send_fds(self, fds: list[int]) -> None:
        self.log.append(f"{self.name} got a descriptor")

    def receive_fds(self, count: int, timeout_s: float, phase: str) -> list[int]:
        import os

        r, w = os.pipe()  # a real descriptor: the schedule closes what it forwards
        os.close(w)
        return [r]

    def receive(
        self, timeout_s: float, phase: str, expect: Any = None
    ) -> tuple[dict[str, Any], list[bytes]]:
        cmd = self.pending
        if cmd["cmd"] == "make":
            self.log.append(f"{self.name} made {cmd['token']}")
            if self.problem:
                return {"type": "made", "problem": self.problem}, []
            self.made[cmd["token"]] = cmd["seed"]
            self.last_token = cmd["token"]
            return {"type": "made", "inputs": [{"value": 3}], "size": 2 << 20}, []
        if cmd["cmd"] == "witness":
            seed = self.made.pop(cmd["token"])
            after = "changed" if cmd["token"] in self.written_tokens else f"sum-{seed}"
            return {"type": "witnessed", "before": [f"sum-{seed}"], "after": [after],
                    "waited_ms": self.waited}, []  # fmt: skip
        if cmd["cmd"] == "handed":
            assert "round" not in cmd and "seed" not in cmd["handed"]
            self.handed_seen.append(cmd)
            if self.partner is not None and len(self.handed_seen) == self.writes_call:
                self.partner.written_tokens.add(self.partner.last_token)  # its memory, written
            if not self.in_batch:
                self.in_batch = True
                self.log.append(f"{self.name} rounds")
            self.rounds_seen.append(cmd["signs"])
            return {"type": "round", "result": {"ms": self.ms, "host_ms": 2 * self.ms}}, []
        return super().receive(timeout_s, phase, expect)


def test_every_timed_call_is_handed_inputs_its_pairs_reference_made_and_witnessed() -> None:
    """KernelBench: each call's inputs are made in the reference's worker from the call's seed
    and handed over; the worker that times the call is told no seed (sign seeds only); the
    reference's worker checksums them again after the call, and both checksums reach the
    call's reply. Through the candidate's batch the reference's worker is held, let go only
    to make and to witness."""
    log: list[str] = []
    ref, cand = Handing("ref", log, 1.0), Handing("cand", log, 0.5)
    out = _run(ref, cand, min_rounds=16, batch=8, seconds=0.0, handover=True)
    assert out.handover and not out.handover_problem
    assert len(out.cand) == len(out.ref) == 16
    assert all(r["inputs"] == r["inputs_after"] for r in out.cand + out.ref)
    # the warm-up's calls, then the rounds': every one made by the reference, none by the other
    assert not cand.made and not any(e.startswith("cand made") for e in log)
    assert sum(e.startswith("ref made") for e in log) == 1 + 2 * 2 + 32  # look, warm-up, rounds
    assert len(cand.handed_seen) == 2 + 16 and len(ref.handed_seen) == 2 + 16
    # the candidate's calls: the reference held through each, let go to make and to witness
    calls = [i for i, e in enumerate(log) if e == "cand got a descriptor"]
    assert len(calls) == 2 + 16
    for i in calls:
        assert log[i - 3 : i] == ["ref let go", log[i - 2], "ref held"], log[i - 3 : i + 3]
        assert log[i - 2].startswith("ref made")
        assert log[i + 1 : i + 3] in (["ref let go", "ref held"], ["cand rounds", "ref let go"])
    # the reference's own calls: it is not held (the candidate is paused, as ever)
    own = [i for i, e in enumerate(log) if e == "ref got a descriptor"]
    assert len(own) == 2 + 16 and all(log[i - 1].startswith("ref made") for i in own)


def test_a_timed_call_that_writes_its_inputs_reads_changed_by_the_references_witness() -> None:
    """The witness's checksums reach the call's reply as "inputs" (before) and "inputs_after",
    the names judge.TimedCalls holds to each other: the sixth timed call's, written, differ."""
    log: list[str] = []
    ref, cand = Handing("ref", log, 1.0), Handing("cand", log, 0.5)
    out = _run(ref, cand, min_rounds=16, batch=8, seconds=0.0, handover=True)
    assert all(r["inputs"] == r["inputs_after"] for r in out.cand + out.ref)
    assert [r["inputs"] for r in out.cand] == [r["inputs"] for r in out.ref]  # the same calls
    ref, cand = Handing("ref", [], 1.0), Handing("cand", [], 0.5)
    cand.partner, cand.writes_call = ref, 2 + 6  # past its two warm-up calls: the sixth timed
    again = _run(ref, cand, min_rounds=16, batch=8, seconds=0.0, handover=True)
    changed = [i for i, r in enumerate(again.cand) if r["inputs"] != r["inputs_after"]]
    assert changed == [5]
    assert all(r["inputs"] == r["inputs_after"] for r in again.ref)  # the reference's: unwritten


def test_the_witness_wait_for_a_quiet_gpu_counts_on_the_calls_wall() -> None:
    """Work a call left running on the GPU runs beside the reference's witness: the wait for
    a quiet GPU there is the call's, by the controller's clock."""
    plain = _run(Handing("ref", [], 1.0), Handing("cand", [], 0.5), min_rounds=16, batch=8,
                 seconds=0.0, handover=True)  # fmt: skip
    slow = _run(Handing("ref", [], 1.0, waited=7.0), Handing("cand", [], 0.5), min_rounds=16,
                batch=8, seconds=0.0, handover=True)  # fmt: skip
    extra = [s[0] - p[0] for s, p in zip(slow.walls, plain.walls, strict=True)]
    assert all(6.9 < x < 60 for x in extra), extra


def test_inputs_that_cannot_be_handed_over_are_made_where_they_are_timed_and_said() -> None:
    log: list[str] = []
    ref = Handing("ref", log, 1.0, problem="input 1 is a Foo: only tensors and plain values")
    cand = Handing("cand", log, 0.5)
    out = _run(ref, cand, min_rounds=16, batch=8, seconds=0.0, handover=True)
    assert not out.handover and "is a Foo" in out.handover_problem
    assert not cand.handed_seen and len(cand.rounds_seen) == 16
    assert all("inputs" not in r for r in out.cand)


def test_without_handover_nothing_is_made_in_the_reference() -> None:
    log: list[str] = []
    out = _run(Handing("ref", log, 1.0), Handing("cand", log, 0.5), min_rounds=16, batch=8,
               seconds=0.0)  # fmt: skip
    assert not out.handover and not any(" made " in e for e in log)
