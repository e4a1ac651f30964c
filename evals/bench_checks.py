"""One-off `kernelwright check` wall time, for one or more code trees side by side (not a
timed test): before and after a change to the verifier, on the same machine in one run.

    python -m kernelwright.evals.bench_checks TASK[:CANDIDATE] [TASK[:CANDIDATE] ...]
        [--tree NAME=DIR ...] [--repeat 3] [--json FILE]

Each `--tree` is a directory that holds a `kernelwright` package (for instance an older commit
unpacked with `git archive`); without one, only the installed kernelwright is timed. The trees
take turns, repeat by repeat, so drift on the machine falls on all alike. Per pair and tree the
table prints the median wall of the whole command (start-up, workers, compile, trials, timing),
the check's own wall_ms from its JSON, its verdict and speedup. A TASK alone checks the task's
own reference against itself.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

CLI = "from kernelwright.agent.doors.cli import main; main()"
OLD_CLI = "from kernelwright.agent.cli import main; main()"  # trees before the ninth session


def cli_of(tree: Path | None) -> str:
    """The command line of a tree: in agent/doors/ now, in agent/ in older trees."""
    old = tree is not None and (tree / "kernelwright" / "agent" / "cli.py").is_file()
    return OLD_CLI if old else CLI


def one_check(
    task: str, candidate: str | None, tree: Path | None, timeout_s: float
) -> dict[str, Any]:
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tree), env.get("PYTHONPATH")]))
    t0 = time.perf_counter()
    try:
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                cli_of(tree),
                "check",
                task,
                *([candidate] if candidate else []),
                "--json",
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
    except subprocess.TimeoutExpired:
        return {"wall_ms": (time.perf_counter() - t0) * 1e3, "verdict": "timeout"}
    wall = (time.perf_counter() - t0) * 1e3
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"wall_ms": wall, "verdict": f"no JSON (exit {done.returncode}): {last[:200]}"}
    timing = report.get("timing") or {}
    return {
        "wall_ms": wall,
        "check_ms": report.get("wall_ms"),
        "verdict": report.get("verdict"),
        "speedup": timing.get("speedup"),
        "phase_ms": report.get("phase_ms"),
    }


def _median(xs: list[Any]) -> float:
    vals = [float(x) for x in xs if isinstance(x, int | float)]
    return statistics.median(vals) if vals else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pairs", nargs="+", help="TASK[:CANDIDATE] (a path each)")
    parser.add_argument("--tree", action="append", default=[], help="NAME=DIR holding kernelwright")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--json", type=Path)
    ns = parser.parse_args()
    trees: list[tuple[str, Path | None]] = [("installed", None)]
    for spec in ns.tree:
        name, sep, where = spec.partition("=")
        if not sep or not (Path(where) / "kernelwright").is_dir():
            parser.error(f"--tree {spec!r}: want NAME=DIR, DIR holding a kernelwright package")
        trees.append((name, Path(where).resolve()))
    pairs: list[tuple[str, str | None]] = []
    for pair in ns.pairs:
        task, _, cand = pair.partition(":")
        if not Path(task).is_file() or (cand and not Path(cand).is_file()):
            parser.error(f"{pair!r}: want TASK[:CANDIDATE], existing files")
        pairs.append((task, cand or None))
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in range(ns.repeat):
        for task, cand in pairs:
            for name, tree in trees if r % 2 == 0 else trees[::-1]:
                got = one_check(task, cand, tree, ns.timeout)
                label = Path(task).name + (f":{Path(cand).name}" if cand else " (itself)")
                runs.setdefault((label, name), []).append(got)
                speed = got.get("speedup")
                print(
                    f"[{r + 1}/{ns.repeat}] {name} {label}: {got['verdict']} "
                    f"{got['wall_ms']:.0f} ms"
                    + (f" {speed:.3f}x" if isinstance(speed, int | float) else ""),
                    flush=True,
                )
    rows: list[dict[str, Any]] = [
        {
            "pair": pair,
            "tree": name,
            "wall_ms": _median([g["wall_ms"] for g in got]),
            "check_ms": _median([g.get("check_ms") for g in got]),
            "speedup": _median([g.get("speedup") for g in got]),
            "verdicts": sorted({str(g["verdict"]) for g in got}),
            "runs": got,
        }
        for (pair, name), got in runs.items()
    ]
    first = {row["pair"]: row["wall_ms"] for row in rows if row["tree"] == "installed"}
    for row in rows:  # each tree's wall against the installed kernelwright's, on the same pair
        row["wall_vs_installed"] = row["wall_ms"] / first[row["pair"]]
    if ns.json:
        ns.json.write_text(json.dumps(rows, indent=2))
    print()
    print(
        f"{'pair':<48} {'tree':<10} {'wall ms':>8} {'vs inst':>8} {'check ms':>9} "
        f"{'speedup':>8}  verdicts"
    )
    for row in rows:
        print(
            f"{row['pair'][:48]:<48} {row['tree']:<10} {row['wall_ms']:>8.0f} "
            f"{row['wall_vs_installed']:>7.2f}x {row['check_ms']:>9.0f} "
            f"{row['speedup']:>7.3f}x  {', '.join(row['verdicts'])}"
        )
    print(
        f"medians of {ns.repeat}; wall: the whole command; vs inst: its wall over the installed "
        "kernelwright's on the same pair; check: the check's own wall_ms"
    )


if __name__ == "__main__":
    main()
