"""What `eval kernelbench` times beside the verifier, on the GPU: the eager and torch.compile
baselines of a problem, and a final kernel re-timed with KernelBench's own protocol.

The verifier's reference is the problem's own Model in eager mode, so a check's speedup is the
speedup over eager. torch.compile needs its own timing (in the candidate's worker the verifier
charges compile's frame hooks to the candidate: see the adversarial control
`kb_torch_compile.py`), and so does KernelBench's protocol (`kernelbench.timing`: CUDA events
around one forward, L2 thrashed before each, 3 warm-ups and a first trial discarded, the
mean of 100).

Each is a protocol with two implementations: the live one, which will run in a sandboxed
worker on the GPU and is not built yet (it raises NeedsGpu with one line), and a recorded one
that answers from times given to it (tests, and replays of times measured elsewhere).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel, ConfigDict

from kernelwright.tools.errors import KernelwrightError
from kernelwright.tools.kernelbench import KernelBenchCandidate, KernelBenchTask

BASELINES = ("eager", "compile")
DIFFERS = 0.05  # KernelBench's protocol and ours disagree when speedups differ by more


class NeedsGpu(KernelwrightError):
    """A measurement that needs a GPU with torch, which this machine or build does not have."""


class TimingStats(BaseModel):
    """One program's times in ms, as KernelBench's get_timing_stats keeps them (mean, std, min,
    max, num_trials), with the median and interquartile range where the timer knows them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    mean_ms: float
    std_ms: float = 0.0
    min_ms: float
    max_ms: float
    num_trials: int
    median_ms: float | None = None
    iqr_ms: float | None = None  # 75th minus 25th percentile

    def kernelbench(self, hardware: str = "", device: str = "") -> dict[str, float | int | str]:
        """The dict KernelBench's get_timing_stats returns (its keys, in ms)."""
        out: dict[str, float | int | str] = {
            "mean": self.mean_ms,
            "std": self.std_ms,
            "min": self.min_ms,
            "max": self.max_ms,
            "num_trials": self.num_trials,
        }
        if hardware:
            out |= {"hardware": hardware, "device": device or "cuda:0"}
        return out


class BaselineTimes(BaseModel):
    """A problem's baselines, timed alike: eager, torch.compile (inductor, default mode), and
    the GPU memory its forward needs, measured or estimated from its inputs (None: unknown; a
    run skips a problem that needs more than the GPU has, before any check)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    eager: TimingStats | None = None
    compile: TimingStats | None = None
    peak_bytes: int | None = None
    how: str = ""  # the timer, for the report ("recorded", "worker: CUDA events ...")
    compile_error: str = ""  # why torch.compile could not time it (one line)

    def compile_factor(self) -> float | None:
        """torch.compile's time over eager's, both from this timer (None: not both timed)."""
        if self.eager is None or self.compile is None or self.eager.mean_ms <= 0:
            return None
        return self.compile.mean_ms / self.eager.mean_ms


class Baselines(Protocol):
    def time(self, task: KernelBenchTask) -> BaselineTimes: ...


class LiveBaselines:
    """Eager and torch.compile timed in a sandboxed worker on this GPU: not built yet."""

    how = "live"

    def time(self, task: KernelBenchTask) -> BaselineTimes:
        raise NeedsGpu(
            "torch.compile baseline: needs a GPU with torch and the baseline-timing worker, "
            "which this build does not have yet (the eager baseline is the verifier's own)"
        )


class RecordedBaselines:
    """Baselines given per problem name (the task's name, the file's stem)."""

    how = "recorded"

    def __init__(self, times: dict[str, BaselineTimes] | None = None) -> None:
        self.times = dict(times or {})
        self.asked: list[str] = []

    @classmethod
    def from_file(cls, path: Path) -> RecordedBaselines:
        """A JSON object: problem name -> BaselineTimes' fields."""
        raw = json.loads(path.read_text())
        return cls({k: BaselineTimes.model_validate(v) for k, v in raw.items()})

    def time(self, task: KernelBenchTask) -> BaselineTimes:
        self.asked.append(task.name)
        if task.name not in self.times:
            raise KernelwrightError(f"no recorded baseline times for {task.name}")
        return self.times[task.name]


class Retimed(BaseModel):
    """A final kernel and its problem's eager Model, both timed with KernelBench's protocol."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    eager: TimingStats
    kernel: TimingStats

    @property
    def speedup(self) -> float:
        return self.eager.mean_ms / self.kernel.mean_ms


class Retimer(Protocol):
    def retime(self, task: KernelBenchTask, candidate: KernelBenchCandidate) -> Retimed: ...


class LiveRetimer:
    """KernelBench's timing protocol in a sandboxed worker on this GPU: not built yet."""

    def retime(self, task: KernelBenchTask, candidate: KernelBenchCandidate) -> Retimed:
        raise NeedsGpu(
            "--timing kernelbench: re-timing with KernelBench's protocol needs a GPU with torch "
            "and its timing worker, which this build does not have yet; not done"
        )


class RecordedRetimer:
    """KernelBench-protocol times given per problem name."""

    def __init__(self, times: dict[str, Retimed] | None = None) -> None:
        self.times = dict(times or {})

    def retime(self, task: KernelBenchTask, candidate: KernelBenchCandidate) -> Retimed:
        if task.name not in self.times:
            raise KernelwrightError(f"no recorded KernelBench-protocol times for {task.name}")
        return self.times[task.name]


def differs(ours: float, theirs: float, tolerance: float = DIFFERS) -> bool:
    """Whether two speedups of one kernel disagree by more than `tolerance` (relative to ours;
    exactly `tolerance` apart, within float rounding, is not more)."""
    return abs(theirs / ours - 1.0) > tolerance + 1e-12
