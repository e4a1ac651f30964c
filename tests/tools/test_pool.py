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
