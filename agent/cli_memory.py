"""`kernelwright memory stats | search QUERY | export FILE | import FILE`: what this machine has
learned, and moving it between machines (JSON Lines). Also how `optimize` shows the search.

Errors (bad settings, a missing or malformed file, an unreachable server) are one line on
stderr and exit code 2.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kernelwright.tools.errors import KernelwrightError

memory_app = typer.Typer(
    name="memory",
    no_args_is_help=True,
    help="What this machine has learned: stats, search, export, import.",
)
out = Console()
err = Console(stderr=True)
JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON.")]


@contextmanager
def _one_line_errors() -> Iterator[None]:
    try:
        yield
    except KernelwrightError as exc:
        err.print("[red]error:[/] " + escape(str(exc)), highlight=False, soft_wrap=True)
        raise typer.Exit(2) from None


def _open() -> tuple[Any, Any]:
    """The store and the saved reasoning graph the settings name."""
    from kernelwright.agent.experience import open_store
    from kernelwright.agent.settings import load
    from kernelwright.memory.graph_file import SavedGraph

    settings = load()
    return open_store(settings), SavedGraph.in_dir(settings.memory_dir)


def _speed(value: float | None) -> str:
    return f"{value:.2f}x" if value is not None else "-"


def _rate(part: int, whole: int) -> str:
    return f"{part / whole:.0%}" if whole else "-"


def _tally_table(title: str, first: str, rows: Mapping[str, Any]) -> Table:
    table = Table(title=title, title_justify="left")
    for name in (first, "attempts", "correct", "mean speedup", "best"):
        table.add_column(name, justify="left" if name == first else "right")
    ordered = sorted(rows.items(), key=lambda kv: (-kv[1].count, kv[0]))
    for key, s in ordered:
        table.add_row(
            escape(key or "-"),
            str(s.count),
            _rate(s.correct, s.count),
            _speed(s.mean_speedup),
            _speed(s.best_speedup),
        )
    return table


@memory_app.command()
def stats(as_json: JsonFlag = False) -> None:
    """Attempts, tasks, and what worked: per technique, per bottleneck, and the search's graph."""
    from kernelwright.memory.graph_file import by_technique

    with _one_line_errors():
        store, saved = _open()
        s = store.stats()
    learned = by_technique(saved.graph)
    if as_json:
        search = [
            {"technique": tag, "bottleneck": b, "attempts": e.attempts, "successes": e.successes}
            | {"mean_log_speedup": e.sum_log_speedup / e.attempts}
            for (tag, b), e in sorted(learned.items())
        ]
        print(json.dumps({**s.model_dump(), "search": search, "graph": str(saved.path)}, indent=2))
        return
    verdicts = ", ".join(f"{v} {n}" for v, n in sorted(s.by_verdict.items(), key=lambda x: -x[1]))
    out.print(
        f"[bold]{s.total}[/] attempts on {len(s.by_task)} task{'' if len(s.by_task) == 1 else 's'}"
        + (f" ({verdicts})" if verdicts else "")
        + f"; GPUs: {', '.join(f'{a} {n}' for a, n in sorted(s.by_arch.items())) or 'none yet'}",
        highlight=False,
    )
    if not s.total and not learned:
        out.print("nothing learned yet: run `kernelwright optimize TASK`", highlight=False)
        return
    out.print(_tally_table("Techniques the attempts named", "technique", s.by_tag))
    out.print(_tally_table("Bottlenecks", "bottleneck", s.by_bottleneck))
    out.print(_tally_table("Tasks", "task", s.by_task))
    table = Table(
        title="The search's statistics (reasoning graph, summed over states; prior not counted)",
        title_justify="left",
    )
    for name in ("technique", "bottleneck", "visits", "success rate", "mean log-speedup"):
        table.add_column(name, justify="left" if name in ("technique", "bottleneck") else "right")
    for (tag, bottleneck), e in sorted(learned.items(), key=lambda kv: -kv[1].mean_log_speedup):
        table.add_row(
            tag,
            bottleneck,
            str(e.attempts),
            _rate(e.successes, e.attempts),
            f"{e.sum_log_speedup / e.attempts:+.3f}",
        )
    out.print(table)
    out.print(f"graph: {saved.path}", highlight=False, soft_wrap=True)


def _file_or_text(query: str) -> str:
    """The contents of the file QUERY names, else QUERY itself (CUDA source or words)."""
    try:
        return Path(query).read_text() if Path(query).is_file() else query
    except (OSError, UnicodeDecodeError):  # a name too long for a path, a binary file
        return query


@memory_app.command()
def search(
    query: Annotated[str, typer.Argument(help="CUDA source, or a file that holds it.")],
    limit: Annotated[int, typer.Option("-n", "--limit", min=1, help="How many.")] = 5,
    as_json: JsonFlag = False,
) -> None:
    """The stored attempts nearest to QUERY (by the memory's embedding)."""
    with _one_line_errors():
        text = _file_or_text(query)
        store, _ = _open()
        hits = store.search(text, n=limit)
    if as_json:
        print(json.dumps([h.model_dump(mode="json") for h in hits], indent=2))
        return
    if not hits:
        out.print("no stored attempts yet", highlight=False)
        return
    table = Table()
    for name in ("id", "task", "bottleneck", "technique", "tags", "verdict", "speedup", "distance"):
        table.add_column(name, justify="right" if name in ("speedup", "distance") else "left")
    for h in hits:
        table.add_row(
            escape(h.id),
            escape(h.task_signature),
            h.bottleneck,
            h.technique or "-",
            escape(", ".join(h.tags)) or "-",
            h.verdict,
            _speed(h.speedup),
            f"{max(h.distance, 0.0):.3f}" if h.distance is not None else "",
        )
    out.print(table)


@memory_app.command("export")
def export(file: Annotated[Path, typer.Argument(help="The JSON Lines file to write.")]) -> None:
    """Write every stored attempt to FILE, one JSON object per line."""
    with _one_line_errors():
        if not file.parent.is_dir():
            raise KernelwrightError(f"{file}: directory {file.parent} does not exist")
        store, _ = _open()
        try:
            n = store.export_jsonl(file)
        except OSError as exc:
            raise KernelwrightError(f"{file}: cannot write: {exc.strerror}") from None
    out.print(f"exported {n} attempts to {file}", highlight=False, soft_wrap=True)


@memory_app.command("import")
def import_(file: Annotated[Path, typer.Argument(help="A file `memory export` wrote.")]) -> None:
    """Add the attempts in FILE that this memory lacks; the search learns from them too."""
    with _one_line_errors():
        store, saved = _open()
        added = store.import_jsonl(file)
        learned = saved.learn_episodes(added)
    out.print(
        f"imported {len(added)} new attempts from {file}; the reasoning graph learned from "
        f"{learned} of them",
        highlight=False,
        soft_wrap=True,
    )


# --- how `kernelwright optimize` shows the search ---


def progress_line(event: Mapping[str, object]) -> str | None:
    """The line to keep on screen for a progress event from the memory, else None."""
    if "choice" in event or "pairs" in event:
        return "  " + escape(str(event.get("message", "")))
    return None


def search_report(output: Mapping[str, Any]) -> Table | None:
    """The final report's table: each candidate's technique as the search chose it, the
    edge's statistics then, what the candidate applied, and how it turned out."""
    choices, attempts = output.get("choices") or [], output.get("attempts") or []
    if not choices:
        return None
    by_index = {a.index: a for a in attempts}
    table = Table(title="The search's choices", title_justify="left")
    for name in ("#", "chose", "bottleneck", "visits", "success", "mean log-speedup"):
        table.add_column(name, justify="left" if name in ("chose", "bottleneck") else "right")
    table.add_column("applied")
    table.add_column("outcome")
    for c in choices:
        a = by_index.get(c.attempt)
        speed = f" {a.speedup:.2f}x" if a and a.speedup is not None else ""
        table.add_row(
            str(c.attempt),
            c.tag,
            c.bottleneck,
            f"{c.visits:g}",
            f"{c.success_rate:.0%}",
            f"{c.mean_log_speedup:+.3f}",
            escape(", ".join(a.tags)) if a and a.tags else "-",
            (f"{a.verdict}{speed}" + (" kept" if a.kept else "")) if a else "",
        )
    return table
