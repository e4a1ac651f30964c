"""Where the verifier's own threads run while workers are timed (no GPU needed)."""

from __future__ import annotations

import os
import threading

import pytest

from kernelwright.tools import pool


def test_cpu_lists_read_as_sysfs_writes_them() -> None:
    assert pool._cpu_list("3,11") == {3, 11}
    assert pool._cpu_list("0-3,8\n") == {0, 1, 2, 3, 8}


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_while_timed_every_controller_thread_is_off_the_timed_cpus_and_back_after() -> None:
    mine = set(os.sched_getaffinity(0))
    timed = {max(mine)}
    seen: dict[str, set[int]] = {}
    inside, done = threading.Event(), threading.Event()

    def other_thread() -> None:  # a thread that was running before the rounds began
        inside.wait(5)
        seen["thread"] = set(os.sched_getaffinity(0))
        done.set()

    t = threading.Thread(target=other_thread)
    t.start()
    with pool.controller_off(timed):
        seen["main"] = set(os.sched_getaffinity(0))
        inside.set()
        assert done.wait(5)
    t.join()
    for who in ("main", "thread"):
        assert seen[who] and not seen[who] & timed, (who, seen[who])
        assert seen[who] <= mine
    assert set(os.sched_getaffinity(0)) == mine


def test_nothing_pinned_leaves_the_controller_where_it_was() -> None:
    mine = set(os.sched_getaffinity(0))
    with pool.controller_off(set()):
        assert set(os.sched_getaffinity(0)) == mine


def test_a_head_start_starts_a_first_checks_workers_now_and_take_hands_them_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`kernelwright check` starts its workers before it imports the verifier: the ones a
    first check takes, each as take() would start it (now, unpinned), then handed out."""
    made: list[tuple[str, bool, object]] = []

    class Box:
        def __init__(self, kind: str) -> None:
            self.kind, self.label, self.started, self.closed = kind, "spare", False, False

        def start(self) -> Box:
            self.started = True
            return self

        def alive(self) -> bool:
            return self.started and not self.closed

        def close(self) -> None:
            self.closed = True

    def new(kind: str, label: str, cpus: object = None, now: bool = False) -> Box:
        made.append((kind, now, cpus))
        return Box(kind)

    p = pool.Pool("nvrtc", 1 << 30, None, {6, 7}, 10.0, {"kernelbench": 3})
    monkeypatch.setattr(p, "new", new)
    p.head_start("kernelbench")
    assert sorted(made) == [("torch-cand", True, None)] * 3 + [("torch-ref", True, None)] * 3
    ref = p.take("torch-ref", "reference")
    assert isinstance(ref, Box) and ref.started and ref.label == "reference"
    assert len(made) == 6  # taken from the head start, not started again
    left = [b for boxes in p._spares.values() for b in boxes]
    p.close()
    assert len(left) == 5 and all(b.closed for b in left)  # what the check did not take
    made.clear()
    q = pool.Pool("nvrtc", 1 << 30, None, set(), 10.0, {"kernelbench": 3})
    monkeypatch.setattr(q, "new", new)
    q.head_start("cuda")  # one process a side, and its compile worker
    assert sorted(k for k, _, _ in made) == ["compile", "cuda", "cuda"]
    assert all(now for _, now, _ in made)
    q.close()


def test_for_options_gives_the_pool_a_verifier_would_make(monkeypatch: pytest.MonkeyPatch) -> None:
    from kernelwright.tools import fit
    from kernelwright.tools.verify import Verifier, VerifyOptions

    monkeypatch.setattr(fit, "host_available_bytes", lambda: 40 << 30)  # room for 2 a side
    options = VerifyOptions(timing_processes=3, pin_cpus=False, host_memory_bytes=1 << 30)
    made = pool.for_options(options)
    assert made.processes == {"kernelbench": fit.timing_processes(3, 40 << 30)}
    assert made.pin == set() and made.memory == 1 << 30
    verifier = Verifier(options, pool=made)
    try:
        assert verifier.pool is made and verifier.processes == made.processes["kernelbench"]
    finally:
        verifier.close()


def test_only_a_kernelbench_candidates_worker_runs_host_code_and_is_watched() -> None:
    """A KernelBench candidate's Python runs in its worker, which can ask the kernel to wake
    it from a pause: that worker's pauses are watched (Sandbox.host_code); a CUDA kernel's
    worker and every reference's are not."""
    p = pool.Pool("nvrtc", 1 << 30, None, set(), 10.0, {})
    try:
        assert p.new("torch-cand", "candidate").host_code
        for kind in ("torch-ref", "cuda", "compile"):
            assert not p.new(kind, "other").host_code
    finally:
        p.close()
