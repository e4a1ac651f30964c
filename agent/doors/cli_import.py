"""`kernelwright import pareval PATH [--out DIR] [--check] [--json]`: other benchmarks' problems
as kernelwright tasks. `pareval` turns a clone of ParEval (its serial prompts, baseline.hpp
solutions and problem sizes) into cpp tasks, one directory each, and lists the problems it
skipped with the reason (a struct or string argument, a driver it does not follow); `--check`
then runs each task's C++ reference on the CPU at its check sizes.

Errors (a path that is not a clone, a missing compiler) are one line on stderr and exit code 2;
a reference that fails under --check is exit code 1."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kernelwright.agent.formats import error_line
from kernelwright.tools.errors import KernelwrightError

import_app = typer.Typer(
    name="import",
    no_args_is_help=True,
    help="Turn other benchmarks' problems into kernelwright tasks.",
)
out = Console()
err = Console(stderr=True)


def _fail(exc: KernelwrightError) -> typer.Exit:
    err.print(error_line(str(exc)), highlight=False, soft_wrap=True)
    return typer.Exit(2)


def _check(tomls: list[tuple[str, Path]], cache_dir: Path) -> dict[str, str]:
    """Each task's reference at its check sizes: "" where it ran, else the one-line error."""
    from kernelwright.tools.cpp import load_cpp_task
    from kernelwright.tools.cpp_reference import ReferenceTrial, reference_outputs

    failed: dict[str, str] = {}
    with err.status("running the C++ references...") as status:
        for i, (name, toml) in enumerate(tomls):
            status.update(f"running the C++ references ({i + 1}/{len(tomls)}): {name}")
            try:
                task = load_cpp_task(toml)
                trials = [ReferenceTrial(dict(s), 1) for s in task.checks]
                reference_outputs(task, trials, cache_dir)
                failed[name] = ""
            except KernelwrightError as exc:
                failed[name] = str(exc)
    return failed


@import_app.command()
def pareval(
    path: Annotated[Path, typer.Argument(help="A clone of ParEval (its root directory).")],
    out_dir: Annotated[
        Path, typer.Option("--out", help="Where to write the tasks, one directory each.")
    ] = Path("pareval-tasks"),
    check: Annotated[
        bool,
        typer.Option(
            "--check", help="Run each task's C++ reference on the CPU at its check sizes."
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Convert ParEval's serial problems into cpp tasks (name.cpp + name.toml).

    Problems with struct or string arguments are skipped and listed with the reason."""
    from kernelwright.tools.cpp_pareval import convert

    try:
        report = convert(path, out_dir)
    except KernelwrightError as exc:
        raise _fail(exc) from None
    checked: dict[str, str] = {}
    if check and report.converted:
        from kernelwright.agent.settings import load

        try:
            cache_dir = load().cache_dir / "cpp"
        except KernelwrightError as exc:
            raise _fail(exc) from None
        checked = _check([(c.name, c.toml) for c in report.converted], cache_dir)
    total = len(report.converted) + len(report.skipped)
    if as_json:
        data: dict[str, Any] = {
            "converted": [
                {
                    "name": c.name,
                    "toml": str(c.toml),
                    **({"check": checked[c.name] or "ok"} if checked else {}),
                }
                for c in report.converted
            ],
            "skipped": [{"name": s.name, "reason": s.reason} for s in report.skipped],
        }
        print(json.dumps(data, indent=2))
    else:
        out.print(
            f"{len(report.converted)} of {total} problems converted into {escape(str(out_dir))}",
            highlight=False,
        )
        if report.skipped:
            table = Table(title="skipped", show_lines=False)
            table.add_column("problem", style="bold", no_wrap=True)
            table.add_column("reason", overflow="fold")
            for s in report.skipped:
                table.add_row(escape(s.name), escape(s.reason))
            out.print(table)
        if checked:
            bad = {k: v for k, v in checked.items() if v}
            out.print(f"{len(checked) - len(bad)} of {len(checked)} references ran on the CPU")
            for name, why in bad.items():
                out.print(f"[red]{escape(name)}[/]: {escape(why)}", highlight=False)
    if any(checked.values()):
        raise typer.Exit(1)
