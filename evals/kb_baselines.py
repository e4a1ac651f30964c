"""What `eval kernelbench` times beside the verifier, on the GPU: the eager and torch.compile
baselines of a problem, and a final kernel re-timed with KernelBench's own protocol.

The verifier's reference is the problem's own Model in eager mode, so a check's speedup is the
speedup over eager. torch.compile needs its own timing (in the candidate's worker the verifier
charges compile's frame hooks to the candidate: see the adversarial control
`kb_torch_compile.py`), and so does KernelBench's protocol (`kernelbench.timing`: CUDA events
around one forward, L2 thrashed before each, 3 warm-ups and a first trial discarded, the
mean of 100).

Each is a protocol with two implementations: the live one, which runs the clone's own
KernelBench (its `measure_ref_program_time` and `eval_kernel_against_ref`, imported at run time
from the user's clone, never copied) in a sandboxed worker on the GPU (tools/kbtime.py), and a
recorded one that answers from times given to it (tests, and replays of times measured
elsewhere). Without a clone that has them, the live one raises NeedsGpu with one line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel, ConfigDict

from kernelwright.agent.formats import first_line
from kernelwright.tools.errors import KernelwrightError
from kernelwright.tools.kbtime import has_timing, kb_time
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
    """Eager and torch.compile (inductor, default mode) timed alike by the clone's own
    `measure_ref_program_time` (CUDA events, L2 thrashed before each, the mean of 100), each in
    a sandboxed worker of its own on this GPU."""

    how = "KernelBench's measure_ref_program_time, in a worker"

    def __init__(self, src: Path | None = None, timeout_s: float = 900.0) -> None:
        self.src, self.timeout_s = src, timeout_s

    def time(self, task: KernelBenchTask) -> BaselineTimes:
        src = _timing_src(self.src, "torch.compile baseline")
        eager, peak = _timed(src, "eager", task, "", self.timeout_s)
        compiled, error, compile_peak = None, "", None
        try:
            compiled, compile_peak = _timed(src, "compile", task, "", self.timeout_s)
        except KernelwrightError as exc:  # eager stands: the run reports it without compile's
            error = first_line(str(exc))
        peaks = [b for b in (peak, compile_peak) if b is not None]
        return BaselineTimes(
            eager=eager,
            compile=compiled,
            peak_bytes=max(peaks) if peaks else None,
            how=self.how,
            compile_error=error,
        )


def _timing_src(src: Path | None, what: str) -> Path:
    """The clone's src/ with KernelBench's timing in it, or NeedsGpu saying what is missing."""
    if src is None or not has_timing(src):
        where = f": {src} has no kernelbench/timing.py and eval.py" if src is not None else ""
        raise NeedsGpu(
            f"{what}: needs a GPU with torch and the clone's own KernelBench timing{where}; "
            "not done"
        )
    return src


def _timed(
    src: Path, what: str, task: KernelBenchTask, candidate: str, timeout_s: float
) -> tuple[TimingStats, int | None]:
    stats, peak = kb_time(src, what, task.name, task.source, candidate, timeout_s=timeout_s)
    return (
        TimingStats(
            mean_ms=stats["mean"],
            std_ms=stats["std"],
            min_ms=stats["min"],
            max_ms=stats["max"],
            num_trials=int(stats["num_trials"]),
        ),
        peak,
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
    """A final kernel re-timed as KernelBench's eval times it (`eval_kernel_against_ref`, after
    its own correctness trials), and the eager Model as its baseline script does, each in a
    sandboxed worker of its own: the speedup KernelBench's analysis would print."""

    def __init__(self, src: Path | None = None, timeout_s: float = 900.0) -> None:
        self.src, self.timeout_s = src, timeout_s

    def retime(self, task: KernelBenchTask, candidate: KernelBenchCandidate) -> Retimed:
        src = _timing_src(self.src, "--timing kernelbench")
        kernel, _ = _timed(src, "kernel", task, candidate.source, self.timeout_s)
        eager, _ = _timed(src, "eager", task, "", self.timeout_s)
        return Retimed(eager=eager, kernel=kernel)


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
