"""`kernelwright tune`: a correct CUDA kernel's compile options searched on this GPU, with no
model. The space and the rule are tools/tune.py's: every configuration that builds to code of
its own is checked by the full verifier, in order, until the budget or the time is spent, and
one replaces the best only if it is correct and clearly faster."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kernelwright.tools import tune as space_of
from kernelwright.tools.backend import GpuBackend
from kernelwright.tools.builds import BuildCache, cached_build
from kernelwright.tools.errors import KernelwrightError
from kernelwright.tools.results import CheckReport, CompileResult
from kernelwright.tools.spec import CompileOptions, CudaCandidate, CudaTask


@dataclass(frozen=True)
class Tried:
    config: CompileOptions
    report: CheckReport
    kept: bool  # became the best when it was checked


@dataclass
class Tuning:
    start: CudaCandidate  # what was tuned, as given
    baseline: CheckReport  # it, checked as given
    best: CudaCandidate
    best_report: CheckReport
    tried: list[Tried] = field(default_factory=list)
    dropped: list[tuple[CompileOptions, str]] = field(default_factory=list)  # never checked
    left: int = 0  # configurations the budget or the time left unchecked
    seconds: float = 0.0

    @property
    def gain(self) -> float:
        """The best over the start, both against the task's reference on the same GPU."""
        b, s = self.best_report.timing, self.baseline.timing
        return b.speedup / s.speedup if b and s and s.speedup > 0 else 1.0

    @property
    def improved(self) -> bool:
        return self.best.options != self.start.options


def tune(
    task: CudaTask,
    candidate: CudaCandidate,
    gpu: GpuBackend,
    *,
    arch: str,
    backend: str,
    budget: int = 24,
    max_seconds: float = 180.0,
    numerics: bool = False,
    progress: Callable[[str], None] | None = None,
    builds: BuildCache | None = None,
) -> Tuning:
    """Tune `candidate` (its own options are where the search starts; they stay if nothing
    beats them). `numerics`: also try approximations (fast math, flush-to-zero, approximate
    division and sqrt); the verifier checks each against the task's tolerance as always."""
    say = progress or (lambda _m: None)
    t0 = time.monotonic()
    say("checking the kernel as given")
    baseline = gpu.check(task, candidate)
    if not baseline.ok or baseline.timing is None:
        raise KernelwrightError(
            f"only a correct kernel is tuned: {baseline.verdict}: {baseline.reason}"
        )
    configs = [
        c for c in space_of.space(candidate.source, numerics=numerics) if c != candidate.options
    ]

    def build(config: CompileOptions) -> tuple[CompileResult, bytes | None]:
        # into the cache the verifier reads: a configuration's check does not build it again
        flags = config.flags(backend)
        return cached_build(builds, candidate.source, task.entry, arch, backend, flags)

    say(f"building {len(configs)} configurations to drop those that change nothing")
    # the start first: a configuration that builds the code it already has is never checked
    start = [candidate.options, *(c for c in configs if c != candidate.options)]
    distinct, dropped = space_of.distinct(start, build)
    result = Tuning(candidate, baseline, candidate, baseline, dropped=dropped)
    todo = [c for c in distinct if c != candidate.options]
    for i, config in enumerate(todo):
        if i >= budget or time.monotonic() - t0 > max_seconds:
            result.left = len(todo) - i
            break
        say(f"{i + 1}/{min(len(todo), budget)}: {space_of.describe(config)}")
        trial = candidate.model_copy(update={"options": config})
        report = gpu.check(task, trial)
        kept = space_of.beats(report, result.best_report)
        if kept:
            result.best, result.best_report = trial, report
        result.tried.append(Tried(config, report, kept))
    result.seconds = time.monotonic() - t0
    return result


def sidecar(candidate: CudaCandidate) -> str:
    """The .toml beside a tuned kernel: its launch and its compile options, as the candidate
    loader reads them (`kernelwright check TASK NAME.tuned.cu` builds it the same way)."""
    lines = ["# written by kernelwright tune"]
    if candidate.launch is not None:
        launch = candidate.launch  # JSON's arrays of strings are TOML's too
        lines += ["[launch]", f"block = {json.dumps(list(launch.block))}"]
        lines += [f"grid = {json.dumps(list(launch.grid))}"]
        lines += [f"shared_mem_bytes = {json.dumps(launch.shared_mem_bytes)}"]
    o = candidate.options
    lines.append("[compile]")
    if o.defines:
        lines.append("defines = { " + ", ".join(f"{n} = {v}" for n, v in o.defines) + " }")
    if o.maxrregcount is not None:
        lines.append(f"maxrregcount = {o.maxrregcount}")
    if o.ptxas_level is not None:
        lines.append(f"ptxas_level = {o.ptxas_level}")
    for name in ("fast_math", "ftz"):
        if getattr(o, name):
            lines.append(f"{name} = true")
    for name in ("prec_div", "prec_sqrt"):
        if not getattr(o, name):
            lines.append(f"{name} = false")
    return "\n".join(lines) + "\n"


def write_tuned(candidate: CudaCandidate, name: str, where: Path | None = None) -> Path:
    """The tuned kernel as NAME.tuned.cu with its NAME.tuned.toml, beside the kernel it came
    from (or in `where`); the path of the .cu."""
    origin = Path(candidate.path)
    folder = where or origin.parent
    stem = origin.stem if origin.suffix == ".cu" else name
    cu = folder / f"{stem}.tuned.cu"
    cu.write_text(candidate.source)
    cu.with_suffix(".toml").write_text(sidecar(candidate))
    return cu
