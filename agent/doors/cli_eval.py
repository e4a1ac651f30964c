"""`kernelwright eval ...`: the evaluation suites. `eval adversarial` runs the cheating and broken
candidates the verifier must reject, and the controls it must pass, and prints what it said."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kernelwright.agent.formats import clip, error_line

eval_app = typer.Typer(name="eval", no_args_is_help=True, help="Run an evaluation suite.")
out = Console()
err = Console(stderr=True)


def _table(results: list[Any], title: str) -> Table:
    table = Table(title=title, show_lines=False, expand=False)
    for name, style in (
        ("case", "bold"),
        ("family", "dim"),
        ("expected", ""),
        ("got", ""),
        ("reason", ""),
        ("wall", "dim"),
    ):
        table.add_column(name, style=style, overflow="fold")
    for r in results:
        got = f"[green]{r.verdict}[/]" if r.ok else f"[red]{r.verdict}[/]"
        if r.speedup is not None and r.verdict == "correct":
            got += f" {r.speedup:.2f}x"
        expected = r.case.verdict + (f" ({escape(r.case.detail)})" if r.case.detail else "")
        reason = escape(clip(r.reason, 160))
        if not r.ok:
            reason += f"\n[red]MISMATCH: {escape(r.problem)}[/]"
        table.add_row(r.case.name, r.case.family, expected, got, reason, f"{r.wall_s:.1f} s")
    return table


@eval_app.command()
def adversarial(
    as_json: Annotated[bool, typer.Option("--json", help="Print the results as JSON.")] = False,
    only: Annotated[
        str | None,
        typer.Option(help="Only the cases whose name (family/file) matches this glob or text."),
    ] = None,
    repeat: Annotated[int, typer.Option(min=1, help="Run the suite this many times.")] = 1,
    list_cases: Annotated[
        bool, typer.Option("--list", help="List the cases and what each expects; run nothing.")
    ] = False,
    log: Annotated[
        Path | None,
        typer.Option(
            help="Append one JSON line per case to this file as each case ends (a long run "
            "that is cut short keeps what it did)."
        ),
    ] = None,
) -> None:
    """Run the adversarial suite on this GPU: every cheating or broken candidate must be rejected
    for the stated reason and every control must pass. Exit 1 on any mismatch."""
    from kernelwright.evals.adversarial import suite

    cases = suite.load_cases(only=only)
    if not cases:
        err.print(error_line(f"no case matches {only or ''!r}"), highlight=False)
        raise typer.Exit(2)
    if list_cases:
        _list(cases, as_json)
        return
    if not suite.examples_dir().is_dir():  # the cases' tasks are the repository's examples
        err.print(
            error_line(
                f"the suite's tasks live in {suite.examples_dir()}, which this install "
                "lacks: run it from a clone (pip install -e .)"
            ),
            highlight=False,
            soft_wrap=True,
        )
        raise typer.Exit(2)
    from kernelwright.tools import nvml

    nvml.device_info()  # no GPU: one line and exit 2 (the app's entry point prints it)
    runs = []
    for run in range(repeat):
        label = f"run {run + 1}/{repeat}" if repeat > 1 else "adversarial suite"
        start = time.perf_counter()
        with err.status(f"{label}: starting") as status:

            def progress(
                i: int,
                case: Any,
                result: Any,
                status: Any = status,
                label: str = label,
                run: int = run,
            ) -> None:
                if result is None:
                    status.update(f"{label}: {i + 1}/{len(cases)} {case.name}")
                    return
                if log is not None:
                    with log.open("a") as f:
                        f.write(json.dumps({"run": run + 1, **result.as_dict()}) + "\n")
                if not result.ok:
                    err.print(
                        f"  [red]mismatch[/] {case.name}: {escape(result.problem)} "
                        f"(got {result.verdict}: {escape(clip(result.reason, 160))})",
                        highlight=False,
                    )

            results = suite.run_suite(cases, progress=progress)
        wall = time.perf_counter() - start
        runs.append((results, wall))
        if not as_json:
            bad = sum(not r.ok for r in results)
            out.print(_table(results, label))
            out.print(
                f"{label}: {len(results)} cases, {len(results) - bad} as expected, "
                f"{bad} mismatched, {wall:.0f} s",
                highlight=False,
            )
    mismatches = sum(not r.ok for results, _ in runs for r in results)
    if as_json:
        print(
            json.dumps(
                {
                    "ok": mismatches == 0,
                    "mismatches": mismatches,
                    "runs": [
                        {"wall_s": round(wall, 1), "cases": [r.as_dict() for r in results]}
                        for results, wall in runs
                    ],
                },
                indent=2,
            )
        )
    raise typer.Exit(0 if mismatches == 0 else 1)


def _list(cases: list[Any], as_json: bool) -> None:
    if as_json:
        rows = [
            {
                "case": c.name,
                "family": c.family,
                "task": c.task,
                "expected": c.verdict,
                "expected_detail": c.detail,
                "description": c.description,
            }
            for c in cases
        ]
        print(json.dumps(rows, indent=2))
        return
    table = Table(title=f"{len(cases)} adversarial cases")
    for name in ("case", "task", "expected", "what it does"):
        table.add_column(name, overflow="fold")
    for c in cases:
        expected = c.verdict + (f" ({escape(c.detail)})" if c.detail else "")
        table.add_row(c.name, c.task, expected, escape(c.description))
    out.print(table)
