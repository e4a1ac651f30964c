"""`kernelwright eval pareval`'s parts beside the batch it runs: the clone's problems imported
as cpp tasks into OUT/problems (with their ParEval problem types, for the table), and the
ParEval figures (pareval_score.py) read back from the batch's task reports in OUT/batch."""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

from kernelwright.evals.pareval_score import Outcome, Sample, by_type
from kernelwright.tools.errors import KernelwrightError

IMPORTED = "pareval-import.json"
PROBLEMS, BATCH = "problems", "batch"


def prepare(clone: Path, out: Path, names: list[str] | None = None) -> dict[str, Any]:
    """The clone's problems that convert (those in `names` where given) as tasks under
    OUT/problems, and OUT/pareval-import.json: each one's type, and what was skipped and why.
    KernelwrightError for a path that is not a clone, an unknown name, or nothing to run."""
    from kernelwright.tools.cpp_pareval import convert

    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="kw-pareval-", dir=out) as staging:
        report = convert(clone, Path(staging))
        known = {c.name: c for c in report.converted}
        skipped = {s.name: s.reason for s in report.skipped}
        if names:
            unknown = [n for n in names if n not in known]
            if unknown:
                why = "; ".join(
                    f"{n}: skipped ({skipped[n]})" if n in skipped else f"{n}: no such problem"
                    for n in unknown
                )
                raise KernelwrightError(f"--problems: {why}")
        chosen = [known[n] for n in names] if names else list(known.values())
        if not chosen:
            raise KernelwrightError(f"{clone}: no ParEval problem converts into a cpp task")
        dest = out / PROBLEMS
        dest.mkdir()
        for c in chosen:
            shutil.move(str(c.toml.parent), dest / c.name)
    data = {
        "clone": str(Path(clone).resolve()),
        "problems": [{"name": c.name, "type": c.type} for c in chosen],
        "skipped": [{"name": s.name, "reason": s.reason} for s in report.skipped],
    }
    (out / IMPORTED).write_text(json.dumps(data, indent=2))
    return data


def imported(out: Path) -> dict[str, Any] | None:
    path = out / IMPORTED
    return json.loads(path.read_text()) if path.is_file() else None


def outcomes(out: Path) -> list[Outcome]:
    """Each imported problem's samples, the kernels its run checked, from the batch's task
    reports (a problem whose run never started has none: it counts as failed)."""
    data = imported(out) or {"problems": []}
    reports: dict[str, dict[str, Any]] = {}
    for path in sorted((out / BATCH / "tasks").glob("*.json")):
        r = json.loads(path.read_text())
        reports[Path(str(r.get("path", ""))).stem] = r
    got = []
    for p in data["problems"]:
        attempts = (reports.get(p["name"]) or {}).get("attempts") or []
        samples = tuple(Sample(str(a.get("verdict")), a.get("speedup")) for a in attempts)
        got.append(Outcome(p["name"], p["type"], samples))
    return got


def _cell(x: float | None, pct: bool = False) -> str:
    if x is None:
        return "-"
    return f"{x:.0%}" if pct else f"{x:.2f}x"


def table_rows(table: dict[str, Any]) -> list[list[str]]:
    """The summary's rows: type, problems, kernels, build@1, pass@1, speedup@1, pass@n,
    speedup@n."""
    return [
        [
            name,
            str(f.problems),
            str(f.samples),
            _cell(f.build_at_1, True),
            _cell(f.pass_at_1, True),
            _cell(f.speedup_at_1),
            _cell(f.pass_at_n, True),
            _cell(f.speedup_at_n),
        ]
        for name, f in table.items()
    ]


HEAD = ["type", "problems", "kernels", "build@1", "pass@1", "speedup@1", "pass@n", "speedup@n"]


def write(out: Path) -> tuple[dict[str, Any], list[list[str]]]:
    """pareval.json and pareval.md in OUT: the figures per type and over all, and each
    problem's samples. Returns what pareval.json holds and the summary's rows."""
    got = outcomes(out)
    table = by_type(got)
    rows = table_rows(table)
    data = {
        "clone": (imported(out) or {}).get("clone", ""),
        "figures": {name: asdict(f) for name, f in table.items()},
        "problems": [
            {"name": o.name, "type": o.type, "samples": [asdict(s) for s in o.samples]} for o in got
        ],
        "note": "a sample is a kernel the loop checked; speedups are against the C++ "
        "function on one core (g++ -O3), kernel time only; @n is the run's own result",
    }
    (out / "pareval.json").write_text(json.dumps(data, indent=2))
    lines = [
        "# ParEval, run through kernelwright's loop",
        "",
        f"Clone: {data['clone']}. {data['note']}.",
        "",
        "| " + " | ".join(HEAD) + " |",
        "|" + " --- |" * len(HEAD),
        *("| " + " | ".join(row) + " |" for row in rows),
        "",
    ]
    (out / "pareval.md").write_text("\n".join(lines))
    return data, rows
