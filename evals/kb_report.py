"""`eval kernelbench`'s report, from its state file (a resumed run reports the same):
kernelbench.json (everything), summary.md, report.html (one self-contained page, its plots
inlined as PNGs) and KernelBench's own files (kb_format.py).

The scores (kb_score.py) are per level and over all levels, against eager and against
torch.compile. Against eager every evaluated problem counts; against torch.compile, the ones
whose torch.compile baseline was timed (as KernelBench's analysis counts only the problems its
baseline file has).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter
from matplotlib.transforms import blended_transform_factory

from kernelwright.agent.doors.batch_plots import BLUE, GREEN, GREY, RED, empty, png
from kernelwright.agent.formats import clip

from . import kb_format
from .kb_baselines import TimingStats
from .kb_run import KbState, ProblemResult, result_row
from .kb_score import FAST_P, Score, fast_label, score

AMBER = "#d68910"
SIZES = (
    "each problem's own (its module-level constants, per problem in results.jsonl); "
    "the verifier's held-out correctness trials also vary batch_size"
)
BASELINE_NAMES = {"eager": "eager", "compile": "torch.compile"}


def tolerance_text() -> str:
    """The verifier's tolerance for KernelBench outputs, from the code that applies it."""
    from kernelwright.tools.judge import kernelbench_tolerance

    a32, r32 = kernelbench_tolerance("float32")
    a16, r16 = kernelbench_tolerance("float16")
    return (
        f"|got - expected| <= atol + rtol * |expected| per element against PyTorch eager: "
        f"atol {a32:g}, rtol {r32:g} for float32 outputs; atol {a16:g}, rtol {r16:g} for float16"
    )


def members(problems: list[ProblemResult], baseline: str) -> list[ProblemResult]:
    """The problems scored against a baseline: every evaluated one against eager; against
    torch.compile, those whose compile baseline was timed."""
    scored = [p for p in problems if p.scored]
    if baseline == "compile":
        return [p for p in scored if p.compile_factor is not None]
    return scored


def _speedup(p: ProblemResult, baseline: str) -> float | None:
    if not p.correct:
        return None
    return p.speedup_compile if baseline == "compile" else p.speedup_eager


def scores(problems: list[ProblemResult], baseline: str, levels: list[int]) -> dict[str, Score]:
    """Per level ("1", "2", ...) and over all ("all"): the scores against a baseline."""
    group = members(problems, baseline)
    out: dict[str, Score] = {}
    for key, chosen in [
        *((str(lv), [p for p in group if p.level == lv]) for lv in levels),
        ("all", group),
    ]:
        out[key] = score([_speedup(p, baseline) for p in chosen], [p.compiled for p in chosen])
    return out


def _first(notes: list[str]) -> str:
    return next((n for n in notes if n), "")


def summary(state: KbState, out: Path, files: dict[str, Any] | None = None) -> dict[str, Any]:
    """kernelbench.json's data (pure, but for the clock)."""
    problems = state.problems
    scored = [p for p in problems if p.scored]
    baselines: dict[str, Any] = {}
    all_scores: dict[str, Any] = {}
    for name in state.baselines:
        group = members(problems, name)
        note = "" if group else _first([p.compile_note for p in problems]) or "not timed"
        baselines[name] = {
            "problems": len(group),
            "how": (
                "the verifier's reference: the problem's own Model in the same check"
                if name == "eager"
                else "the baseline timer's compile/eager ratio times the verifier's eager"
            ),
            "note": note,
        }
        all_scores[name] = (
            {k: s.as_dict() for k, s in scores(problems, name, state.levels).items()}
            if group
            else None
        )
    retimed = [p for p in problems if p.kb_speedup is not None]
    return {
        "kb": state.kb,
        "commit": state.commit,
        "modified": state.modified,
        "levels": state.levels,
        "subset": state.subset,
        "mode": state.mode,
        "candidates": state.candidates,
        "proposals_by": state.proposals_by,
        "budget": state.budget,
        "device": state.device,
        "sizes": SIZES,
        "tolerance": tolerance_text(),
        "started": state.started,
        "written": time.strftime("%Y-%m-%d %H:%M:%S"),
        "wall_s": round(sum(p.wall_s for p in problems), 3),
        "out": str(out.resolve()),
        "counts": {
            "problems": len(problems),
            "scored": len(scored),
            "compiled": sum(p.compiled for p in scored),
            "correct": sum(p.correct for p in scored),
            "failed": sum(not p.correct for p in scored),
            "skipped": sum(p.status == "skipped" for p in problems),
            "unfinished": sum(p.status in ("pending", "running") for p in problems),
        },
        "baselines": baselines,
        "scores": all_scores,
        "kb_timing": {
            "asked": state.timing == "kernelbench",
            "retimed": len(retimed),
            "flagged": [
                {
                    "level": p.level,
                    "id": p.id,
                    "name": p.name,
                    "ours": p.speedup_eager,
                    "kernelbench": p.kb_speedup,
                }
                for p in retimed
                if p.kb_differs
            ],
            "note": _first([p.kb_note for p in problems]),
        },
        "skipped": [
            {"level": p.level, "id": p.id, "name": p.name, "reason": p.reason}
            for p in problems
            if p.status == "skipped"
        ],
        "failed": [
            {"level": p.level, "id": p.id, "name": p.name, "verdict": p.verdict, "reason": p.reason}
            for p in scored
            if not p.correct
        ],
        "kernelbench_files": files or {},
        "problems": [result_row(p) for p in problems],
    }


def _scaled(stats: TimingStats, factor: float, trials: int) -> TimingStats:
    return TimingStats(
        mean_ms=stats.mean_ms * factor,
        std_ms=stats.std_ms * factor,
        min_ms=stats.min_ms * factor,
        max_ms=stats.max_ms * factor,
        num_trials=trials,
    )


def write_kernelbench_files(state: KbState, out: Path) -> dict[str, Any]:
    """eval_results.json per level and the baseline timing files, for the evaluated problems;
    returns where they are and how to run KernelBench's analysis on them."""
    hardware = kb_format.hardware_name(state.device or "unknown_gpu")
    root = out / "kernelbench"
    timing = root / "results" / "timing" / hardware
    scored = [p for p in state.problems if p.scored]
    levels = sorted({p.level for p in scored})
    eval_files, commands = [], []
    eager: dict[int, dict[str, dict[str, Any]]] = {lv: {} for lv in levels}
    compiled: dict[int, dict[str, dict[str, Any]]] = {}
    for level in levels:
        entries = {}
        for p in (p for p in scored if p.level == level):
            entries[p.id] = kb_format.eval_entry(
                compiled=p.compiled,
                correct=p.correct,
                runtime_stats=p.kernel.kernelbench(state.device) if p.kernel else None,
                verdict=p.verdict,
                reason=p.reason,
                hardware=state.device,
                extra={
                    "verdict": p.verdict,
                    "reason": p.reason,
                    "speedup_eager": p.speedup_eager,
                    "speedup_eager_iqr": p.speedup_eager_iqr,
                    "speedup_compile": p.speedup_compile,
                    "attempts": p.attempts,
                    "times": "ms on the verifier's clock: mean is the median of its samples, "
                    "std their IQR / 1.349",
                },
            )
            eager[level][p.name] = (
                p.eager.kernelbench(state.device)
                if p.eager is not None
                else kb_format.not_measured_stats(state.device)
            )
            factor = p.compile_factor
            if factor is not None and p.baselines is not None:
                trials = p.baselines.compile.num_trials if p.baselines.compile else 0
                compiled.setdefault(level, {})[p.name] = (
                    _scaled(p.eager, factor, trials).kernelbench(state.device)
                    if p.eager is not None
                    else kb_format.not_measured_stats(state.device)
                )
        path = root / "runs" / kb_format.run_name(level) / "eval_results.json"
        kb_format.write_eval_results(path, entries)
        eval_files.append(str(path))
        commands.append(kb_format.analysis_command(out, level, hardware))
    files: dict[str, Any] = {"hardware": hardware, "eval_results": eval_files, "baselines": {}}
    if levels:
        kb_format.write_baselines(timing / kb_format.EAGER_FILE, eager)
        files["baselines"]["eager"] = str(timing / kb_format.EAGER_FILE)
    if compiled:
        kb_format.write_baselines(timing / kb_format.COMPILE_FILE, compiled)
        files["baselines"]["compile"] = str(timing / kb_format.COMPILE_FILE)
        commands += [
            kb_format.analysis_command(out, lv, hardware, kb_format.COMPILE_FILE)
            for lv in sorted(compiled)
        ]
    files["analysis"] = commands
    return files


def write_report(state: KbState, out: Path) -> dict[str, Any]:
    """Write KernelBench's files, kernelbench.json, summary.md and report.html; return the
    data."""
    files = write_kernelbench_files(state, out)
    data = summary(state, out, files)
    (out / "kernelbench.json").write_text(json.dumps(data, indent=2) + "\n")
    (out / "summary.md").write_text(markdown(data))
    (out / "report.html").write_text(html(data, plots(state)))
    return data


# --- text ---


def _x(value: float | None) -> str:
    return f"{value:.2f}x" if value is not None else ""


def _num(value: float | None, fmt: str = ".3f") -> str:
    return format(value, fmt) if value is not None else "n/a"


def score_rows(data: dict[str, Any]) -> list[list[str]]:
    """The scores table's rows, one per baseline and level (pure; the command prints them)."""
    rows = []
    for name, by_level in data["scores"].items():
        if by_level is None:
            continue
        for level, s in by_level.items():
            if level == "all" and len(by_level) == 2:  # one level: "all" says it again
                continue
            rows.append(
                [
                    BASELINE_NAMES[name],
                    "all" if level == "all" else f"level {level}",
                    str(s["problems"]),
                    str(s["compiled"]),
                    str(s["correct"]),
                    *(f"{s['fast'][fast_label(p)]:.3f}" for p in FAST_P),
                    _num(s["geomean_correct"]),
                    _num(s["geomean_failures_as_one"]),
                    _num(s["median_failures_as_one"]),
                    _num(s["median_correct"]),
                ]
            )
    return rows


def score_columns(data: dict[str, Any], name: str) -> tuple[list[str], list[list[str]]]:
    """One baseline's scores for a terminal: a column per level (and "all" over several), a
    row per measure (pure)."""
    by_level = data["scores"].get(name) or {}
    keys = [k for k in by_level if not (k == "all" and len(by_level) == 2)]
    header = ["", *("all" if k == "all" else f"level {k}" for k in keys)]
    rows: list[list[str]] = []
    for i, label in enumerate(SCORE_HEADER[2:]):
        row = [label]
        for k in keys:
            s = by_level[k]
            values = [
                str(s["problems"]),
                str(s["compiled"]),
                str(s["correct"]),
                *(f"{s['fast'][fast_label(p)]:.3f}" for p in FAST_P),
                _num(s["geomean_correct"]),
                _num(s["geomean_failures_as_one"]),
                _num(s["median_failures_as_one"]),
                _num(s["median_correct"]),
            ]
            row.append(values[i])
        rows.append(row)
    return header, rows


SCORE_HEADER = [
    "baseline",
    "level",
    "problems",
    "compiled",
    "correct",
    *(fast_label(p) for p in FAST_P),
    "geomean (correct; KernelBench's)",
    "geomean (failures 1.0x)",
    "median (failures 1.0x)",
    "median (correct)",
]


def header_lines(data: dict[str, Any]) -> list[str]:
    """The run in a few lines: what, where, how measured (pure)."""
    c = data["counts"]
    clone = f"{data['kb']} @ {data['commit'][:12] or 'commit unknown'}" + (
        " (problem files modified)" if data["modified"] else ""
    )
    how = (
        f"replay of the ModelNew files in {data['candidates']}"
        if data["mode"] == "replay"
        else f"the loop, proposals by {data['proposals_by']}, {data['budget']} candidates at "
        "most per problem"
    )
    lines = [
        f"clone: {clone}; levels {', '.join(map(str, data['levels']))}; subset {data['subset']}",
        f"GPU: {data['device'] or 'not recorded'}",
        f"run: {how}",
        f"sizes: {data['sizes']}",
        f"tolerance: {data['tolerance']}",
        f"problems: {c['problems']}: {c['compiled']} compiled, {c['correct']} correct, "
        f"{c['failed']} failed, {c['skipped']} skipped"
        + (f", {c['unfinished']} unfinished" if c["unfinished"] else "")
        + f"; {data['wall_s']:.0f} s",
    ]
    for name, b in data["baselines"].items():
        said = f"{b['problems']} problems" + (f"; {b['note']}" if b["note"] else "")
        lines.append(f"baseline {BASELINE_NAMES[name]}: {b['how']} ({said})")
    kb = data["kb_timing"]
    if kb["asked"]:
        flagged = ", ".join(f"L{f['level']}/{f['id']}" for f in kb["flagged"]) or "none"
        lines.append(
            f"KernelBench's timing: {kb['retimed']} kernels re-timed; more than 5% apart: "
            f"{flagged}" + (f"; {kb['note']}" if kb["note"] else "")
        )
    return lines


def markdown(data: dict[str, Any]) -> str:
    """summary.md (pure)."""
    lines = ["# KernelBench with kernelwright", ""]
    lines += [f"- {line}" for line in header_lines(data)]
    lines += [
        f"- started {data['started']}, written {data['written']}; per problem: results.jsonl; "
        "plots: report.html",
        "",
        "## Scores",
        "",
        "fast_p: the share of all problems (failures included) that are correct and faster "
        "than p times the baseline, strictly; the geometric means and medians are of the "
        "speedup.",
        "",
    ]
    rows = score_rows(data)
    if rows:
        lines += ["| " + " | ".join(SCORE_HEADER) + " |", "|" + " --- |" * len(SCORE_HEADER)]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
    else:
        lines.append("No problem was evaluated.")
    lines += [
        "",
        "## Problems",
        "",
        "| level | id | problem | verdict | vs eager | vs torch.compile | kernel ms | eager ms "
        "| attempts | wall s | why |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in data["problems"]:
        verdict = r["verdict"] if r["status"] in ("done", "failed") else r["status"]
        lines.append(
            f"| {r['level']} | {r['id']} | {r['name']} | {verdict} "
            f"| {_x(r['speedup_eager'])} | {_x(r['speedup_compile'])} "
            f"| {_num(r['kernel_ms'], '.4f') if r['kernel_ms'] else ''} "
            f"| {_num(r['eager_ms'], '.4f') if r['eager_ms'] else ''} | {r['attempts']} "
            f"| {r['wall_s']:.0f} | {clip(r['reason'], 90, cell=True)} |"
        )
    if data["skipped"]:
        lines += ["", "## Skipped (not in any denominator)", ""]
        lines += [f"- level {s['level']} `{s['name']}`: {s['reason']}" for s in data["skipped"]]
    files = data["kernelbench_files"]
    if files.get("eval_results"):
        lines += ["", "## KernelBench's files", ""]
        lines += [f"- `{p}`" for p in files["eval_results"]]
        lines += [f"- `{p}`" for p in files["baselines"].values()]
        lines += [
            "",
            "KernelBench's analysis reads them unchanged; from the clone:",
            "",
            "```bash",
            *files["analysis"],
            "```",
        ]
    return "\n".join(lines) + "\n"


# --- plots ---


def plots(state: KbState) -> dict[str, str]:
    """Plot name -> base64 PNG."""
    return {
        "speedup": png(speedup_plot(state)),
        "outcomes": png(outcome_plot(state)),
        "time": png(time_plot(state)),
    }


def speedup_plot(state: KbState) -> Figure:
    """Per level and baseline, each correct problem's speedup (log scale) and, along the left
    edge, its failures."""
    rows = [
        (lv, b, members([p for p in state.problems if p.level == lv], b))
        for lv in state.levels
        for b in state.baselines
    ]
    rows = [r for r in rows if r[2]]
    fig = Figure(figsize=(7.5, 0.7 * len(rows) + 1.4))
    if not rows:
        return empty(fig, "no problem was evaluated")
    ax = fig.add_subplot()
    edge = blended_transform_factory(ax.transAxes, ax.transData)
    values = []
    for y, (_, b, chosen) in enumerate(rows[::-1]):
        for i, p in enumerate(chosen):
            jitter = ((i % 7) - 3) * 0.06
            s = _speedup(p, b)
            if s is None:
                ax.plot([0.015], [y + jitter], "x", color=RED, transform=edge)
            else:
                values.append(s)
                ax.plot([s], [y + jitter], "o", color=GREEN if s > 1 else BLUE, alpha=0.8)
    ax.set_xscale("log")
    lo, hi = min([*values, 0.5]), max([*values, 2.0])
    ax.set_xlim(lo / 1.6, hi * 1.6)
    ticks = [2.0**k for k in range(-12, 13) if lo / 1.6 <= 2.0**k <= hi * 1.6]
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.axvline(1.2, color=GREY, linewidth=0.8, linestyle="--")
    labels = [f"level {lv} vs {BASELINE_NAMES[b]}" for lv, b, _ in rows[::-1]]
    ax.set_yticks(range(len(rows)), labels)
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.set_xlabel("speedup (log scale; line: 1.0x, dashed: 1.2x; red crosses: failures)")
    ax.set_title("Speedup per problem, by level")
    return fig


OUTCOMES = (
    ("correct, faster than eager", GREEN),
    ("correct, not faster", BLUE),
    ("built, but wrong or crashed", AMBER),
    ("did not build, or no kernel", RED),
    ("skipped", GREY),
)


def _outcome(p: ProblemResult) -> int:
    if p.status == "skipped":
        return 4
    if p.correct:
        return 0 if (p.speedup_eager or 0) > 1 else 1
    return 2 if p.compiled else 3


def outcome_plot(state: KbState) -> Figure:
    """Per level, how many problems ended each way."""
    levels = [lv for lv in state.levels if any(p.level == lv for p in state.problems)]
    fig = Figure(figsize=(7.5, 0.6 * len(levels) + 1.6))
    done = [p for p in state.problems if p.status in ("done", "failed", "skipped")]
    if not done:
        return empty(fig, "no problem finished")
    ax = fig.add_subplot()
    left = [0] * len(levels)
    for k, (label, color) in enumerate(OUTCOMES):
        counts = [sum(_outcome(p) == k for p in done if p.level == lv) for lv in levels]
        ax.barh([f"level {lv}" for lv in levels], counts, left=left, color=color, label=label)
        left = [a + b for a, b in zip(left, counts, strict=True)]
    ax.invert_yaxis()
    ax.set_xlabel("problems")
    ax.set_title("Correct and failed, per level")
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.25), ncol=3, frameon=False)
    return fig


def time_plot(state: KbState) -> Figure:
    """Each finished problem's wall time, in the run's order, coloured by how it ended."""
    done = [p for p in state.problems if p.status in ("done", "failed", "skipped")]
    fig = Figure(figsize=(7.5, 3.2))
    if not done:
        return empty(fig, "no problem finished")
    ax = fig.add_subplot()
    colors = [OUTCOMES[_outcome(p)][1] for p in done]
    ax.bar(range(len(done)), [p.wall_s for p in done], color=colors)
    if len(done) <= 40:
        ax.set_xticks(
            range(len(done)), [f"L{p.level}/{p.id}" for p in done], rotation=90, fontsize=7
        )
    else:
        ax.set_xlabel("problem, in the run's order")
    ax.set_ylabel("wall time, s")
    ax.set_title("Time per problem (colour: how it ended, as above)")
    return fig


# --- the page ---

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>KernelBench with kernelwright</title>
<style>
  body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 76em; padding: 0 1em;
         color: #222; }
  h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.8em; }
  table { border-collapse: collapse; margin: 0.6em 0; }
  th, td { border-bottom: 1px solid #ddd; padding: 0.25em 0.6em; text-align: left;
           vertical-align: top; }
  td.num { text-align: right; font-variant-numeric: tabular-nums; }
  .correct { color: #2e8b57; font-weight: 600; } .failed { color: #c0392b; font-weight: 600; }
  .skipped { color: #666; }
  figure { margin: 1em 0; } figure img { max-width: 100%; }
  figcaption { color: #555; font-size: 0.9em; }
  code { background: #f3f3f3; padding: 0 0.2em; }
</style>
</head>
<body>
<h1>KernelBench with kernelwright</h1>
<ul>
{% for line in header %}<li>{{ line }}</li>
{% endfor %}<li>started {{ data.started }}, written {{ data.written }}</li>
</ul>

<h2>Scores</h2>
<p>fast_p: the share of all problems (failures included) that are correct and faster than p
times the baseline, strictly. The geometric mean over the correct problems is KernelBench's;
beside it, the geometric mean and the median with a failure counted as 1.0x.</p>
{% if rows %}
<table>
<thead><tr>{% for h in score_header %}<th>{{ h }}</th>{% endfor %}</tr></thead>
<tbody>
{% for r in rows %}<tr>{% for c in r %}
<td{% if loop.index > 2 %} class="num"{% endif %}>{{ c }}</td>{% endfor %}</tr>
{% endfor %}
</tbody>
</table>
{% else %}<p>No problem was evaluated.</p>{% endif %}

<h2>Plots</h2>
<figure id="plot-speedup">
<img alt="speedup distribution per level" src="data:image/png;base64,{{ images.speedup }}">
<figcaption>Each correct problem's speedup over eager and over torch.compile, by level (log
scale); failures are the red crosses along the left edge.</figcaption>
</figure>
<figure id="plot-outcomes">
<img alt="correct and failed per level" src="data:image/png;base64,{{ images.outcomes }}">
<figcaption>How each level's problems ended.</figcaption>
</figure>
<figure id="plot-time">
<img alt="time per problem" src="data:image/png;base64,{{ images.time }}">
<figcaption>The wall time of each problem, in the run's order.</figcaption>
</figure>

<h2>Problems</h2>
<table>
<thead><tr><th>level</th><th>id</th><th>problem</th><th>verdict</th><th>vs eager</th>
<th>vs torch.compile</th><th>kernel ms</th><th>eager ms</th><th>attempts</th><th>wall s</th>
<th>why</th></tr></thead>
<tbody>
{% for r in data.problems %}
<tr><td class="num">{{ r.level }}</td><td class="num">{{ r.id }}</td>
<td><code>{{ r.name }}</code></td>
{% set how = "correct" if r.correct else ("skipped" if r.status == "skipped" else "failed") %}
<td class="{{ how }}">{{ r.verdict if r.status in ("done", "failed") else r.status }}</td>
<td class="num">{{ r.speedup_eager | x }}{% if r.speedup_eager_iqr %}
<small>(IQR {{ "%.3f" | format(r.speedup_eager_iqr) }})</small>{% endif %}</td>
<td class="num">{{ r.speedup_compile | x }}</td>
<td class="num">{{ "%.4f" | format(r.kernel_ms) if r.kernel_ms else "" }}</td>
<td class="num">{{ "%.4f" | format(r.eager_ms) if r.eager_ms else "" }}</td>
<td class="num">{{ r.attempts }}</td><td class="num">{{ "%.0f" | format(r.wall_s) }}</td>
<td>{{ r.reason }}{% if r.kb_differs %}
<b>KernelBench's timing: {{ r.kb_speedup | x }}</b>{% endif %}</td></tr>
{% endfor %}
</tbody>
</table>

{% if data.skipped %}
<h2>Skipped (not in any denominator)</h2>
<ul>
{% for s in data.skipped %}<li>level {{ s.level }} <code>{{ s.name }}</code>: {{ s.reason }}</li>
{% endfor %}
</ul>
{% endif %}

{% if data.kernelbench_files.eval_results %}
<h2>KernelBench's files</h2>
<ul>
{% for p in data.kernelbench_files.eval_results %}<li><code>{{ p }}</code></li>
{% endfor %}{% for p in data.kernelbench_files.baselines.values() %}<li><code>{{ p }}</code></li>
{% endfor %}
</ul>
<p>KernelBench's analysis reads them unchanged; from the clone:</p>
<pre>{% for c in data.kernelbench_files.analysis %}{{ c }}
{% endfor %}</pre>
{% endif %}
</body>
</html>
"""


def html(data: dict[str, Any], images: dict[str, str]) -> str:
    """report.html: one file, no external URLs; the plots are base64 PNGs (pure)."""
    import jinja2

    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    env.filters["x"] = _x
    return env.from_string(PAGE).render(
        data=data,
        images=images,
        header=header_lines(data),
        rows=score_rows(data),
        score_header=SCORE_HEADER,
    )
