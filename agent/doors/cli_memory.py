"""`kernelwright memory stats | search QUERY | examples [TECHNIQUE] | export FILE | import FILE |
delete ID... | prune`: what this machine has learned (and the worked examples a prompt may show),
moving it between machines (JSON Lines), and forgetting some of it. Also how `optimize` shows
the search.

Errors (bad settings, a missing or malformed file, an unreachable server) are one line on
stderr and exit code 2. A stored record that is not valid (an older version's import let it
in) is skipped with one warning line on stderr; `memory prune --invalid` removes it.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import date
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kernelwright.agent.formats import error_line
from kernelwright.tools.errors import KernelwrightError

memory_app = typer.Typer(
    name="memory",
    no_args_is_help=True,
    help="What this machine has learned: stats, search, examples, export, import, delete, prune.",
)
out = Console()
err = Console(stderr=True)
JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON.")]


@contextmanager
def _one_line_errors() -> Iterator[None]:
    try:
        yield
    except KernelwrightError as exc:
        err.print(error_line(str(exc)), highlight=False, soft_wrap=True)
        raise typer.Exit(2) from None


def _finite(value: Any) -> Any:
    """`value` with every number that is not finite made null, so that JSON stays standard."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def _print_json(value: Any) -> None:
    print(json.dumps(_finite(value), indent=2, allow_nan=False))


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _warn(text: str) -> None:
    err.print("[yellow]warning:[/] " + escape(text), highlight=False, soft_wrap=True)


def _warn_skipped(store: Any) -> None:
    """One line for the stored records the command skipped because they are not valid."""
    bad: dict[str, str] = getattr(store, "skipped", {})
    if not bad:
        return
    first = next(iter(bad.values()))
    more = f"; {len(bad) - 1} more" if len(bad) > 1 else ""
    _warn(
        f"skipped {_plural(len(bad), 'stored attempt')} that {'is' if len(bad) == 1 else 'are'} "
        f"not valid ({first}{more}); `kernelwright memory prune --invalid` removes them"
    )


def _warn_dropped(saved: Any) -> None:
    if saved.dropped:
        _warn(
            f"{saved.path}: left out {_plural(saved.dropped, 'edge')} whose statistics are not "
            "finite numbers (an older import); the next update of the graph drops them"
        )


@contextmanager
def _opened(write: bool = False) -> Iterator[tuple[Any, Any]]:
    """The store and the saved reasoning graph the settings name. A command that only reads
    (or finds nothing to write) leaves no memory directory behind where there was none: it
    sees an empty memory instead."""
    from kernelwright.agent.experience import embedding_for, open_store
    from kernelwright.agent.settings import load
    from kernelwright.memory.graph_file import SavedGraph
    from kernelwright.memory.store import ChromaStore

    settings = load()
    saved = SavedGraph.in_dir(settings.memory_dir)
    if not write and settings.memory.url is None and not settings.memory_dir.exists():
        store = ChromaStore.open(None, None, embedding_for(settings))
    else:
        store = open_store(settings)
    with store:  # let go however the command ends
        yield store, saved


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

    with _one_line_errors(), _opened() as (store, saved):
        s = store.stats()
    _warn_skipped(store)
    _warn_dropped(saved)
    learned = by_technique(saved.graph)
    if as_json:
        search = [
            {"technique": tag, "bottleneck": b, "attempts": e.attempts, "successes": e.successes}
            | {"mean_log_speedup": e.sum_log_speedup / e.attempts}
            for (tag, b), e in sorted(learned.items())
        ]
        _print_json({**s.model_dump(), "search": search, "graph": str(saved.path)})
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
        with _opened() as (store, _):
            hits = store.search(text, n=limit)
    _warn_skipped(store)
    if as_json:
        _print_json([h.model_dump(mode="json") for h in hits])
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


@memory_app.command()
def examples(
    technique: Annotated[
        str | None, typer.Argument(help="Only this technique (its tag, or its name).")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """The worked examples a propose prompt may show for a technique: the verified steps in this
    memory (before and after, with the gain measured), then the shipped ones."""
    from kernelwright.memory.shipped import shipped
    from kernelwright.memory.techniques import resolve
    from kernelwright.memory.worked import every_stored

    with _one_line_errors():
        tag = resolve(technique) if technique is not None else None
        if technique is not None and tag is None:
            raise KernelwrightError(f"examples: no technique {technique!r} in the catalogue")
        with _opened() as (store, _):
            found = [e for e in (*every_stored(store), *shipped()) if tag in (None, e.technique)]
    _warn_skipped(store)
    if as_json:
        rows = [
            e.model_dump(exclude={"before", "after"})
            | {"before": e.before.source, "after": e.after.source}
            for e in found
        ]
        _print_json(rows)
        return
    table = Table()
    for name in ("technique", "from", "task", "speedup", "measured on", "id"):
        table.add_column(name, justify="right" if name == "speedup" else "left")
    for e in sorted(found, key=lambda e: (e.technique, e.origin, -(e.speedup or 0.0))):
        where = (e.gpu or e.arch) if e.measured else "not measured"
        table.add_row(
            e.technique, e.origin, escape(e.task_signature), _speed(e.speedup), where, escape(e.id)
        )
    out.print(table)


@memory_app.command("export")
def export(file: Annotated[Path, typer.Argument(help="The JSON Lines file to write.")]) -> None:
    """Write every stored attempt to FILE, one JSON object per line.

    A record that is not valid (an older version's import let it in) is left out, with a warning.
    """
    with _one_line_errors():
        if not file.parent.is_dir():
            raise KernelwrightError(f"{file}: directory {file.parent} does not exist")
        with _opened() as (store, _):
            try:
                n = store.export_jsonl(file)
            except OSError as exc:
                raise KernelwrightError(f"{file}: cannot write: {exc.strerror}") from None
    _warn_skipped(store)
    out.print(f"exported {n} attempts to {file}", highlight=False, soft_wrap=True)


@memory_app.command("import")
def import_(file: Annotated[Path, typer.Argument(help="A file `memory export` wrote.")]) -> None:
    """Add the attempts in FILE that this memory lacks; the search learns from them too.

    Every record is checked first (types, finite numbers, the fields every version writes):
    one bad record and nothing is imported."""
    from kernelwright.memory.export_file import MemoryFileError, read_export

    with _one_line_errors():
        try:  # every record checked before a store is even opened: a refused file makes none
            rows = read_export(file)
        except MemoryFileError as exc:
            raise KernelwrightError(f"import {exc}") from None
        with _opened(write=True) as (store, saved):
            try:
                added = store.import_rows(rows, str(file))
            except MemoryFileError as exc:
                raise KernelwrightError(f"import {exc}") from None
            try:
                learned = saved.learn_episodes(added)
            except BaseException:
                store.delete([e.id for e in added])  # all or nothing: the store too
                raise
    out.print(
        f"imported {len(added)} new attempts from {file}; the reasoning graph learned from "
        f"{learned} of them",
        highlight=False,
        soft_wrap=True,
    )


def _interactive() -> bool:
    """Whether someone can answer a question (stdin is a terminal)."""
    return sys.stdin.isatty()


def _deleted(
    saved: Any, ids: Sequence[str], as_json: bool, extra: Mapping[str, Any] | None = None
) -> None:
    """Rewrites the reasoning graph without non-finite rows, then reports what went."""
    dropped = saved.clean()
    if as_json:
        _print_json({"deleted": list(ids), **(extra or {}), "graph_edges_dropped": dropped})
        return
    out.print(f"deleted {_plural(len(ids), 'stored attempt')}", highlight=False)
    if dropped:
        out.print(
            f"dropped {_plural(dropped, 'edge')} whose statistics were not finite numbers from "
            f"the reasoning graph {saved.path}",
            highlight=False,
            soft_wrap=True,
        )


@memory_app.command()
def delete(
    ids: Annotated[
        list[str], typer.Argument(metavar="ID", help="RUN:INDEX, as `memory search` shows.")
    ],
    as_json: JsonFlag = False,
) -> None:
    """Delete the stored attempts with these ids: all of them, or none when one is unknown.

    The reasoning graph keeps what it learned from them (its statistics are sums over attempts,
    and which edges each attempt updated is not stored); statistics in it that are not finite
    numbers are dropped.
    """
    wanted = list(dict.fromkeys(ids))
    with _one_line_errors(), _opened() as (store, saved):
        have = store.existing(wanted)
        unknown = [i for i in wanted if i not in have]
        if unknown:
            raise KernelwrightError(f"delete: no stored attempt {unknown[0]}; nothing deleted")
        store.delete(wanted)
        _deleted(saved, wanted, as_json)


def _day(text: str) -> date:
    try:
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
            return date.fromisoformat(text)
    except ValueError:
        pass
    raise KernelwrightError(f"prune: --before takes a date as YYYY-MM-DD, not {text!r}")


@memory_app.command()
def prune(
    run: Annotated[
        str | None, typer.Option("--run", help="Of this run (its id, as `memory search` shows).")
    ] = None,
    task: Annotated[
        str | None,
        typer.Option(
            "--task",
            help="On this task: its signature as `memory stats` lists it, or the name before "
            "its parenthesis.",
        ),
    ] = None,
    before: Annotated[
        str | None,
        typer.Option(
            "--before",
            metavar="YYYY-MM-DD",
            help="Of runs begun before this day (the date in the run id, TASK-YYYYmmdd-HHMMSS; "
            "attempts without one are kept).",
        ),
    ] = None,
    invalid: Annotated[
        bool, typer.Option("--invalid", help="Not valid (an older version's import let them in).")
    ] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Delete without asking.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Delete the stored attempts that match every filter given (at least one is needed).

    Without --yes it says how many would go and asks, or stops when stdin is not a terminal.
    The reasoning graph keeps what it learned from them, as with `memory delete`.
    """
    with _one_line_errors():
        if run is None and task is None and before is None and not invalid:
            raise KernelwrightError(
                "prune: name what to delete with --run, --task, --before or --invalid; "
                "nothing deleted"
            )
        day = _day(before) if before is not None else None
        with _opened() as (store, saved):
            ids, undated = store.matching(run=run, task=task, before=day, invalid=invalid)
            note = (
                f"kept {_plural(undated, 'stored attempt')} whose run id has no date"
                if undated
                else ""
            )
            nothing = {"deleted": [], "undated_kept": undated, "graph_edges_dropped": 0}
            if not ids:
                if as_json:
                    _print_json(nothing)
                else:
                    out.print("no stored attempts match; nothing deleted", highlight=False)
                    if note:
                        out.print(note, highlight=False)
                return
            if not yes:
                (err if as_json else out).print(
                    f"{_plural(len(ids), 'stored attempt')} would be deleted", highlight=False
                )
                if not _interactive():
                    raise KernelwrightError(
                        "prune: not deleting without --yes (stdin is not a terminal); "
                        "nothing deleted"
                    )
                if not typer.confirm("Delete them?", default=False, err=as_json):
                    if as_json:
                        _print_json(nothing)
                    else:
                        out.print("nothing deleted", highlight=False)
                    return
            store.delete(ids)
            _deleted(saved, ids, as_json, {"undated_kept": undated} if before is not None else None)
    if note and not as_json:
        out.print(note, highlight=False)
