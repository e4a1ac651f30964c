"""One formatter for each thing kernelwright shows a person: a clipped line, an attempt, a loop
event, a stored episode, the search's table. The run's summary.md, the command line, the batch,
chat and MCP all call these, so an attempt reads the same wherever it appears."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rich.table import Table
from rich.text import Text

from kernelwright.tools.results import Attempt

if TYPE_CHECKING:
    from kernelwright.agent.experience import TechniqueChoice
    from kernelwright.memory.reasoning import EdgeStats, ReasoningGraph

REASON_WIDTH = 100  # an attempt's reason on a progress line


# C0 and C1 control characters but newline and tab: ESC among them, which starts the
# terminal's own commands (OSC 52 writes the clipboard, CSI 2J clears the screen)
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """`text` with its control characters shown, not sent: what a door prints that came from
    the model, the memory, a task's files or a worker (a model's answer in chat had carried an
    OSC 52 clipboard write and a clear screen straight to the terminal, a review)."""
    return _CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def clip(text: str, width: int, *, cell: bool = False) -> str:
    """`text` on one line of at most `width` characters: runs of whitespace become one space,
    and a cut ends in "…". `cell`: for a Markdown table cell, where "|" would end the cell."""
    text = " ".join(text.split())
    if cell:
        text = text.replace("|", "/")
    return text if len(text) <= width else text[: width - 1] + "…"


def first_line(text: str) -> str:
    """The first line of `text`, its runs of spaces squeezed; "failed" for no text: a failure's
    reason, as a batch or an eval records it."""
    return " ".join(text.strip().splitlines()[0].split()) if text.strip() else "failed"


def one_line(text: str) -> str:
    """Text that stays on one line however a terminal reads it: line breaks and other
    characters that are not printable (in a path a user typed, say) are written as escapes."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)


def error_line(message: str) -> Text:
    """A command's refusal, as its one line on stderr: "error: " and what is wrong."""
    return Text.assemble(("error:", "red"), " ", one_line(message))


def tags(a: Attempt) -> str:
    return ", ".join(a.tags) or "-"


def outcome(a: Attempt) -> str:
    """What came of an attempt: "correct 1.42x kept", "wrong", "timeout"."""
    speed = f" {a.speedup:.2f}x" if a.speedup is not None else ""
    return f"{a.verdict}{speed}" + (" kept" if a.kept else "")


def attempt_text(a: Attempt, width: int = REASON_WIDTH) -> Text:
    """An attempt on one line, "#3 [tiling] correct 1.42x kept: why", "kept" in green. A rich
    Text, never parsed as markup: a reason with brackets in it prints as it is."""
    line = Text(printable(f"#{a.index} [{tags(a)}] {outcome(a)}: {clip(a.reason, width)}"))
    if a.kept:
        start = line.plain.index(": ") - len("kept")
        line.stylize("green", start, start + len("kept"))
    return line


def attempt_line(a: Attempt, width: int = REASON_WIDTH) -> str:
    return attempt_text(a, width).plain


def event_line(event: Mapping[str, Any]) -> str:
    """One line for any loop event: its attempt, or the node and its message."""
    attempt = event.get("attempt")
    if isinstance(attempt, Attempt):
        return attempt_line(attempt)
    return printable(f"{event.get('node', '')}: {event.get('message', '')}")


def search_event_line(event: Mapping[str, Any]) -> str | None:
    """The search's own events (a technique chosen, contrastive pairs found): the line to keep
    on screen for one, else None."""
    if "choice" in event or "pairs" in event:
        return printable(str(event.get("message", "")))
    return None


def episode_line(e: Any) -> str:
    """A stored attempt (memory.store.Episode) as a search result."""
    speed = f" {e.speedup:.2f}x" if e.speedup is not None else ""
    where = ", ".join(x for x in (e.op_class, e.bottleneck, e.arch, e.run_id) if x)
    return printable(f"[{', '.join(e.tags) or '-'}] {e.verdict}{speed} ({where})")


def _stats(visits: float, success: float, mean_log: float) -> str:
    return f"{visits:g}, {success:.0%}, {mean_log:+.3f}"


def search_rows(
    choices: Sequence[TechniqueChoice],
    attempts: Sequence[Attempt],
    graph: ReasoningGraph | None = None,
) -> tuple[list[str], list[list[str]]]:
    """The search's table: per candidate, the technique MCGS chose, for which bottleneck, from
    which techniques, the chosen edge's statistics (visits, success rate, mean log-speedup)
    when chosen and, with `graph`, now; what the candidate applied and what came of it."""
    header = ["#", "chose", "bottleneck", "kernel had", "when chosen"]
    header += ["now"] if graph is not None else []
    header += ["applied", "outcome"]
    by_index = {a.index: a for a in attempts}
    rows = []
    for c in choices:
        a = by_index.get(c.attempt)
        row = [str(c.attempt), c.tag, c.bottleneck, ", ".join(c.state) or "(original)"]
        row.append(_stats(c.visits, c.success_rate, c.mean_log_speedup))
        if graph is not None:
            now: EdgeStats | None = graph.peek(c.state, c.tag, c.bottleneck)
            row.append(_stats(now.visits, now.success_rate, now.mean_log_speedup) if now else "")
        row += [", ".join(a.tags) if a and a.tags else "-", outcome(a) if a else ""]
        rows.append(row)
    return header, rows


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    return lines + ["| " + " | ".join(clip(c, 200, cell=True) for c in row) + " |" for row in rows]


def search_table(output: Mapping[str, Any]) -> Table | None:
    """A finished run's search table for the terminal; None when the search chose nothing."""
    header, rows = search_rows(output.get("choices") or [], output.get("attempts") or [])
    if not rows:
        return None
    table = Table(title="The search's choices", title_justify="left")
    for name in header:
        table.add_column(name, justify="right" if name == "#" else "left")
    for row in rows:
        table.add_row(*(Text(cell) for cell in row))
    return table


def tune_outcome(data: Mapping[str, Any]) -> str:
    """What a tune came to, on one line (its result as agent.tune.Tuning.as_json gives it)."""
    if "error" in data:
        return f"not tuned: {data['error']}"
    counts = (
        f"{len(data['tried'])} checked, {len(data['dropped'])} dropped unchecked (same code and "
        f"launch, or no build), {data['left_unchecked']} not reached, {data['seconds']:.0f} s"
    )
    if data["improved"]:
        return f"{data['gain']:.3f}x over the kernel as given with {data['best']} ({counts})"
    return f"nothing beat the kernel as given by 2% with spreads apart ({counts})"


def tune_rows(data: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    """A tune's table: the kernel as given, then each configuration checked, in order, with
    its verdict, its speedup over the task's reference (± half its IQR), its gain over the
    kernel as given, and whether it became the best."""
    header = ["configuration", "verdict", "speedup", "gain", "kept"]
    start = data.get("start_speedup")
    rows = [[f"{data['start']} (as given)", "correct", f"{start:.3f}x" if start else "-", "", ""]]
    for t in data["tried"]:
        speed = t["speedup"]
        rows.append(
            [
                t["config"],
                t["verdict"] + (f": {clip(t['reason'], 60)}" if t["reason"] else ""),
                f"{speed:.3f}x ± {t['speedup_iqr'] / 2:.3f}" if speed else "-",
                f"{t['gain']:.3f}x" if t["gain"] else "-",
                "kept" if t["kept"] else "",
            ]
        )
    return header, rows


def tune_table(data: Mapping[str, Any], title: str) -> Table | None:
    """A tune's table for the terminal, "kept" in green; None when it was not tuned."""
    if "error" in data:
        return None
    header, rows = tune_rows(data)
    table = Table(title=title, title_justify="left")
    for name in header:
        table.add_column(name, justify="right" if name in ("speedup", "gain") else "left")
    for row in rows:
        table.add_row(*(Text(c, style="green" if c == "kept" else "") for c in row))
    return table
