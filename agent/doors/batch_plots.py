"""The batch report's three plots, as base64 PNGs for report.html: the speedup per task, the
time of each attempt over each run, and each task against its roofline before and after.

Matplotlib's object API on the Agg canvas: no pyplot state, no display needed.
"""

from __future__ import annotations

import base64
import io
import math

from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator
from matplotlib.transforms import blended_transform_factory

from kernelwright.agent.doors.batch_records import TaskReport

BLUE, GREEN, RED, GREY = "#3b6ea8", "#2e8b57", "#c0392b", "#8a8a8a"


def plots(reports: list[TaskReport]) -> dict[str, str]:
    """Plot name -> base64 PNG."""
    return {
        "speedup": png(speedup_plot(reports)),
        "attempts": png(attempts_plot(reports)),
        "roofline": png(roofline_plot(reports)),
    }


def png(fig: Figure) -> str:
    """A figure as a base64 PNG, for a self-contained HTML page."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode()


def empty(fig: Figure, text: str) -> Figure:
    """A figure that says, in grey, why there is nothing to plot."""
    ax = fig.add_subplot()
    ax.axis("off")
    ax.text(0.5, 0.5, text, ha="center", va="center", color=GREY)
    return fig


def speedup_plot(reports: list[TaskReport]) -> Figure:
    """One bar per task: the best speedup over the original, with half the IQR as error bar."""
    fig = Figure(figsize=(7.5, 0.45 * len(reports) + 1.4))
    if not reports:
        return empty(fig, "no tasks")
    ax = fig.add_subplot()
    names = [r.id for r in reports][::-1]
    values = [r.speedup or 0.0 for r in reports][::-1]
    errors = [(r.speedup_iqr or 0.0) / 2 for r in reports][::-1]
    colors = [
        GREEN if r.verdict == "faster" else GREY if r.verdict == "unchanged" else RED
        for r in reports
    ][::-1]
    ax.barh(names, values, xerr=errors, color=colors, capsize=3)
    ax.axvline(1.0, color="black", linewidth=0.8)
    top = max([*values, 1.0])
    for y, r in enumerate(reports[::-1]):
        label = f"{r.speedup:.2f}x" if r.speedup is not None else r.verdict
        ax.text(max(r.speedup or 0.0, 0.0) + top * 0.02, y, label, va="center", fontsize=8)
    ax.set_xlim(0, top * 1.18)
    ax.set_xlabel("speedup over the original kernel (error bar: half the IQR)")
    ax.set_title("Speedup per task")
    return fig


def attempts_plot(reports: list[TaskReport]) -> Figure:
    """Per task: the time of each attempt in order, the best so far, the original and the
    roofline floor; attempts that failed verification are red crosses along the top."""
    runs = [r for r in reports if r.baseline_ms is not None]
    cols = min(3, max(1, len(runs)))
    rows = max(1, math.ceil(len(runs) / cols))
    fig = Figure(figsize=(4.2 * cols, 2.9 * rows + 0.4))
    if not runs:
        return empty(fig, "no task was timed")
    fig.suptitle("Time of each attempt over the run")
    for i, r in enumerate(runs):
        ax = fig.add_subplot(rows, cols, i + 1)
        assert r.baseline_ms is not None
        best, xs, ys = [r.baseline_ms], [0], [r.baseline_ms]
        failed = []
        for a in r.attempts:
            ms = a.get("candidate_ms")
            if a["verdict"] == "correct" and ms:
                xs.append(a["index"])
                ys.append(ms)
            else:
                failed.append(a["index"])
            best.append(ms if a.get("kept") and ms else best[-1])
        ax.step(range(len(best)), best, where="post", color=GREEN, label="best so far")
        ax.plot(xs, ys, "o", color=BLUE, label="verified attempt")
        top = blended_transform_factory(ax.transData, ax.transAxes)
        ax.plot(failed, [0.95] * len(failed), "x", color=RED, transform=top, label="rejected")
        ax.axhline(r.baseline_ms, color=GREY, linestyle="--", linewidth=0.8, label="original")
        if r.floor_ms:
            ax.axhline(r.floor_ms, color="black", linestyle=":", linewidth=0.8, label="floor")
        ax.set_ylim(0, max([*ys, r.baseline_ms]) * 1.25)
        ax.set_xlim(-0.5, max(len(r.attempts), 1) + 0.5)
        ax.set_title(r.id, fontsize=10)
        ax.set_xlabel("attempt (0: the original)", fontsize=8)
        ax.set_ylabel("ms", fontsize=8)
        ax.tick_params(labelsize=8)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    handles, labels = fig.axes[0].get_legend_handles_labels()
    fig.tight_layout(rect=(0, 0.08 / rows, 1, 1))
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8, frameon=False)
    return fig


def roofline_plot(reports: list[TaskReport]) -> Figure:
    """Per task: the share of its roofline bound achieved (floor / measured time) by the
    original (hollow) and by the best kernel (filled); 100% is the roofline."""
    placed = [r for r in reports if r.roofline_before and r.roofline_after]
    fig = Figure(figsize=(7.5, 0.45 * len(placed) + 1.6))
    if not placed:
        return empty(fig, "no task has a roofline floor ([roofline] and the device's peaks)")
    ax = fig.add_subplot()
    for y, r in enumerate(placed[::-1]):
        assert r.roofline_before and r.roofline_after
        before, after = 100 * r.roofline_before, 100 * r.roofline_after
        ax.annotate("", (after, y), (before, y), arrowprops={"arrowstyle": "->", "color": GREY})
        ax.plot([before], [y], "o", mfc="white", mec=BLUE, label="original" if y == 0 else None)
        ax.plot([after], [y], "o", color=GREEN, label="best" if y == 0 else None)
        ax.text(max(before, after) + 2, y, f"{after:.0f}%", va="center", fontsize=8)
    ax.set_yticks(range(len(placed)), [r.id for r in placed[::-1]])
    ax.axvline(100, color="black", linewidth=0.8)
    ax.text(99, len(placed) - 0.45, "roofline", ha="right", fontsize=8)
    ax.set_xlim(0, max(112, *(100 * r.roofline_after + 12 for r in placed if r.roofline_after)))
    ax.set_ylim(-0.7, len(placed) - 0.3)
    ax.set_xlabel("% of the roofline bound achieved (floor / measured time)")
    ax.set_title("Position against the roofline, before and after")
    ax.legend(fontsize=8, loc="lower right")
    return fig
