"""`kernelwright tune`: a correct CUDA kernel's knobs, block shape and compile options searched on
this GPU, with no model. The space and the rule are tools/tune.py's, the order tools/search.py's:
each configuration is built (on the CPU) when its turn comes, dropped unchecked if it runs what
an earlier one runs, else checked by the full verifier, until the budget or the time is spent;
one replaces the best only if it is correct and clearly faster."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from kernelwright.agent.formats import markdown_table, tune_outcome, tune_rows
from kernelwright.agent.rundir import RunDir
from kernelwright.agent.settings import Settings
from kernelwright.memory.signature import op_class, task_signature
from kernelwright.memory.store import ChromaStore
from kernelwright.memory.tunings import TuneMemory, TuneRecord
from kernelwright.tools import tune as space_of
from kernelwright.tools.backend import GpuBackend
from kernelwright.tools.builds import BuildCache, cached_build
from kernelwright.tools.errors import KernelwrightError
from kernelwright.tools.results import CheckReport, CompileResult
from kernelwright.tools.search import LocalSearch
from kernelwright.tools.spec import CompileOptions, CudaCandidate, CudaTask
from kernelwright.tools.tune import Config

BUILDS_PER_CHECK = 4  # builds at most per configuration the budget allows: the CPU's share
NOT_ASKED = "numerics not tried: not asked for (--numerics, or numerics = true under [tune])"


@dataclass(frozen=True)
class Tried:
    config: Config
    report: CheckReport
    kept: bool  # became the best when it was checked

    @property
    def speedup(self) -> float | None:
        return self.report.timing.speedup if self.report.ok and self.report.timing else None


@dataclass
class Tuning:
    start: CudaCandidate  # what was tuned, as given
    baseline: CheckReport  # it, checked as given
    best: CudaCandidate
    best_report: CheckReport
    best_config: Config
    tried: list[Tried] = field(default_factory=list)
    dropped: list[tuple[Config, str]] = field(default_factory=list)  # never checked
    left: int = 0  # configurations of the space neither checked nor dropped
    seconds: float = 0.0
    remembered: int = 0  # earlier winners (the memory's) tried first
    numerics: str = NOT_ASKED  # one line: the approximations tried, and why not the others

    @property
    def gain(self) -> float:
        """The best over the start, both against the task's reference on the same GPU."""
        b, s = self.best_report.timing, self.baseline.timing
        return b.speedup / s.speedup if b and s and s.speedup > 0 else 1.0

    @property
    def improved(self) -> bool:
        return (self.best.options, self.best.launch) != (self.start.options, self.start.launch)

    def records(self, where: TuneRecord, run_id: str) -> list[TuneRecord]:
        """Each configuration checked, for the memory: its settings and gain over the kernel
        as given, on the task and architecture `where` names."""
        base = self.baseline.timing
        return [
            where.model_copy(
                update={
                    "run_id": run_id,
                    "config": t.config.describe(),
                    "settings": json.dumps(dict(t.config.settings)),
                    "verdict": t.report.verdict,
                    "speedup": float(t.speedup or -1.0),
                    "gain": t.speedup / base.speedup if t.speedup and base else -1.0,
                    "won": t.config == self.best_config and self.improved,
                }
            )
            for t in self.tried
        ]

    def as_json(self, written: Path | None = None) -> dict[str, Any]:
        """What a tune did, for machines: `kernelwright tune --json`, and tune.json in a run."""
        base = self.baseline.timing
        return {
            "start": space_of.Config(self.start.options, self.start.launch).describe(),
            "start_speedup": base.speedup if base else None,
            "best": self.best_config.describe(),
            "best_speedup": self.best_report.timing.speedup if self.best_report.timing else None,
            "gain": self.gain,
            "improved": self.improved,
            "written": str(written) if written else None,
            "tried": [
                {
                    "config": t.config.describe(),
                    "verdict": t.report.verdict,
                    "speedup": t.speedup,
                    "speedup_iqr": t.report.timing.speedup_iqr if t.report.timing else None,
                    "gain": t.speedup / base.speedup if t.speedup and base else None,
                    "kept": t.kept,
                    "reason": "" if t.report.ok else t.report.reason,
                }
                for t in self.tried
            ],
            "dropped": [{"config": c.describe(), "why": why} for c, why in self.dropped],
            "left_unchecked": self.left,
            "remembered": self.remembered,
            "numerics": self.numerics,
            "seconds": self.seconds,
        }


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
    first: Sequence[Mapping[str, Any]] = (),
) -> Tuning:
    """Tune `candidate` (its own configuration is where the search starts; it stays if nothing
    beats it). `numerics`: also try the approximations (fast math, flush-to-zero, approximate
    division and sqrt) whose documented error the task's tolerance allows (tools/numerics.py);
    the verifier checks each against the tolerance as always.
    `first`: configurations to try before the search's own (earlier winners, as
    Config.settings), where this kernel's space has them."""
    say = progress or (lambda _m: None)
    t0 = time.monotonic()
    say("checking the kernel as given")
    baseline = gpu.check(task, candidate)
    if not baseline.ok or baseline.timing is None:
        raise KernelwrightError(
            f"only a correct kernel is tuned: {baseline.verdict}: {baseline.reason}"
        )
    space = space_of.space(task, candidate, numerics=numerics)
    remembered = [p for p in (space.point(s) for s in first) if p is not None]
    search = LocalSearch(space.shape, remembered, valid=lambda p: not space.problem(p))
    search.tell(space.origin, baseline.timing.speedup)

    def build(options: CompileOptions) -> tuple[CompileResult, bytes | None]:
        # into the cache the verifier reads: a configuration's check does not build it again
        flags = options.flags(backend)
        return cached_build(builds, candidate.source, task.entry, arch, backend, flags)

    same = space_of.Distinct(build)
    start = space.config(space.origin)
    same.check(start.options, space_of.launch_key(task, candidate), start.describe(), space.origin)
    result = Tuning(candidate, baseline, candidate, baseline, start, remembered=len(remembered))
    if numerics:
        result.numerics = space.numerics
        say(space.numerics)
    say(f"searching {search.size} configurations, {budget} checks at most")
    built = 0
    while len(result.tried) < budget and built < budget * BUILDS_PER_CHECK:
        if time.monotonic() - t0 > max_seconds or (point := search.ask()) is None:
            break
        config = space.config(point)
        trial = config.apply(candidate)
        built += 1
        launch = space_of.launch_key(task, trial)
        why, twin = same.check(config.options, launch, config.describe(), point)
        if why:  # no GPU time: it scores what its twin scored, for the search's next step
            result.dropped.append((config, why))
            search.tell(point, search.scores.get(twin) if twin is not None else None)
            continue
        say(f"{len(result.tried) + 1}/{budget}: {config.describe()}")
        report = gpu.check(task, trial)
        kept = space_of.beats(report, result.best_report)
        if kept:
            result.best, result.best_report, result.best_config = trial, report, config
        result.tried.append(Tried(config, report, kept))
        search.tell(point, report.timing.speedup if report.ok and report.timing else None)
    _sanitized(task, gpu, result, start, say)
    result.left = search.size - len(search.visited)
    result.seconds = time.monotonic() - t0
    return result


def _sanitized(
    task: CudaTask, gpu: GpuBackend, result: Tuning, start: Config, say: Callable[[str], None]
) -> None:
    """The best, watched by compute-sanitizer before it is kept, as the loop's verify does for a
    run's best: each configuration is new machine code, and a race at BLOCK=1024 that gives
    the right answer in the trials is still a race (a review found tune kept one unwatched).
    One the sanitizer finds something in, or does not finish on, gives way to the best before
    it, down to the kernel as given; the sanitizer is asked once where the best is clean.
    Not installed: the best is kept, and that is said."""
    kept = [t for t in result.tried if t.kept]
    while result.improved and kept:
        found = gpu.sanitize(task, result.best)
        if not found.available:
            say(f"the tuned kernel goes unsanitized: {found.reason}")
            return
        if found.ok:
            return
        last = kept.pop()
        say(f"not kept, compute-sanitizer: {last.config.describe()}: {found.reason}")
        at = result.tried.index(last)
        result.tried[at] = Tried(last.config, last.report.with_sanitizer(found), False)
        if kept:
            prev = kept[-1]
            result.best = prev.config.apply(result.start)
            result.best_report, result.best_config = prev.report, prev.config
        else:
            result.best, result.best_report, result.best_config = (
                result.start,
                result.baseline,
                start,
            )


def sidecar(candidate: CudaCandidate) -> str:
    """The .toml beside a tuned kernel: its launch, its compile options and the values tune may
    try, as the candidate loader reads them (`kernelwright check TASK FILE.cu` builds it the
    same way)."""
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
    for name in ("max_threads_per_block", "min_blocks_per_sm"):
        if getattr(o, name) is not None:
            lines.append(f"{name} = {getattr(o, name)}")
    for name in ("fast_math", "ftz"):
        if getattr(o, name):
            lines.append(f"{name} = true")
    for name in ("prec_div", "prec_sqrt"):
        if not getattr(o, name):
            lines.append(f"{name} = false")
    if candidate.tune_values:
        lines.append("[tune]")
        lines += [f"{name} = {list(values)}" for name, values in candidate.tune_values]
    return "\n".join(lines) + "\n"


def write_tuned(
    candidate: CudaCandidate, name: str, where: Path | None = None
) -> tuple[Path, Path | None]:
    """The tuned kernel as NAME.tuned.cu with its NAME.tuned.toml, beside the kernel it came
    from (or in `where`): the path of the .cu, and where an earlier, different NAME.tuned.cu
    (an earlier tune's, or one the user edited) was kept, as NAME.tuned.N.cu with its .toml
    (the .toml's path where only it was there; None where there was none, or it was the
    same): nothing a user had is lost."""
    origin = Path(candidate.path)
    folder = where or origin.parent
    stem = origin.stem if origin.suffix == ".cu" else name
    cu = folder / f"{stem}.tuned.cu"
    toml, text = cu.with_suffix(".toml"), sidecar(candidate)
    kept = None
    if cu.exists() or toml.exists():
        same = (
            cu.exists() and toml.exists()
            and cu.read_text(errors="replace") == candidate.source
            and toml.read_text(errors="replace") == text
        )  # fmt: skip
        if not same:
            n = 1
            while (folder / f"{stem}.tuned.{n}.cu").exists() or (
                folder / f"{stem}.tuned.{n}.toml"
            ).exists():
                n += 1
            kept_cu = folder / f"{stem}.tuned.{n}.cu"
            kept = kept_cu if cu.exists() else kept_cu.with_suffix(".toml")  # what there was
            if cu.exists():
                cu.replace(kept_cu)
            if toml.exists():
                toml.replace(kept_cu.with_suffix(".toml"))
    cu.write_text(candidate.source)
    toml.write_text(text)
    return cu, kept


def remembered_tune(
    settings: Settings,
    task: CudaTask,
    candidate: CudaCandidate,
    gpu: GpuBackend,
    *,
    arch: str,
    run_id: str,
    memory: bool | None = None,
    budget: int | None = None,
    max_seconds: float | None = None,
    numerics: bool | None = None,
    progress: Callable[[str], None] | None = None,
) -> Tuning:
    """`tune` as every door runs it: its limits from the settings' [tune] unless given, earlier
    winners on this architecture tried first and every checked configuration recorded, in the
    memory the settings name (`memory` False: neither read nor written; None: as the settings
    say)."""
    from kernelwright.agent.experience import open_memory

    mem = open_memory(settings, memory)
    try:
        tunings = TuneMemory(cast(ChromaStore, mem.store)) if mem else None
        signature = task_signature(task)
        found = tune(
            task,
            candidate,
            gpu,
            arch=arch,
            backend=settings.compile_backend,
            budget=budget or settings.tune.budget,
            max_seconds=max_seconds or settings.tune.minutes * 60,
            numerics=settings.tune.numerics if numerics is None else numerics,
            progress=progress,
            builds=BuildCache(settings.builds_dir),
            first=tunings.winners(arch, signature) if tunings else (),
        )
        if tunings:
            where = TuneRecord(task_signature=signature, op_class=op_class(task), arch=arch)
            tunings.add(candidate.source, found.records(where, run_id))
    finally:
        if mem is not None:
            mem.close()
    return found


def after_run(
    settings: Settings,
    task: CudaTask,
    run: RunDir,
    gpu: GpuBackend,
    *,
    arch: str,
    memory: bool | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Tune a finished run's best kernel (best.cu with best.toml): a winner's launch and
    options go into best.toml, so `kernelwright check TASK best.cu` checks the tuned kernel;
    what was tried goes into tune.json and the summary. A best kernel that cannot be tuned
    (its re-check fails) is said in tune.json's "error", and the run keeps what it found."""
    from kernelwright.tools.spec import load_cuda_candidate

    try:
        best = load_cuda_candidate(task, run.best_file)
        found = remembered_tune(
            settings,
            task,
            best,
            gpu,
            arch=arch,
            run_id=run.path.name,
            memory=memory,
            progress=progress,
        )
    except KernelwrightError as exc:
        data: dict[str, Any] = {"error": str(exc)}
    else:
        if found.improved:
            (run.path / "best.toml").write_text(sidecar(found.best))
        data = found.as_json(written=run.best_file if found.improved else None)
    (run.path / "tune.json").write_text(json.dumps(data, indent=2) + "\n")
    summary = run.path / "summary.md"
    if summary.is_file():
        summary.write_text(summary.read_text().rstrip("\n") + "\n\n" + tune_markdown(data))
    return data


def tune_markdown(data: Mapping[str, Any]) -> str:
    """The summary's section on the tune after the run (pure)."""
    lines = ["## Tune: launch and compile options, without the model", ""]
    if "error" in data:
        return "\n".join([*lines, f"not tuned: {data['error']}"]) + "\n"
    header, rows = tune_rows(data)
    lines += [f"- {tune_outcome(data)}"]
    lines += [f"- {data['numerics']}"] if data.get("numerics") else []
    lines += ["", *markdown_table(header, rows)]
    return "\n".join(lines) + "\n"
