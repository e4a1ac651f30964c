"""A batch's report, built from the files its runs left (so a resumed batch reports the same):
tasks/SLUG.json per task, batch.json, report.md, and report.html with its plots inlined."""

from __future__ import annotations

import json
import time
from importlib import resources
from pathlib import Path
from typing import Any

from kernelwright.agent.doors.batch_records import BatchState, TaskReport, TaskState
from kernelwright.agent.formats import clip
from kernelwright.agent.rundir import RunDir
from kernelwright.tools.backend import candidate_key
from kernelwright.tools.errors import KernelwrightError
from kernelwright.tools.results import Attempt, CheckReport, DeviceInfo
from kernelwright.tools.task import Task, load_task, reference_candidate
from kernelwright.tools.timing import roofline_floor_ms

ORIGINAL_FAILS = "the task's own kernel fails its check"


def _checks(path: Path) -> dict[str, CheckReport]:
    if not path.is_file():
        return {}
    rows = (json.loads(line) for line in path.read_text().splitlines() if line.strip())
    return {r["key"]: CheckReport.model_validate(r["value"]) for r in rows if r["kind"] == "check"}


def _original(task: TaskState, out: Path) -> tuple[Task | None, CheckReport | None]:
    """The loaded task and the check of its own kernel, when the run recorded one."""
    try:
        loaded = load_task(task.path)
    except KernelwrightError:
        return None, None
    checks = _checks(out / "runs" / task.slug / "checks.jsonl")
    return loaded, checks.get(candidate_key(loaded, reference_candidate(loaded)))


def original_failure(task: TaskState, out: Path) -> str:
    """Why the task's own kernel failed its check, or "" (the batch marks such a task failed)."""
    _, original = _original(task, out)
    if original is not None and not original.ok:
        return f"{ORIGINAL_FAILS}: {original.reason}"
    return ""


def floor_ms(task: Task, device: DeviceInfo | None) -> float | None:
    """The roofline floor at the bench size from the task's [roofline] and the device's peaks."""
    if device is None:
        return None
    rbytes, rflops = task.roofline()  # (None, None) for a kind that declares no roofline
    return roofline_floor_ms(rbytes, rflops, device.peak_dram_gbps, device.peak_fp32_tflops)


def task_report(task: TaskState, out: Path, device: DeviceInfo | None = None) -> TaskReport:
    verdict = {"failed": "failed", "done": "unchanged"}.get(task.status, "pending")
    report = TaskReport(
        id=task.id,
        name=Path(task.path).stem,
        path=task.path,
        kind=task.kind,
        status=task.status,
        verdict=verdict,
        reason=task.reason,
        stop_reason=task.stop_reason,
        run_dir=task.run_dir,
        wall_s=round(task.wall_s, 3),
        gpu=task.gpu,
    )
    if not task.run_dir:
        return report
    loaded, original = _original(task, out)
    attempts = RunDir(Path(task.run_dir)).attempts()
    update: dict[str, Any] = {
        "attempts": [a.model_dump(mode="json", exclude={"source"}) for a in attempts],
        "best_kernel": str(RunDir(Path(task.run_dir)).best_file),
        **_tuned(Path(task.run_dir)),
    }
    if loaded is not None:
        update["name"] = loaded.name
    if original is not None and original.ok and original.timing is not None:
        timing = original.timing
        dev = original.device or device
        floor = timing.floor_ms or (floor_ms(loaded, dev) if loaded is not None else None)
        kept = [a for a in attempts if a.kept and a.speedup is not None]
        best = kept[-1] if kept else None  # a kept attempt beats every one kept before it
        base_ms = timing.reference.median_ms
        best_ms = best.candidate_ms if best is not None and best.candidate_ms else base_ms
        update.update(
            baseline_ms=base_ms,
            baseline_iqr_ms=timing.reference.iqr_ms,
            best_ms=best_ms,
            speedup=best.speedup if best is not None else 1.0,
            speedup_iqr=best.speedup_iqr if best is not None else timing.speedup_iqr,
            floor_ms=floor,
            roofline_before=floor / base_ms if floor else None,
            roofline_after=floor / best_ms if floor else None,
            techniques=_lineage(attempts, best.index if best else 0),
            best_attempt=best.index if best else 0,
            device=f"{dev.name} ({dev.arch})" if dev else "",
        )
        if task.status == "done" and best is not None:
            update["verdict"] = "faster"
    return report.model_copy(update=update)


def _tuned(run_dir: Path) -> dict[str, Any]:
    """What tuning the run's best kernel found (its tune.json): the gain and the winner, or
    why it was not tuned; nothing when it was not tuned at all."""
    path = run_dir / "tune.json"
    try:
        data = json.loads(path.read_text()) if path.is_file() else None
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    if "error" in data:
        return {"tune_best": f"not tuned: {data['error']}"}
    return {"tune_gain": data.get("gain"), "tune_best": str(data.get("best", ""))}


def _tune(r: TaskReport) -> str:
    """The tune column: "1.05x (BLOCK=128)", "1.00x", or why it was not tuned."""
    if r.tune_gain is None:
        return r.tune_best
    return f"{r.tune_gain:.2f}x" + (f" ({r.tune_best})" if r.tune_gain > 1.0 else "")


def _lineage(attempts: list[Attempt], index: int) -> list[str]:
    """The technique tags from the original kernel down to attempt `index`."""
    by_index = {a.index: a for a in attempts}
    tags: list[str] = []
    while index in by_index:
        tags = list(by_index[index].tags) + tags
        index = by_index[index].parent
    return list(dict.fromkeys(tags))


def write_task_json(task: TaskState, out: Path, device: DeviceInfo | None = None) -> TaskReport:
    report = task_report(task, out, device)
    folder = out / "tasks"
    folder.mkdir(exist_ok=True)
    (folder / f"{task.slug}.json").write_text(report.model_dump_json(indent=2) + "\n")
    return report


def write_report(state: BatchState, out: Path, device: DeviceInfo | None = None) -> dict[str, Any]:
    """Write every task's JSON, batch.json, report.md and report.html; return batch.json's data."""
    from kernelwright.agent.doors.batch_plots import plots

    reports = [write_task_json(t, out, device) for t in state.tasks]
    devices = sorted({r.device for r in reports if r.device})
    if not devices and device is not None:
        devices = [f"{device.name} ({device.arch})"]
    data: dict[str, Any] = {
        "dir": state.dir,
        "out": str(out.resolve()),
        "device": ", ".join(devices),
        "proposals_by": state.proposals_by,
        "budget": state.budget,
        "started": state.started,
        "written": time.strftime("%Y-%m-%d %H:%M:%S"),
        "wall_s": round(sum(t.wall_s for t in state.tasks), 3),  # the sum of the tasks' times
        "batch_wall_s": round(state.wall_s, 3),  # over several GPUs: the batch's own; else 0
        "gpus": sorted({t.gpu for t in state.tasks if t.gpu}),
        "counts": {
            "tasks": len(reports),
            **{v: sum(r.verdict == v for r in reports) for v in ("faster", "unchanged", "failed")},
            "skipped_files": len(state.skipped),
        },
        "failed": [{"id": r.id, "reason": r.reason} for r in reports if r.status == "failed"],
        "skipped": [s.model_dump() for s in state.skipped],
        "tasks": [r.model_dump(mode="json") for r in reports],
    }
    (out / "batch.json").write_text(json.dumps(data, indent=2) + "\n")
    (out / "report.md").write_text(markdown(data, reports))
    (out / "report.html").write_text(html(data, reports, plots(reports)))
    return data


def _ms(value: float | None) -> str:
    return f"{value:.4f}" if value is not None else ""


def _pct(before: float | None, after: float | None) -> str:
    return f"{before:.0%} → {after:.0%}" if before is not None and after is not None else ""


def _speed(r: TaskReport) -> str:
    if r.speedup is None:
        return ""
    return f"{r.speedup:.2f}x" + (f" (IQR {r.speedup_iqr:.3f})" if r.speedup_iqr else "")


def _rel(path: str, root: str) -> str:
    p = Path(path)
    return p.relative_to(root).as_posix() if p.is_relative_to(root) else path


def times(data: dict[str, Any]) -> str:
    """The batch's time: the sum of its tasks' times, and over several GPUs its own wall time
    beside it (pure)."""
    work = f"{data['wall_s']:.0f} s of task time"
    wall, gpus = data.get("batch_wall_s") or 0.0, len(data.get("gpus") or ())
    if not wall:
        return work
    busy = data["wall_s"] / wall
    return f"{wall:.0f} s of wall time on {gpus} GPUs for {work} ({busy:.1f} GPUs busy on average)"


def markdown(data: dict[str, Any], reports: list[TaskReport]) -> str:
    """report.md (pure)."""
    c = data["counts"]
    lines = [
        "# kernelwright batch report",
        "",
        f"- folder: {data['dir']}",
        f"- device: {data['device'] or 'not recorded'}",
        f"- proposals by: {data['proposals_by']}; budget: {data['budget']} candidates per task",
        f"- tasks: {c['tasks']}: {c['faster']} faster, {c['unchanged']} unchanged, "
        f"{c['failed']} failed; {c['skipped_files']} files or folders skipped",
        f"- started {data['started']}, report written {data['written']}, {times(data)}",
        "- plots: report.html; per task: tasks/NAME.json; "
        "runs (best.cu or best.py, attempts): runs/NAME/",
        "",
        "| task | verdict | baseline ms | best ms | speedup | tune gain "
        "| roofline before → after | attempts | techniques | stopped, or why it failed |"
        + (" gpu |" if data["gpus"] else ""),
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
        + (" --- |" if data["gpus"] else ""),
    ]
    for r in reports:
        lines.append(
            f"| {r.id} | {r.verdict} | {_ms(r.baseline_ms)} | {_ms(r.best_ms)} | {_speed(r)} "
            f"| {clip(_tune(r), 40, cell=True)} "
            f"| {_pct(r.roofline_before, r.roofline_after)} | {len(r.attempts)} "
            f"| {clip(', '.join(r.techniques), 50, cell=True)} "
            f"| {clip(r.reason or r.stop_reason, 90, cell=True)} |"
            + (f" {clip(r.gpu, 40, cell=True)} |" if data["gpus"] else "")
        )
    if data["failed"]:
        lines += ["", "## Failed", ""]
        lines += [f"- `{f['id']}`: {f['reason']}" for f in data["failed"]]
    if data["skipped"]:
        lines += ["", "## Skipped", ""]
        lines += [f"- `{_rel(s['path'], data['dir'])}`: {s['reason']}" for s in data["skipped"]]
    return "\n".join(lines) + "\n"


def html(data: dict[str, Any], reports: list[TaskReport], images: dict[str, str]) -> str:
    """report.html: one file, no external URLs; the plots are base64 PNGs (pure)."""
    import jinja2

    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    env.filters.update(ms=_ms, speed=_speed, rel=_rel, tune=_tune)
    env.globals.update(pct=_pct, times=times)
    source = resources.files("kernelwright.agent.doors").joinpath("templates/batch_report.html.j2")
    return env.from_string(source.read_text()).render(data=data, reports=reports, images=images)
