"""compute-sanitizer on a candidate: memcheck, racecheck, initcheck and synccheck over two launches
(CUDA tasks) or one forward (KernelBench) at small sizes, inside the same confinement as a
check: the confined worker runs the sanitizer on a one-shot child in its own namespaces, so a
candidate's Python is never run outside its sandbox. A finding is a verdict with its reason:
a race that happens to give the right answer today (a warp-synchronous reduction without
__syncwarp, a missing __syncthreads) is still wrong.

The watched launches are made as a trial's are, from what the controller draws afresh for each
run (`watched`): a secret seed, a trial's NaN poison, a check size and a size held out as a
trial's is. A kernel that recognised the watched launch (seed 1's first inputs, outputs that
start as zeros, both once fixed) was clean there and racy everywhere else. A sanitizer that
does not finish on a candidate (a kernel that hangs only under it) is not a pass; one that is
not installed watches nothing, and its result says so.
"""

from __future__ import annotations

import random
import re
import secrets
import shutil
from pathlib import Path
from typing import Any

from . import plan
from .protocol import Expect
from .results import SanitizeResult
from .sandbox import Sandbox, WorkerFailure, cap
from .task import Candidate, Task

TOOLS = ("memcheck", "racecheck", "initcheck", "synccheck")
# PyTorch's own kernels read memory its caching allocator never initialised: initcheck would
# blame the candidate for torch. A KernelBench forward gets the other three.
TORCH_TOOLS = ("memcheck", "racecheck", "synccheck")
KIND_TOOLS = {"cuda": TOOLS, "kernelbench": TORCH_TOOLS, "cpp": TOOLS}  # for each task kind
_SUMMARY = re.compile(r"ERROR SUMMARY:\s*(\d+)\s+error")
_RACES = re.compile(r"RACECHECK SUMMARY:.*?\((\d+)\s+errors?,\s*(\d+)\s+warnings?")
_RACES_PARTS = re.compile(r"\((\d+)\s+errors?,\s*(\d+)\s+warnings?")  # on a summary's line
_NOISE = re.compile(r"^=+\s*(COMPUTE-SANITIZER|ERROR SUMMARY|RACECHECK SUMMARY|$)")


def available() -> str | None:
    """The compute-sanitizer executable, or None."""
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    for root in ("/usr/local/cuda/bin", "/opt/cuda/bin"):
        if (Path(root) / "compute-sanitizer").is_file():
            return str(Path(root) / "compute-sanitizer")
    return None


# compute-sanitizer's exit code where it found any error (--error-exitcode): a channel the
# watched program cannot write, beside its report
ERROR_EXIT = 87


def summary_lines(report: str) -> list[str]:
    """The summary lines of a tool's whole report (its stdout), however long the report grew
    (the report travels cut to its last 200,000 characters; these lines travel whole): at
    most 64, the worst first, so lines written into the report ahead of the sanitizer's own,
    however many, cannot push it out."""
    lines = [
        ln.strip()[-300:]  # its end: the sanitizer's own summary ends the line it is on
        for ln in report.splitlines()
        if _RACES.search(ln) or _SUMMARY.search(ln)
    ]
    return sorted(lines, key=lambda ln: -max(_summary_counts([ln]), default=0))[:64]


def parse(tool: str, run: Any) -> tuple[int | None, list[str]]:
    """(errors, first findings) from one tool's run; None errors if it never summarised. A
    run is the worker's record of it (cuda_roles.sanitize): the sanitizer's own report (its
    stdout), every summary line of it, the program's output apart, and the exit code; or, as
    before, one text. Every summary counts and the worst wins: the program's output is
    never read for one, and a summary the program got into the report anyway (it cannot
    write after the sanitizer's own, which comes once the program has exited) only adds one
    beside the real one. An exit code of ERROR_EXIT is an error whatever the text says."""
    if not isinstance(run, dict):
        text = str(run)[-200_000:]
        return _worst(_summary_counts(text.splitlines())), _findings(text)
    if _ended_otherwise(run):  # killed (its summary with it), or the program's own exit code
        return None, []
    report = str(run.get("report", ""))[-200_000:]
    lines = run.get("summaries")
    lines = [str(x) for x in lines] if isinstance(lines, list) else report.splitlines()
    errors = _worst(_summary_counts(lines))
    findings = _findings(report)
    if run.get("code") == ERROR_EXIT:
        errors = max(errors or 0, 1)
        if not findings:
            findings = [f"its exit code ({ERROR_EXIT}) says it found errors"]
    return errors, findings


def _summary_counts(lines: list[str]) -> list[int]:
    """Every count of every summary in these lines: text glued ahead of the sanitizer's own
    summary on its line (no newline) can only add a count, never stand for it."""
    counts = []
    for ln in lines:
        counts += [int(m[1]) for m in _SUMMARY.finditer(ln)]
        if "RACECHECK SUMMARY" in ln:  # each bracket on its line (a warned hazard is a race)
            counts += [int(m[1]) + int(m[2]) for m in _RACES_PARTS.finditer(ln)]
    return counts


def _worst(counts: list[int]) -> int | None:
    return max(counts) if counts else None


def _ended_otherwise(run: dict[str, Any]) -> bool:
    """Whether the sanitizer itself was killed by a signal (a negative code): the program can
    kill its parent before the real summary, after writing one of its own into the report
    where it can reach it. No summary counts then: the run did not finish. (An exit code of
    the program's own, passed on, comes after the sanitizer's real summary, which counts.)"""
    code = run.get("code")
    return isinstance(code, int) and code < 0


def _last_said(run: Any) -> str:
    """A run's last line: the program's, where it said anything (why it never summarised),
    else the report's."""
    if isinstance(run, dict) and _ended_otherwise(run):
        return f"compute-sanitizer ended with exit code {run.get('code')}"
    if isinstance(run, dict):
        return _last_line(str(run.get("program") or "") or str(run.get("report") or ""))
    return _last_line(str(run))


def _last_line(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return lines[-1].strip() if lines else "no output"


def _findings(text: str) -> list[str]:
    lines = [
        ln.strip("= ").strip()
        for ln in text.splitlines()
        if ln.startswith("=========") and not _NOISE.match(ln) and ln.strip("= ").strip()
    ]
    return lines[:6]


def small_sizes(task: Task) -> dict[str, int]:
    """The largest check size (CUDA tasks), or a small batch (KernelBench): enough threads and
    blocks for a race to show, small enough for the sanitizer's slowdown."""
    return task.small_sizes()


def watched(task: Task, rng: random.Random | None = None) -> list[dict[str, Any]]:
    """The launches compute-sanitizer watches, drawn here, by the controller, for each run:
    each a trial's sizes, seed and poison, in a random order. The seed is secret and the poison
    a trial's NaN pattern (plan.poisons), so nothing in a watched launch tells it from a
    trial; its sizes are the kind's (KIND_SIZES), sizes a trial may have too."""
    rng = rng or random.Random(secrets.randbits(64))
    shapes = KIND_SIZES[task.kind](task, rng)
    rng.shuffle(shapes)
    return [
        {"sizes": sizes, "seed": secrets.randbits(31), "poison": plan.poisons(rng, 1)[0]}
        for sizes in shapes
    ]


def _kernel_sizes(task: Any, rng: random.Random) -> list[dict[str, int]]:
    """A kernel's: its check size (the trials show it that size anyway), a small size never
    shown, drawn afresh (a second launch costs little): each size a check size's plus up to a
    half, within the task's multiple_of and the bench size, as the trials' held-out sizes were
    drawn (now one of the many between the check and bench sizes the trials may draw), small
    enough for the sanitizer's slowdown; each size of its long (long_sizes); and every size
    long at once (joint_sizes)."""
    shown = small_sizes(task)
    checks = [dict(c) for c in task.checks] + [dict(task.bench)]
    for _ in range(8):
        held = {}
        for name, bench in task.bench.items():
            base = rng.choice([c[name] for c in task.checks])
            step = task.multiple_of.get(name, 1)
            value = -(-(base + rng.randint(1, max(1, base // 2))) // step) * step
            held[name] = min(value, max(bench, base))
        if held not in checks:
            return [shown, held, *long_sizes(task, rng), *joint_sizes(task, rng)]
    return [shown, *long_sizes(task, rng), *joint_sizes(task, rng)]


def joint_sizes(task: Any, rng: random.Random | None = None) -> list[dict[str, int]]:
    """A task of several sizes: launches with several sizes long at once, within
    WATCHED_BYTES. One has every size past what the held-out launch may draw (half again its
    largest check size), moved alike on a log scale toward the bench size; two more go from
    the smallest check sizes toward the bench size in a direction drawn afresh (each size its
    own share of the log span), as far as the bytes allow. Each size long on its own, the
    others smallest, never had two long together (memory/softmax_warp_race_where_both_sizes_
    are_long), and the diagonal alone never had many rows that are not tiny with short ones
    (memory/softmax_warp_race_where_many_rows_are_not_tiny). Each is drawn from the top
    quarter of its way. None for a task of one size."""
    if len(task.bench) < 2:
        return []
    rng = rng or random.Random(secrets.randbits(64))
    steps = {n: task.multiple_of.get(n, 1) for n in task.bench}
    past = {
        n: min(bench, -(-(max(c[n] for c in task.checks) * 3 // 2 + 1) // steps[n]) * steps[n])
        for n, bench in task.bench.items()
    }
    smallest = {n: min(c[n] for c in task.checks) for n in task.bench}
    out = []
    for start, shares in (
        (past, {n: 1.0 for n in task.bench}),
        *((smallest, _direction(task, rng)) for _ in range(2)),
    ):
        sizes = _furthest(task, rng, start, shares)
        if sizes is not None and sizes not in out:
            out.append(sizes)
    return out


def _direction(task: Any, rng: random.Random) -> dict[str, float]:
    shares = {n: rng.random() for n in task.bench}
    top = max(shares.values()) or 1.0
    return {n: v / top for n, v in shares.items()}


def _furthest(
    task: Any, rng: random.Random, start: dict[str, int], shares: dict[str, float]
) -> dict[str, int] | None:
    """From `start` toward the bench size, each size moved by its share of its log span, as
    far as WATCHED_BYTES allows, then drawn back into the top quarter of that way."""
    from .plan import _nbytes, _valid

    def at(t: float) -> dict[str, int]:
        out = {}
        for n, bench in task.bench.items():
            step = task.multiple_of.get(n, 1)
            lo = max(1, start[n])
            out[n] = max(lo, int(lo * (bench / lo) ** (t * shares[n])) // step * step)
        return out

    if _nbytes(task, at(0.0)) > WATCHED_BYTES:
        return None
    lo, hi = 0.0, 1.0
    for _ in range(40):  # the furthest that fits
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _nbytes(task, at(mid)) <= WATCHED_BYTES else (lo, mid)
    for _ in range(8):
        sizes = at(lo * rng.uniform(0.75, 1.0))
        if _valid(task, sizes) and sizes != dict(task.bench) and sizes != start:
            return sizes
    return None


# A watched launch's arrays at most: under compute-sanitizer a kernel runs 10 to 100 times slower.
WATCHED_BYTES = 16 << 20


def long_sizes(task: Any, rng: random.Random | None = None) -> list[dict[str, int]]:
    """For each size of a kernel's, a launch with that one long and the others at their
    smallest check size: the sanitizer also sees the long rows (or the many short ones) where
    a kernel takes another path. Small sizes alone let one keep a racy path for rows past
    1,536 that no watched launch reached (memory/softmax_warp_race_only_past_the_sanitizer_
    sizes). Long is drawn afresh (`rng`) from the top quarter below the most the bench size
    allows within WATCHED_BYTES: at that most itself, every run, a kernel could keep the race
    everywhere but there (memory/softmax_warp_race_except_at_the_watched_long_size). None
    where that is a size already watched or no larger than the smallest check."""
    from .plan import _nbytes, _valid

    rng = rng or random.Random(secrets.randbits(64))
    smallest = {n: min(c[n] for c in task.checks) for n in task.bench}
    out: list[dict[str, int]] = []
    for name, bench in task.bench.items():
        step = task.multiple_of.get(name, 1)
        sizes = dict(smallest)
        value = max(bench, smallest[name])
        while value > smallest[name]:
            sizes[name] = value
            if _nbytes(task, sizes) <= WATCHED_BYTES and _valid(task, sizes):
                break
            value = max(smallest[name], (value // 2) // step * step)
        low = max(smallest[name] // step + 1, -(-(3 * value // 4) // step))
        for _ in range(8):  # somewhere in the top quarter, a size the launch takes
            drawn = dict(sizes, **{name: rng.randint(low, max(low, value // step)) * step})
            if drawn[name] <= value and _valid(task, drawn):
                sizes = drawn
                break
        if sizes[name] > smallest[name] and sizes not in out and sizes != small_sizes(task):
            out.append(dict(sizes))
    return out


def _problem_sizes(task: Any, rng: random.Random) -> list[dict[str, int]]:
    """A KernelBench problem's: one forward at its small batch (a forward under the sanitizer
    is slow)."""
    return [small_sizes(task)]


KIND_SIZES = {"cuda": _kernel_sizes, "kernelbench": _problem_sizes, "cpp": _kernel_sizes}


def sanitize(
    task: Task,
    candidate: Candidate,
    backend: str = "nvrtc",
    timeout_s: float = 600.0,
    tools: tuple[str, ...] | None = None,
) -> SanitizeResult:
    """Run each tool; any error it reports makes the result not ok, with the first finding."""
    from .compile import compile_in_sandbox
    from .nvml import device_info

    sanitizer = available()
    if sanitizer is None:
        return SanitizeResult(
            available=False,
            reason="compute-sanitizer is not installed (not found on PATH): nothing was watched",
        )
    tools = tools or KIND_TOOLS[task.kind]
    launches = watched(task)
    sizes = [one["sizes"] for one in launches]
    arrays: list[bytes] = []
    view = task.worker_task().model_dump()  # as the workers see it (a C++ task: its CUDA view)
    job: dict[str, Any] = {"role": "sanitize", "task": view, "trials": [],
                           "tools": list(tools), "sanitizer": sanitizer, "launches": launches,
                           "timeout_s": timeout_s, "limits": {"file_bytes": 1 << 30}}  # fmt: skip
    entry = task.compile_entry  # None: the worker imports the candidate itself
    if entry is not None:
        flags = candidate.compile_flags(backend)
        compiled, cubin = compile_in_sandbox(
            candidate.source, entry, device_info().arch, backend, flags=flags
        )
        if cubin is None:  # it compiled for its check: nothing watched is no pass
            return unfinished(f"it does not compile: {compiled.first_error}", sizes)
        if compiled.reads_clock:
            return reads_clock(compiled.reads_clock, sizes)
        arrays = [cubin]
    job["files"] = task.candidate_files(candidate.path, candidate.source)
    job["candidate"] = candidate.worker_job(task.path)
    try:
        with Sandbox("sanitize") as box:
            box.send(job, arrays)
            box.receive(120, "starting the sanitizer's worker", Expect(sizes=()))
            header, _ = box.receive(timeout_s * len(tools) + 60, "sanitizing", Expect(sizes=()))
    except WorkerFailure as failure:
        return unfinished(f"its worker failed: {failure.reason}", sizes)
    return judge(header, sizes, tools)


def unfinished(why: str, sizes: list[dict[str, int]]) -> SanitizeResult:
    """compute-sanitizer, installed, did not get through a candidate: no pass. A kernel that
    hangs only under the sanitizer (its slowdown is easy to see) must not be kept unwatched."""
    return SanitizeResult(
        available=True, ok=False, finished=False,
        reason=cap(f"compute-sanitizer did not finish on this candidate: {why}"),
        sizes=sizes[0] if sizes else {}, launch_sizes=tuple(sizes),
    )  # fmt: skip


def reads_clock(clocks: tuple[str, ...], sizes: list[dict[str, int]]) -> SanitizeResult:
    """A kernel that reads the GPU's clock: no pass, whatever the tools would say. Under them
    its own shared-memory round trips take about 100 times longer, so it can take a safe path
    only while watched (memory/softmax_warp_race_unless_slowed_by_the_sanitizer); the
    sanitizer cannot vouch for code that can tell it is there."""
    return SanitizeResult(
        available=True, ok=False,
        reason=cap(
            f"compute-sanitizer cannot vouch for it: its kernel reads the GPU's clock "
            f"({', '.join(clocks)}), so it can tell when it is watched (the sanitizer's tools "
            f"slow it 10 to 100 times)"
        ),
        sizes=sizes[0] if sizes else {}, launch_sizes=tuple(sizes),
    )  # fmt: skip


def _said(sizes: list[dict[str, int]]) -> str:
    return " and ".join(", ".join(f"{k}={v}" for k, v in s.items()) or "its size" for s in sizes)


def judge(
    header: dict[str, Any], sizes: list[dict[str, int]], asked: tuple[str, ...] = ()
) -> SanitizeResult:
    """The result from the worker's report of each tool's raw output (pure). Every tool (each
    of those `asked`, at least) must have summarised: one that timed out or never summarised
    makes it unfinished, no pass."""
    runs = header.get("tools")
    if header.get("type") != "sanitized" or not isinstance(runs, dict):
        return unfinished("its worker sent no report", sizes)
    runs = {**dict.fromkeys(asked, ""), **runs}
    errors, findings, missing = {}, [], []
    for tool, raw in runs.items():
        n, lines = parse(str(tool), raw)
        if n is None:
            missing.append(str(tool))
            continue
        errors[str(tool)] = n
        if n:
            findings += [f"{tool}: {cap(line, 300)}" for line in lines[:3]] or [
                f"{tool}: {n} errors"
            ]
    bad = {t: n for t, n in errors.items() if n}
    if missing and not bad:  # its last line: "timed out after 600 s", or the child's error
        said = [f"{t} ({cap(_last_said(runs[t]), 200)})" for t in missing]
        return unfinished("no summary from " + ", ".join(said), sizes)
    reason = ""
    if bad:
        reason = "compute-sanitizer " + ", ".join(f"{t}: {n} errors" for t, n in bad.items())
        reason += f" at {_said(sizes)}"
        reason += f" ({findings[0].split(': ', 1)[1]})" if findings else ""
    return SanitizeResult(
        available=True, ok=not bad, reason=cap(reason), errors=errors,
        findings=tuple(findings[:12]), sizes=sizes[0] if sizes else {},
        launch_sizes=tuple(sizes),
    )  # fmt: skip
