"""One formatter per thing shown: an attempt, an event, a clipped line, the search's table."""

from __future__ import annotations

from rich.console import Console

from kernelwright.agent.formats import (
    attempt_line,
    attempt_text,
    clip,
    event_line,
    markdown_table,
    search_event_line,
)
from kernelwright.tools.results import Attempt


def _attempt(**kw: object) -> Attempt:
    fields: dict[str, object] = {
        "index": 3,
        "parent": 1,
        "tags": ("tiling",),
        "source": "",
        "verdict": "correct",
        "reason": "faster",
    }
    return Attempt.model_validate({**fields, **kw})


def test_clip_keeps_one_line_within_its_width() -> None:
    assert clip("a  b\n\tc", 10) == "a b c"
    assert clip("x" * 12, 10) == "x" * 9 + "…" and len(clip("x" * 12, 10)) == 10
    assert clip("a | b", 10, cell=True) == "a / b"  # a Markdown cell stays one cell
    assert clip("a | b", 10) == "a | b"


def test_an_attempt_reads_the_same_as_text_and_on_a_terminal() -> None:
    a = _attempt(speedup=1.4234, kept=True, reason="coalesced\n  the loads")
    assert attempt_line(a) == "#3 [tiling] correct 1.42x kept: coalesced the loads"
    console = Console(record=True, width=200, color_system="truecolor")
    console.print(attempt_text(a))
    assert console.export_text().strip() == attempt_line(a)
    styled = [s for s in attempt_text(a).spans if s.style == "green"]
    assert [attempt_line(a)[s.start : s.end] for s in styled] == ["kept"]


def test_brackets_in_a_reason_or_tags_print_as_they_are() -> None:
    # rich markup in a candidate's words must not be read as markup (nor vanish)
    a = _attempt(tags=("[bold]x[/]",), verdict="wrong", reason="[red]boom[/] at out[3]")
    console = Console(record=True, width=200)
    console.print(attempt_text(a))
    assert console.export_text().strip() == "#3 [[bold]x[/]] wrong: [red]boom[/] at out[3]"


def test_no_speed_and_not_kept_say_nothing_of_either() -> None:
    a = _attempt(verdict="compile_error", reason="error: x")
    assert attempt_line(a) == "#3 [tiling] compile_error: error: x"
    assert attempt_line(_attempt(tags=())).startswith("#3 [-] correct: ")


def test_a_long_reason_is_clipped_on_the_progress_line() -> None:
    line = attempt_line(_attempt(reason="y" * 500))
    assert line.endswith("…") and len(line.split(": ", 1)[1]) == 100


def test_events_and_search_events() -> None:
    a = _attempt()
    assert event_line({"node": "verify", "attempt": a}) == attempt_line(a)
    assert event_line({"node": "compile", "message": "compiling"}) == "compile: compiling"
    assert search_event_line({"node": "propose", "message": "search: x", "choice": 1}) == (
        "search: x"
    )
    assert search_event_line({"node": "propose", "message": "writing"}) is None


def test_a_markdown_table_keeps_its_cells() -> None:
    lines = markdown_table(["a", "b"], [["1 | 2", "x\ny"]])
    assert lines == ["| a | b |", "| --- | --- |", "| 1 / 2 | x y |"]


def test_an_error_stays_on_one_line_whatever_the_path_holds() -> None:
    from kernelwright.agent.formats import error_line, one_line

    assert one_line("a\nb\x85c\u2028d\te") == "a\\nb\\x85c\\u2028d\\te"
    assert one_line("été, ok [red]x[/]") == "été, ok [red]x[/]"  # printable text as it is
    line = error_line("missing/\npath: no such file").plain
    assert line == "error: missing/\\npath: no such file" and len(line.splitlines()) == 1


def test_every_line_made_of_a_runs_words_shows_control_characters_and_sends_none() -> None:
    """A reason, a tag, a node's message or a stored episode may hold what a model or a task
    wrote: its control characters are shown as escapes on every door's lines."""
    from types import SimpleNamespace

    from kernelwright.agent.formats import episode_line, event_line, printable, search_event_line

    osc = "\x1b]52;c;Zm9v\x1b\\"
    assert printable(f"a{osc}b\n\tc\x9b") == "a\\x1b]52;c;Zm9v\\x1b\\b\n\tc\\x9b"
    a = Attempt(index=1, parent=0, tags=(f"t{osc}",), source="", verdict="wrong", reason=osc)
    assert "\x1b" not in attempt_line(a) and "\\x1b]52" in attempt_line(a)
    assert "\x1b" not in event_line({"node": "reflect", "message": osc})
    assert "\x1b" not in (search_event_line({"choice": 1, "message": osc}) or "")
    e = SimpleNamespace(speedup=None, op_class=osc, bottleneck="", arch="", run_id="",
                        tags=(osc,), verdict="wrong")  # fmt: skip
    assert "\x1b" not in episode_line(e)
