"""A worker's side of the timing rounds, over a real pipe, without a GPU."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from kernelwright.tools import serving
from kernelwright.tools.protocol import FrameReader, write_message


class _Rounds:
    def __init__(self, reader: FrameReader) -> None:
        self.reader = reader
        self.spin_in_rounds: list[float] = []

    def start(self, seed: int) -> None:
        pass

    def round(self, seed: int, signs: tuple[int, int]) -> dict[str, Any]:
        self.spin_in_rounds.append(self.reader.spin_s)
        return {"ms": 0.1, "host_ms": 0.11}


def test_a_worker_polls_for_its_next_call_only_through_the_rounds(tmp_path: Path) -> None:
    """Between the warm-up and the end a worker waits for each call without sleeping (its CPU
    never idles between the calls of a batch); before and after, it sleeps in the kernel."""
    cmd_r, cmd_w = os.pipe()
    out_r, out_w = os.pipe()
    reader = FrameReader(cmd_r)
    worker = serving.Worker.__new__(serving.Worker)
    worker.reader, worker.out_fd, worker.job, worker.scratch = reader, out_w, {}, tmp_path
    rounds = _Rounds(reader)
    for cmd in (
        {"cmd": "warmup", "calls": 2, "seconds": 0.0},
        {"cmd": "round", "round": [1, 2, 3]},
        {"cmd": "round", "round": [4, 5, 6]},
        {"cmd": "done"},
    ):
        write_message(cmd_w, cmd, [])
    assert reader.spin_s == 0.0
    worker.serve(rounds)
    assert rounds.spin_in_rounds[:2] == [0.0, 0.0]  # the warm-up's own calls
    assert rounds.spin_in_rounds[2:] == [serving.ROUNDS_SPIN_S] * 2 and serving.ROUNDS_SPIN_S > 0
    assert reader.spin_s == 0.0  # done: back to sleeping
    replies = FrameReader(out_r)
    kinds = [replies.read_message(1e12)[0]["type"] for _ in range(4)]
    assert kinds == ["warm", "round", "round", "done"]
    for fd in (cmd_r, cmd_w, out_r, out_w):
        os.close(fd)
