"""The worker's side of its channel to the controller: the job it was given (and the task in
it), its messages, and the timing commands it serves. The roles (cuda_roles.py, torch_roles.py)
are functions of a `Worker`; worker.py starts one and hands it to its role."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from .protocol import FrameReader, write_message


def flat(array: Any) -> memoryview:
    """An array's bytes without a copy, as one flat frame."""
    import numpy as np

    return memoryview(np.ascontiguousarray(array)).cast("B")  # type: ignore[arg-type]


def _task(job: dict[str, Any]) -> Any:
    from .kernelbench import KernelBenchTask
    from .spec import CudaTask

    raw = job["task"]
    return (
        CudaTask.model_validate(raw)
        if raw["kind"] == "cuda"
        else KernelBenchTask.model_validate(raw)
    )


# Through the timing rounds a worker polls for the controller's next call without sleeping for
# up to this long, as the controller polls for its replies: a call follows the last reply within
# tens of microseconds, and a worker that slept in between woke its idle CPU for every call (on
# the H100's virtual machine, the controller saw a KernelBench call take about 300 us longer
# than the worker's own harness work). Between batches the worker is paused (SIGSTOP).
ROUNDS_SPIN_S = 0.005


class Worker:
    def __init__(
        self, reader: FrameReader | None, out_fd: int, job: dict[str, Any], scratch: Path
    ) -> None:
        self.reader, self.out_fd, self.job, self.scratch = reader, out_fd, job, scratch
        for name, text in job.get("files", {}).items():  # the view shows none of the user's
            (scratch / Path(name).name).write_text(text)
        self.task = _task(job)
        self.clock: Any = None  # timing primitives, when bound before a candidate loads

    def send(self, header: dict[str, Any], arrays: list[Any] = ()) -> None:  # type: ignore[assignment]
        write_message(self.out_fd, header, arrays)

    fd_channel: int | None = None  # the socket for memory handles, where the controller gave one

    def send_fds(self, fds: list[int]) -> None:
        import socket

        assert self.fd_channel is not None, "no descriptor channel"
        with socket.socket(fileno=os.dup(self.fd_channel)) as sock:
            socket.send_fds(sock, [b"f"], fds)

    def receive_fds(self, count: int) -> list[int]:
        import socket

        assert self.fd_channel is not None, "no descriptor channel"
        with socket.socket(fileno=os.dup(self.fd_channel)) as sock:
            msg, fds, _, _ = socket.recv_fds(sock, 16, count)
        if len(fds) != count or msg != b"f":
            raise ValueError(f"received {len(fds)} memory handles, expected {count}")
        return fds

    def sync(self) -> None:
        import cupy

        cupy.cuda.runtime.deviceSynchronize()

    @property
    def arch(self) -> str:
        return "sm_" + self.job["device"]["cc"]

    def command(self) -> dict[str, Any]:
        assert self.reader is not None
        cmd, _ = self.reader.read_message(time.monotonic() + 3600)
        return cmd

    def handed_over(self) -> None:
        """After a run's memory handles went out: wait for the controller's "taken", sent once
        the reference's worker compared them, so a worker that runs its trials back to back
        never has more than the run it compares next handed over (with the one before, for a
        trial whose runs are compared with each other): each handle holds its GPU memory."""
        cmd = self.command()
        if cmd.get("cmd") != "taken":
            raise ValueError(f"expected 'taken' after handing a run over, got {cmd.get('cmd')!r}")

    def serve(self, rounds: Any, post: Any = None) -> None:
        """Answer the controller's timing commands until it says done. Python's garbage
        collector runs once, in the warm-up, and stays off through the rounds, as timeit does:
        a collection costs tens of milliseconds in a process with torch loaded, and would fall
        into whichever batch crosses its threshold."""
        import gc

        from .rounds import scale_of, seeds_of, warm_up

        while True:
            cmd = self.command()
            kind = cmd.get("cmd")
            if kind == "warmup":
                rounds.start(int(cmd.get("model_seed", 0)), scale_of(cmd.get("scale")))
                warm_up(rounds, int(cmd.get("calls", 3)), float(cmd.get("seconds", 0.25)))
                gc.collect()
                gc.disable()
                self._spin(ROUNDS_SPIN_S)
                self.send({"type": "warm"})
            elif kind == "measure":  # the reference's, its candidate paused: sizes the rounds
                self._probe(cmd)  # first, whatever else ran on the GPU is over
                facts = warm_up(rounds, int(cmd.get("calls", 8)), 0.0)
                self.send({"type": "measured", **facts})
            elif kind == "probe":  # before a batch, apart from its timed calls
                self.send({"type": "probed", **self._probe(cmd | {"probe": True})})
            elif kind == "round":
                self.send({"type": "round", "result": rounds.round(*seeds_of(cmd["round"]))})
            elif kind == "make":  # the reference's: a call's inputs, for the worker timing it
                self._make(rounds, cmd)
            elif kind == "handed":  # a call on inputs the reference's worker made
                fd = self.receive_fds(1)[0]
                signs = seeds_of([0, *cmd["signs"]])[1]
                self.send({"type": "round", "result": rounds.handed(cmd["handed"], fd, signs)})
            elif kind == "witness":  # the reference's: those inputs, after the call
                # first, until no other context runs: GPU work the call left running would
                # otherwise run beside this, on no wall (the controller adds the wait to it)
                t0 = time.perf_counter()
                self._probe({"probe": True})
                waited = (time.perf_counter() - t0) * 1e3
                before, after = rounds.witness(int(cmd["token"]))
                self.send({"type": "witnessed", "before": before, "after": after,
                           "waited_ms": waited})  # fmt: skip
            elif kind == "post" and post is not None:
                gc.enable()
                self._spin(0.0)
                post("post", cmd["trial"])
            else:
                gc.enable()
                self._spin(0.0)
                self.send({"type": "done"})
                return

    def _make(self, rounds: Any, cmd: dict[str, Any]) -> None:
        """A timed call's inputs made and handed to the controller as a descriptor
        (rounds.make); an input that cannot be handed over is said, with no descriptor."""
        from .handover import HandOverError

        try:
            header, fd = rounds.make(int(cmd["token"]), int(cmd["seed"]))
        except HandOverError as exc:
            self.send({"type": "made", "problem": str(exc)[:500]})
            return
        try:
            self.send({"type": "made", **header})
            self.send_fds([fd])
        finally:
            os.close(fd)

    def _spin(self, seconds: float) -> None:
        if self.reader is not None:
            self.reader.spin_s = seconds

    def _probe(self, cmd: dict[str, Any]) -> dict[str, float]:
        """A batch's first round: wait until no other context runs (up to 2 s); with
        "wait": False (the candidate's worker, woken before its batch), one look only."""
        from .timing import BUSY_US

        if not cmd.get("probe"):
            return {}
        first = quiet = self.clock.quiet_us()
        waited = time.perf_counter()
        while cmd.get("wait", True) and quiet > BUSY_US and time.perf_counter() - waited < 2.0:
            time.sleep(0.002)
            quiet = self.clock.quiet_us()
        return {"quiet_us": first, "settled_us": quiet}
