"""A worker's side of the timing rounds, over a real pipe, without a GPU."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kernelwright.tools import serving
from kernelwright.tools.protocol import FrameReader, write_message


class _Rounds:
    def __init__(self, reader: FrameReader) -> None:
        self.reader = reader
        self.spin_in_rounds: list[float] = []
        self.scales: list[float] = []

    def start(self, seed: int, scale: float = 1.0) -> None:
        self.scales.append(scale)

    def round(self, seed: int, signs: tuple[int, int]) -> dict[str, Any]:
        self.spin_in_rounds.append(self.reader.spin_s)
        return {"ms": 0.1, "host_ms": 0.11}


class _Clock:
    """A GPU another context holds for two looks, then has to itself."""

    def __init__(self) -> None:
        self.looks = [5000.0, 4000.0, 3.0]

    def quiet_us(self) -> float:
        return self.looks.pop(0) if len(self.looks) > 1 else self.looks[0]


@contextlib.contextmanager
def _served(tmp_path: Path, commands: list[dict[str, Any]]) -> Iterator[tuple[_Rounds, int]]:
    """A worker over real pipes, its commands written ahead; yields its rounds (after
    `serve` returns) and the read end of what it sent."""
    cmd_r, cmd_w = os.pipe()
    out_r, out_w = os.pipe()
    try:
        reader = FrameReader(cmd_r)
        worker = serving.Worker.__new__(serving.Worker)
        worker.reader, worker.out_fd, worker.job, worker.scratch = reader, out_w, {}, tmp_path
        worker.clock = _Clock()
        for cmd in commands:
            write_message(cmd_w, cmd, [])
        rounds = _Rounds(reader)
        assert reader.spin_s == 0.0
        worker.serve(rounds)
        yield rounds, out_r
    finally:
        for fd in (cmd_r, cmd_w, out_r, out_w):
            os.close(fd)


def test_a_worker_polls_for_its_next_call_only_through_the_rounds(tmp_path: Path) -> None:
    """Between the warm-up and the end a worker waits for each call without sleeping (its CPU
    never idles between the calls of a batch); before and after, it sleeps in the kernel."""
    commands = [
        {"cmd": "warmup", "calls": 2, "seconds": 0.0},
        {"cmd": "round", "round": [1, 2, 3]},
        {"cmd": "round", "round": [4, 5, 6]},
        {"cmd": "done"},
    ]
    with _served(tmp_path, commands) as (rounds, out_r):
        assert rounds.spin_in_rounds[:2] == [0.0, 0.0]  # the warm-up's own calls
        assert rounds.spin_in_rounds[2:] == [serving.ROUNDS_SPIN_S] * 2
        assert serving.ROUNDS_SPIN_S > 0
        assert rounds.reader.spin_s == 0.0  # done: back to sleeping
        replies = FrameReader(out_r)
        kinds = [replies.read_message(1e12)[0]["type"] for _ in range(4)]
        assert kinds == ["warm", "round", "round", "done"]


def test_a_batch_is_probed_in_a_message_of_its_own(tmp_path: Path) -> None:
    """The wait for a quiet GPU comes before a batch, in its own message (on no wall the
    controller counts): a round's reply carries no probe, and the probe's reply says what the
    worker found first and once it settled."""
    commands = [
        {"cmd": "warmup", "calls": 1, "seconds": 0.0},
        {"cmd": "probe"},
        {"cmd": "round", "round": [1, 2, 3]},
        {"cmd": "done"},
    ]
    with _served(tmp_path, commands) as (_, out_r):
        replies = FrameReader(out_r)
        got = [replies.read_message(1e12)[0] for _ in range(4)]
    assert [g["type"] for g in got] == ["warm", "probed", "round", "done"]
    assert got[1]["quiet_us"] == 5000.0 and got[1]["settled_us"] == 3.0
    assert set(got[2]) - {"arrays"} == {"type", "result"}
    # the candidate's look before its batch: once, no wait for the GPU to settle
    commands[1] = {"cmd": "probe", "wait": False}
    with _served(tmp_path, commands) as (_, out_r):
        replies = FrameReader(out_r)
        got = [replies.read_message(1e12)[0] for _ in range(4)]
    assert got[1]["type"] == "probed" and got[1]["quiet_us"] == got[1]["settled_us"] == 5000.0


def test_the_warm_ups_scale_reaches_the_rounds_and_nothing_else_is_taken(tmp_path: Path) -> None:
    """The timing's input scale comes once, with the warm-up; a value that is not one of the
    scaled trials' (plan.SCALES) is taken as get_inputs()'s own inputs (1)."""
    for said, taken in ((64.0, 64.0), (None, 1.0), (3.0, 1.0), ("64", 1.0), (1e300, 1.0)):
        warmup: dict[str, Any] = {"cmd": "warmup", "calls": 1, "seconds": 0.0}
        if said is not None:
            warmup["scale"] = said
        with _served(tmp_path, [warmup, {"cmd": "done"}]) as (rounds, _):
            assert rounds.scales == [taken], said


class _Handing(_Rounds):
    """Rounds whose inputs the reference's worker makes and hands over (handover.py)."""

    def __init__(self, reader: FrameReader, refuse: bool = False) -> None:
        super().__init__(reader)
        self.refuse = refuse
        self.handed_fds: list[int] = []
        self.witnessed: list[int] = []

    def make(self, token: int, seed: int) -> tuple[dict[str, Any], int]:
        from kernelwright.tools.handover import HandOverError

        if self.refuse:
            raise HandOverError("input 0 is a Foo: only tensors and plain values")
        r, w = os.pipe()
        os.close(w)
        return {"inputs": [{"value": seed}], "size": 4096}, r

    def handed(self, spec: dict[str, Any], fd: int, signs: tuple[int, int]) -> dict[str, Any]:
        self.handed_fds.append(fd)
        os.close(fd)
        return {"ms": 0.1, "host_ms": 0.11, "spec": spec, "signs": list(signs)}

    def witness(self, token: int) -> tuple[list[str], list[str]]:
        self.witnessed.append(token)
        return ["a"], ["b"]


@contextlib.contextmanager
def _served_fds(
    tmp_path: Path,
    commands: list[dict[str, Any]],
    rounds: Any,
    handed: list[int] = (),
) -> Iterator[tuple[list[dict[str, Any]], list[int] | None]]:
    """A worker with a descriptor channel, its commands written ahead and `handed` sent to it
    as the controller forwards them; yields every header it sent, and the descriptors it
    sent (None where it sent none)."""
    import socket

    ours, theirs = socket.socketpair()
    cmd_r, cmd_w = os.pipe()
    out_r, out_w = os.pipe()
    try:
        reader = FrameReader(cmd_r)
        worker = serving.Worker.__new__(serving.Worker)
        worker.reader, worker.out_fd, worker.job, worker.scratch = reader, out_w, {}, tmp_path
        worker.clock, worker.fd_channel = _Clock(), theirs.fileno()
        for cmd in commands:
            write_message(cmd_w, cmd, [])
        if handed:
            socket.send_fds(ours, [b"f"], list(handed))
        rounds.reader = reader
        worker.serve(rounds)
        replies = FrameReader(out_r)
        got = [replies.read_message(1e12)[0] for _ in commands]
        ours.setblocking(False)
        try:
            sent: list[int] | None = socket.recv_fds(ours, 16, 4)[1]
        except BlockingIOError:
            sent = None
        for fd in sent or []:
            os.close(fd)
        yield got, sent
    finally:
        for fd in (cmd_r, cmd_w, out_r, out_w):
            os.close(fd)
        ours.close()
        theirs.close()


def test_a_worker_makes_hands_over_times_and_witnesses_a_calls_inputs(tmp_path: Path) -> None:
    """The reference's worker answers "make" with where the inputs lie and a descriptor; the
    timing worker takes one with "handed" (sign seeds, no seed) and times the call; the
    reference's witness waits for a quiet GPU first and says how long."""
    spec = {"inputs": [{"value": 7}], "size": 4096}
    commands = [
        {"cmd": "make", "token": 3, "seed": 7},
        {"cmd": "handed", "handed": spec, "signs": [5, 6]},
        {"cmd": "witness", "token": 3},
        {"cmd": "done"},
    ]
    handed_r, handed_w = os.pipe()
    os.close(handed_w)
    rounds = _Handing(None)
    try:
        with _served_fds(tmp_path, commands, rounds, [handed_r]) as (got, sent):
            pass
    finally:
        os.close(handed_r)
    assert [g["type"] for g in got] == ["made", "round", "witnessed", "done"]
    assert got[0]["inputs"] == [{"value": 7}] and got[0]["size"] == 4096
    assert sent is not None and len(sent) == 1
    assert got[1]["result"]["spec"] == spec and got[1]["result"]["signs"] == [5, 6]
    assert len(rounds.handed_fds) == 1 and rounds.witnessed == [3]
    assert got[2]["before"] == ["a"] and got[2]["after"] == ["b"]
    assert got[2]["waited_ms"] >= 2.0  # two busy looks, a sleep after each, before it


def test_inputs_that_cannot_be_handed_over_are_said_with_no_descriptor(tmp_path: Path) -> None:
    commands = [{"cmd": "make", "token": 1, "seed": 7}, {"cmd": "done"}]
    with _served_fds(tmp_path, commands, _Handing(None, refuse=True)) as (got, sent):
        pass
    assert got[0]["type"] == "made" and "inputs" not in got[0]
    assert got[0]["problem"] == "input 0 is a Foo: only tensors and plain values"
    assert sent is None  # no descriptor followed
