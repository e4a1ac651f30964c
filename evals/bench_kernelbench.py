"""KernelBench problems at today's sizes: kernelwright's self-check beside KernelBench's own
harness on the same problem, in one run (a benchmark that prints figures, not a timed test):

    python -m kernelwright.evals.bench_kernelbench --kb PATH_TO_A_KERNELBENCH_CLONE
        [--problems 1/1,1/26,2/12] [--no-theirs] [--no-builds] [--no-examples]
        [--timeout 900] [--json FILE]

Per problem (by default the 25 of DEFAULT_PROBLEMS, levels 1 and 2, read from the user's clone;
nothing of KernelBench is vendored):
  - `kernelwright check PROBLEM --json --no-profile` as a user runs it: the problem's own Model
    against itself (it must read 1.00x within 2%), its verdict, the whole command's wall time and
    the check's phases, and the peak memory of the command's whole process tree: host (the sum of
    every process's RSS) and GPU (device-wide memory in use above what was in use before it
    started), both sampled every 50 ms from outside;
  - KernelBench's own harness on the same problem, in a process of its own:
    `eval_kernel_against_ref` imported from the clone's src/, the problem's Model as ModelNew,
    5 correctness trials and 100 timed ones (as its scripts/eval_from_generations.py runs it),
    its wall time and the speedup it reports; the same memory sampling.
Then a load_inline candidate (the suite's honest control) checked twice with a fresh cache: the
second check must not build (--no-builds skips it); and the example CUDA tasks' warm and
back-to-back check times (bench_foundation), unless --no-examples.

The clone's package imports the LLM clients of its generation scripts (openai, litellm) and a
few helpers at import; where those are not installed, the process that runs KernelBench's eval
stands in empty modules for them (its eval calls none of them).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kernelwright.evals.bench_checks import CLI
from kernelwright.evals.kb_problems import Clone, KbError, KbProblem, open_clone

# Across levels 1 and 2 (level/id): matmuls of several shapes, elementwise, reductions,
# normalizations, pooling, convolutions, scans, losses, attention, and fused level-2 models;
# several of them with inputs of 4 GB and more at today's sizes (GELU, Softmax, RMSNorm, Sum
# reduction, cumsum, conv2d, tall-skinny matmul).
DEFAULT_PROBLEMS = (
    "1/1,1/2,1/4,1/9,1/12,1/19,1/23,1/26,1/33,1/36,1/40,1/42,1/47,1/50,1/63,1/88,1/89,1/95,1/97,"
    "2/1,2/9,2/12,2/17,2/40,2/76"
)
SAMPLE_S = 0.05
BAND = 0.02  # the self-check's speedup must read 1.00x within this


def parse_problems(text: str) -> list[tuple[int, int]]:
    """ "1/1,1/26,2/12" as (level, id) pairs, in order and without repeats; KbError otherwise."""
    out: list[tuple[int, int]] = []
    for part in (p.strip() for p in text.split(",")):
        level, _, pid = part.partition("/")
        if not (level.isdigit() and pid.isdigit()):
            raise KbError(f"--problems: {part!r} is not LEVEL/ID (e.g. 1/26)")
        pair = (int(level), int(pid))
        if pair not in out:
            out.append(pair)
    return out


def resolve(clone: Clone, wanted: Sequence[tuple[int, int]]) -> list[KbProblem]:
    """The clone's problems for these (level, id) pairs; KbError naming any it lacks."""
    found, missing = [], []
    by_level: dict[int, dict[int, KbProblem]] = {}
    for level, pid in wanted:
        if level not in by_level:
            by_level[level] = (
                {p.id: p for p in clone.problems(level)} if level in clone.levels() else {}
            )
        if pid in by_level[level]:
            found.append(by_level[level][pid])
        else:
            missing.append(f"{level}/{pid}")
    if missing:
        raise KbError(f"{clone.described}: no problem {', '.join(missing)}")
    return found


@dataclass
class Sampled:
    """A command's outcome, with what it held at most while it ran."""

    returncode: int | None  # None: killed at the timeout
    stdout: str
    stderr: str
    wall_s: float
    peak_host_bytes: int | None = None  # None: could not be read here
    peak_gpu_bytes: int | None = None


class _Peaks:
    """Samples a process tree's host memory and the GPU's memory in use, every SAMPLE_S."""

    def __init__(self, pid: int, gpu_used: Any) -> None:
        self.pid = pid
        self.host: int | None = None
        self.gpu: int | None = None
        self._stop = threading.Event()
        self._gpu = gpu_used  # _gpu_used_reader()'s, or None
        self._gpu_base = self._gpu() if self._gpu else None
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> _Peaks:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while True:
            self._sample()
            if self._stop.wait(SAMPLE_S):
                return

    def _sample(self) -> None:
        rss = _tree_rss(self.pid)
        if rss is not None:
            self.host = max(self.host or 0, rss)
        if self._gpu is not None and self._gpu_base is not None:
            used = self._gpu()
            if used is not None:
                self.gpu = max(self.gpu or 0, used - self._gpu_base)


def _tree_rss(pid: int) -> int | None:
    """The RSS of a process and all its descendants, in bytes (None once it is gone, or where
    psutil is missing)."""
    try:
        import psutil
    except ImportError:
        return None
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return None
    total = 0
    for p in procs:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            continue
    return total


def _gpu_used_reader() -> Any:
    """A function giving the first visible GPU's memory in use, in bytes; None without NVML."""
    try:
        import pynvml

        pynvml.nvmlInit()
        first = (os.environ.get("CUDA_VISIBLE_DEVICES") or "0").split(",")[0].strip()
        handle = (
            pynvml.nvmlDeviceGetHandleByIndex(int(first))
            if first.isdigit()
            else pynvml.nvmlDeviceGetHandleByUUID(first)
        )
    except Exception:  # no NVML, no GPU, or a device it cannot name
        return None

    def used() -> int | None:
        try:
            return int(pynvml.nvmlDeviceGetMemoryInfo(handle).used)
        except Exception:
            return None

    return used


def settle_gpu(used: Any, most_s: float = 10.0, step_s: float = SAMPLE_S) -> int | None:
    """The GPU's memory in use once it stops falling (the last command's processes gone, the
    driver done freeing theirs), or after `most_s`: the base a command's peak is read from.
    The first runs of this benchmark took it at once and read KernelBench's harness at 0 GiB:
    our check's workers, just killed, still held more than it used."""
    if used is None:
        return None
    last, t0 = used(), time.perf_counter()
    while time.perf_counter() - t0 < most_s:
        time.sleep(step_s)
        now = used()
        if now is None or last is None or now >= last - (16 << 20):
            return now
        last = now
    return last


def run_sampled(cmd: Sequence[str], timeout_s: float, env: dict[str, str] | None = None) -> Sampled:
    """Run `cmd` to its end (killed at the timeout), sampling its tree's memory meanwhile."""
    gpu_used = _gpu_used_reader()
    settle_gpu(gpu_used)
    t0 = time.perf_counter()
    with (
        subprocess.Popen(
            list(cmd),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            start_new_session=True,
        ) as proc,
        _Peaks(proc.pid, gpu_used) as peaks,
    ):
        try:
            out, err = proc.communicate(timeout=timeout_s)
            code: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            out, err = proc.communicate()
            code = None
    return Sampled(code, out, err, time.perf_counter() - t0, peaks.host, peaks.gpu)


def _last_line(text: str) -> str:
    return (text.strip().splitlines() or ["no output"])[-1][:300]


def _measured(got: Sampled, timeout_s: float) -> dict[str, Any]:
    """A command's wall time and peak memory; its verdict too when it timed out."""
    row: dict[str, Any] = {
        "wall_s": got.wall_s,
        "peak_host_bytes": got.peak_host_bytes,
        "peak_gpu_bytes": got.peak_gpu_bytes,
    }
    if got.returncode is None:
        row["verdict"] = f"timeout after {timeout_s:.0f} s"
    return row


def kw_check(
    args: Sequence[str], timeout_s: float, env: dict[str, str] | None = None
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """`kernelwright check ARGS --json --no-profile` as a user runs it, its memory sampled: the
    row so far (wall time, peaks; its verdict where it gave no report) and its report."""
    got = run_sampled(
        [sys.executable, "-c", CLI, "check", *args, "--json", "--no-profile"], timeout_s, env
    )
    row = _measured(got, timeout_s)
    if "verdict" in row:
        return row, None
    try:
        return row, json.loads(got.stdout)
    except json.JSONDecodeError:
        row["verdict"] = f"no JSON (exit {got.returncode}): {_last_line(got.stderr)}"
        return row, None


TIMING_KEYS = (
    "processes",
    "rounds",
    "calls_per_round",
    "warmup_ms",
    "rounds_ms",
    "call_wall_ms",
    "input_scale",
)


def our_check(problem: KbProblem, timeout_s: float) -> dict[str, Any]:
    """kernelwright's self-check of the problem, as a user runs it."""
    row, report = kw_check([str(problem.path)], timeout_s)
    if report is None:
        return row
    timing = report.get("timing") or {}
    return {
        **row,
        "verdict": report.get("verdict"),
        "reason": str(report.get("reason", ""))[:300],
        "speedup": timing.get("speedup"),
        "check_s": (report.get("wall_ms") or 0) / 1e3,
        "phase_s": {k: v / 1e3 for k, v in (report.get("phase_ms") or {}).items()},
        # where the timing phase went: its processes, rounds and their parts
        "timing": {k: timing.get(k) for k in TIMING_KEYS if timing.get(k) is not None},
        # where the reference's and the candidate's workers spent their start, by their account
        "worker_start_s": {
            who: {k: v / 1e3 for k, v in steps.items()}
            for who, steps in (report.get("worker_start_ms") or {}).items()
        },
        # the command's own time around the check (before its workers, until the check, ...)
        "command_s": {k: v / 1e3 for k, v in (report.get("command_ms") or {}).items()},
    }


def start_line(starts: dict[str, dict[str, float]]) -> str:
    """The reference worker's start, step by step: " [reference's start: imports 2.7, ...]"."""
    mine = starts.get("reference") or {}
    steps = ", ".join(f"{k} {v:.1f}" for k, v in mine.items() if v >= 0.05)
    return f" [reference's start: {steps}]" if steps else ""


def command_line(spent: dict[str, float]) -> str:
    """The command's own time around the check: " [command: before the workers 0.4, ...]"."""
    steps = ", ".join(f"{k} {v:.2f}" for k, v in spent.items() if k != "check")
    return f" [command: {steps}]" if steps else ""


# Run as `python -c THEIRS SRC PROBLEM BUILD_DIR` in a process of its own: KernelBench's eval on
# the problem against itself. Prints one JSON line last.
# Its runtime and ref_runtime are the mean of CUDA-event times, in ms (its dataclass says us).
THEIRS = r"""
import json, sys, time
from kernelwright.tools.kbtime import stand_ins
src, problem, build = sys.argv[1:4]
stand_ins()  # its generation scripts' clients and helpers, where missing: the eval calls none
sys.path.insert(0, src)
t0 = time.perf_counter()
from kernelbench.eval import eval_kernel_against_ref
imported = time.perf_counter() - t0
ref = open(problem).read()
custom = ref + "\n\nModelNew = Model\n"
t1 = time.perf_counter()
r = eval_kernel_against_ref(ref, custom, seed_num=42, num_correct_trials=5, num_perf_trials=100,
                            measure_performance=True, build_dir=build)
took = time.perf_counter() - t1
print(json.dumps({"import_s": imported, "eval_s": took, "compiled": bool(r.compiled),
                  "correctness": bool(r.correctness), "runtime_ms": r.runtime,
                  "ref_runtime_ms": getattr(r, "ref_runtime", -1.0),
                  "metadata": {k: str(v)[:200] for k, v in dict(r.metadata).items()}}))
"""


def their_eval(
    clone: Clone, problem: KbProblem, timeout_s: float, build_dir: Path
) -> dict[str, Any]:
    """KernelBench's own harness on the problem against itself."""
    src = clone.root / "src"
    if not (src / "kernelbench" / "eval.py").is_file():
        return {"verdict": f"the clone has no src/kernelbench/eval.py ({clone.described})"}
    got = run_sampled(
        [sys.executable, "-c", THEIRS, str(src), str(problem.path), str(build_dir)], timeout_s
    )
    row = _measured(got, timeout_s)
    if "verdict" in row:
        return row
    try:
        facts = json.loads(_last_line(got.stdout) if got.stdout.strip() else "")
    except json.JSONDecodeError:
        return {**row, "verdict": f"failed (exit {got.returncode}): {_last_line(got.stderr)}"}
    ref, ours = facts.get("ref_runtime_ms"), facts.get("runtime_ms")
    speedup = (
        ref / ours
        if isinstance(ref, int | float) and isinstance(ours, int | float) and ours > 0 and ref > 0
        else None
    )
    verdict = "correct" if facts.get("correctness") else "incorrect"
    return {**row, **facts, "verdict": verdict, "speedup": speedup}


def timing_line(t: dict[str, Any]) -> str:
    """The timing phase's parts on a progress line: " [timing: 3 processes a side, 288 rounds
    of 1 call, 10.2 ms a call; warm-up 1.4 s, rounds 2.9 s]", or "" (pure)."""
    if not t:
        return ""
    parts = [
        f"{t['processes']} processes a side" if "processes" in t else "",
        f"{t['rounds']} calls a side" + (f", {t['calls_per_round']} a round"
                                         if "calls_per_round" in t else "")
        if "rounds" in t else "",
        f"{t['call_wall_ms']:.1f} ms a call" if "call_wall_ms" in t else "",
        f"warm-up {t['warmup_ms'] / 1e3:.1f} s" if "warmup_ms" in t else "",
        f"rounds {t['rounds_ms'] / 1e3:.1f} s" if "rounds_ms" in t else "",
    ]  # fmt: skip
    shown = [p for p in parts if p]
    return f" [timing: {'; '.join(shown)}]" if shown else ""


@dataclass
class Row:
    problem: str  # "level/id name"
    ours: dict[str, Any] = field(default_factory=dict)
    theirs: dict[str, Any] = field(default_factory=dict)


def scaled(ours: dict[str, Any]) -> str:
    """How a check's scaled trial went (pure): "x±64" where it counted (every timed call's
    inputs were scaled so), "no" where it did not, "-" where the report does not say (the
    scale from the timing, or, in runs before it was kept there, from the reason)."""
    scale = (ours.get("timing") or {}).get("input_scale")
    if isinstance(scale, int | float) and scale != 1:
        return f"x±{scale:g}"
    reason = str(ours.get("reason") or "")
    if "not counted" in reason:
        return "no"
    found = re.search(r"inputs also x±(\d+)", reason)
    return f"x±{found.group(1)}" if found else "-"


def _gib(n: Any) -> str:
    return f"{n / (1 << 30):.1f}" if isinstance(n, int | float) else "-"


def _x(v: Any) -> str:
    return f"{v:.3f}x" if isinstance(v, int | float) else "-"


def _s(v: Any) -> str:
    return f"{v:.1f}" if isinstance(v, int | float) else "-"


def table(rows: Sequence[Row]) -> str:
    """The side-by-side table, and a summary against the targets."""
    head = (
        f"{'problem':44s} {'verdict':10s} {'self':>7s} {'wall s':>7s} {'timing':>7s} "
        f"{'scaled':>6s} "
        f"{'GPU GiB':>8s} {'host GiB':>8s} | {'KB verdict':10s} {'KB self':>7s} {'KB s':>6s} "
        f"{'KB GPU':>7s} {'ours/KB':>7s}"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        o, t = r.ours, r.theirs
        ratio = (
            o["wall_s"] / t["wall_s"]
            if isinstance(o.get("wall_s"), float)
            and isinstance(t.get("wall_s"), float)
            and t["wall_s"] > 0
            and t.get("verdict") == "correct"
            else None
        )
        lines.append(
            f"{r.problem[:44]:44s} {str(o.get('verdict', '-'))[:10]:10s} "
            f"{_x(o.get('speedup')):>7s} "
            f"{_s(o.get('wall_s')):>7s} {_s((o.get('phase_s') or {}).get('timing')):>7s} "
            f"{scaled(o):>6s} "
            f"{_gib(o.get('peak_gpu_bytes')):>8s} {_gib(o.get('peak_host_bytes')):>8s} | "
            f"{str(t.get('verdict', '-'))[:10]:10s} {_x(t.get('speedup')):>7s} "
            f"{_s(t.get('wall_s')):>6s} {_gib(t.get('peak_gpu_bytes')):>7s} "
            f"{(f'{ratio:.1f}' if ratio else '-'):>7s}"
        )
    lines += ["", summary(rows)]
    odd = [r for r in rows if r.ours.get("verdict") not in ("correct", None)]
    for r in odd:
        lines.append(f"  {r.problem}: {r.ours.get('verdict')} {r.ours.get('reason', '')}".rstrip())
    return "\n".join(lines)


def summary(rows: Sequence[Row]) -> str:
    done = [r for r in rows if r.ours.get("verdict") == "correct"]
    walls = [r.ours["wall_s"] for r in done]
    theirs = [r.theirs["wall_s"] for r in rows if r.theirs.get("verdict") == "correct"]
    in_band = [r for r in done if abs(float(r.ours.get("speedup") or 0) - 1) <= BAND]
    within3 = [
        r
        for r in done
        if r.theirs.get("verdict") == "correct" and r.ours["wall_s"] <= 3 * r.theirs["wall_s"]
    ]
    told = [scaled(r.ours) for r in done if scaled(r.ours) != "-"]
    parts = [
        f"{len(done)} of {len(rows)} checked correct",
        f"{len(in_band)} of {len(done)} read 1.00x within {BAND:.0%}",
        f"median wall {statistics.median(walls):.1f} s (target: at most 10 s)" if walls else "",
        f"KernelBench's harness median {statistics.median(theirs):.1f} s" if theirs else "",
        f"{len(within3)} within 3x KernelBench's time" if theirs else "",
        f"the scaled trial counted in {sum(s != 'no' for s in told)} of {len(told)}"
        if told
        else "",
    ]
    return "; ".join(p for p in parts if p)


HERE = Path(__file__).resolve().parent
BUILD_TASK = HERE.parent / "examples" / "kernelbench" / "relu_mlp.py"
BUILD_CANDIDATE = HERE / "adversarial" / "cases" / "controls" / "kb_load_inline.py"


def load_inline_twice(timeout_s: float) -> list[dict[str, Any]]:
    """The same load_inline candidate checked twice with a fresh cache: the first check builds
    its extension, the second must not (issue 13's target: under 1 s building)."""
    import tempfile

    rows = []
    with tempfile.TemporaryDirectory(prefix="kw-bench-builds-") as cache:
        env = {**os.environ, "KERNELWRIGHT_CACHE_DIR": cache}
        for _ in range(2):
            row, report = kw_check([str(BUILD_TASK), str(BUILD_CANDIDATE)], timeout_s, env)
            if report is not None:
                row.update(
                    verdict=report.get("verdict"),
                    compile_s=(report.get("phase_ms") or {}).get("compile", 0) / 1e3,
                    extensions=report.get("extensions") or [],
                )
            rows.append(row)
    return rows


def builds_line(rows: Sequence[dict[str, Any]]) -> str:
    """The two checks of the load_inline candidate, in one line each."""
    out = []
    for which, row in zip(("first", "second"), rows, strict=False):
        exts = row.get("extensions") or []
        built = ", ".join(
            f"{e.get('name')} {'cached' if e.get('cached') else 'built'} in "
            f"{e.get('seconds', 0):.2f} s"
            for e in exts
        )
        out.append(
            f"load_inline, {which} check: {row.get('verdict')}, whole command "
            f"{_s(row.get('wall_s'))} s, import {_s(row.get('compile_s'))} s"
            + (f"; {built}" if built else "; no build reported")
        )
    return "\n".join(out)


def examples(timeout_s: float) -> str:
    """The example CUDA tasks' warm and back-to-back check times (bench_foundation's table)."""
    got = run_sampled(
        [
            sys.executable,
            "-m",
            "kernelwright.evals.bench_foundation",
            "--repeat",
            "2",
            "--no-load-inline",
        ],
        timeout_s,
    )
    if got.returncode != 0:
        why = "timed out" if got.returncode is None else f"exit {got.returncode}"
        return f"bench_foundation {why}: {_last_line(got.stderr)}"
    return got.stdout.rstrip()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--kb", type=Path, help="a KernelBench clone (not with --table-from)")
    parser.add_argument("--problems", default=DEFAULT_PROBLEMS, help="LEVEL/ID,... (default: 25)")
    parser.add_argument("--no-theirs", action="store_true", help="skip KernelBench's harness")
    parser.add_argument("--no-examples", action="store_true", help="skip the CUDA examples")
    parser.add_argument(
        "--no-builds", action="store_true", help="skip the load_inline candidate checked twice"
    )
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per command")
    parser.add_argument(
        "--json", type=Path, help="write every figure here (again after each problem)"
    )
    parser.add_argument(
        "--table-from",
        type=Path,
        nargs="+",
        metavar="JSON",
        help="run nothing: the table and summary of the problems in these --json files together",
    )
    ns = parser.parse_args(argv)
    if ns.table_from:
        try:
            print(table(rows_from(ns.table_from)))
        except (OSError, ValueError, TypeError, KeyError) as e:
            print(f"error: cannot read the figures: {e}", file=sys.stderr)
            return 2
        return 0
    if ns.kb is None:
        parser.error("--kb PATH_TO_A_KERNELBENCH_CLONE is required")
    try:
        clone = open_clone(ns.kb)
        problems = resolve(clone, parse_problems(ns.problems))
    except KbError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"KernelBench clone: {clone.described}; {len(problems)} problems", flush=True)
    rows: list[Row] = []
    import tempfile

    with tempfile.TemporaryDirectory(prefix="kw-bench-kb-") as scratch:
        for n, p in enumerate(problems, 1):
            row = Row(f"{p.level}/{p.name.removesuffix('.py')}")
            row.ours = our_check(p, ns.timeout)
            rows.append(row)
            # ours is written and shown before KernelBench's harness starts (84 to 110 s a
            # problem on the H100): a run cut short in it keeps our figures
            if ns.json:  # a run cut short keeps the problems it finished
                ns.json.write_text(json.dumps(_figures(clone, rows), indent=2))
            phases = ", ".join(
                f"{k} {v:.1f}" for k, v in (row.ours.get("phase_s") or {}).items() if v >= 0.05
            )
            print(
                f"[{n}/{len(problems)}] {row.problem}: ours {row.ours.get('verdict')} "
                f"{_x(row.ours.get('speedup'))} in {_s(row.ours.get('wall_s'))} s"
                + (f" ({phases})" if phases else "")
                + timing_line(row.ours.get("timing") or {})
                + start_line(row.ours.get("worker_start_s") or {})
                + command_line(row.ours.get("command_s") or {}),
                flush=True,
            )
            if not ns.no_theirs:
                build = Path(scratch) / f"{p.level}_{p.id}"
                build.mkdir()
                row.theirs = their_eval(clone, p, ns.timeout, build)
                if ns.json:
                    ns.json.write_text(json.dumps(_figures(clone, rows), indent=2))
                print(
                    f"[{n}/{len(problems)}] {row.problem}: KernelBench "
                    f"{row.theirs.get('verdict')} {_x(row.theirs.get('speedup'))} "
                    f"in {_s(row.theirs.get('wall_s'))} s",
                    flush=True,
                )
    print()
    print(table(rows))
    builds: list[dict[str, Any]] = []
    if not ns.no_builds:
        builds = load_inline_twice(ns.timeout)
        print("\nA load_inline candidate checked twice, the cache fresh before the first:")
        print(builds_line(builds))
    shown = ""
    if not ns.no_examples:
        shown = examples(ns.timeout)
        print("\nThe example CUDA tasks (bench_foundation --repeat 2 --no-load-inline):")
        print(shown)
    if ns.json:
        ns.json.write_text(json.dumps(_figures(clone, rows, builds, shown), indent=2))
    return 0


def _figures(
    clone: Clone, rows: Sequence[Row], builds: Sequence[Any] = (), shown: str = ""
) -> dict[str, Any]:
    return {
        "clone": clone.described,
        "rows": [asdict(r) for r in rows],
        "summary": summary(rows),
        "load_inline_twice": list(builds),
        "examples": shown,
    }


def rows_from(paths: Sequence[Path]) -> list[Row]:
    """The rows of several --json files (one run in parts), in order; a problem in more than
    one keeps its last."""
    rows: dict[str, Row] = {}
    for path in paths:
        for r in json.loads(path.read_text())["rows"]:
            rows[str(r["problem"])] = Row(str(r["problem"]), dict(r["ours"]), dict(r["theirs"]))
    return list(rows.values())


if __name__ == "__main__":
    sys.exit(main())
