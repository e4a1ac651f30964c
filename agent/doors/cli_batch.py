"""`kernelwright batch DIR`: optimize every task in a folder, one after another or on several
GPUs at once (`--gpus`, `--scheduler`: batch_dask.py), with progress bars on stderr and a report
in --out. Exit codes: 0 every task ran, 1 some failed (listed), 2 bad input or a missing machine
part (one line), 130 interrupted (resume with --resume)."""

from __future__ import annotations

import contextlib
import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from kernelwright.agent.doors.flags import (
    BackendFlag,
    Minutes,
    ModelFlag,
    NoMemory,
    NoTune,
    Plateau,
)
from kernelwright.agent.formats import attempt_text, error_line
from kernelwright.tools.errors import KernelwrightError
from kernelwright.tools.results import Attempt

if TYPE_CHECKING:
    from kernelwright.agent.doors.batch_dask import GpuSlot, Where
    from kernelwright.agent.doors.batch_records import BatchState, TaskReport, TaskState
    from kernelwright.agent.doors.batch_worker import WorkerParts
    from kernelwright.agent.llm import ChatModel
    from kernelwright.tools.backend import GpuBackend
    from kernelwright.tools.results import DeviceInfo

out = Console()
err = Console(stderr=True)
DEFAULT_BUDGET = 10


def batch(
    directory: Annotated[Path, typer.Argument(help="A folder of tasks, searched recursively.")],
    budget: Annotated[
        int | None,
        typer.Option(min=1, help=f"Candidates per task at most (default {DEFAULT_BUDGET})."),
    ] = None,
    out_dir: Annotated[
        Path, typer.Option("--out", help="Where the report and the runs go.")
    ] = Path("kernelwright-batch"),
    resume: Annotated[
        bool, typer.Option("--resume", help="Continue the interrupted batch in --out.")
    ] = False,
    model: ModelFlag = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print batch.json to stdout.")] = False,
    minutes: Minutes = 60.0,
    plateau: Plateau = 4,
    no_memory: NoMemory = False,
    no_tune: NoTune = False,
    backend: BackendFlag = None,
    gpus: Annotated[
        str | None,
        typer.Option(
            help="Run on these GPUs of this machine at once, one task each: 0,1,3 or 0-3 "
            "(as nvidia-smi numbers them) or all."
        ),
    ] = None,
    scheduler: Annotated[
        str | None,
        typer.Option(
            help="Run on the GPU workers of a Dask cluster: its scheduler's address, "
            "tcp://HOST:8786 (README)."
        ),
    ] = None,
    retries: Annotated[
        int | None,
        typer.Option(
            min=0,
            help="With --gpus: how many times a task whose worker died is run again, before "
            "it is failed (default 2; a cluster's scheduler has its own allowed-failures).",
        ),
    ] = None,
) -> None:
    """Optimize every task in a folder, one after another or on several GPUs at once, and
    write a report.

    Tasks are name.cu or name.cpp + name.toml pairs and KernelBench .py problems anywhere under
    DIRECTORY.
    Each task's best kernel is then tuned (--no-tune: not), and the report shows the gain.
    The report in --out: report.html (self-contained, with plots), report.md, batch.json and
    tasks/NAME.json; exit status 1 when a task failed."""
    from kernelwright.agent.doors.batch_records import BatchState

    given = {
        "minutes": minutes,
        "plateau": plateau,
        "memory": not no_memory,
        "tune": False if no_tune else None,
        "backend": backend.value if backend else None,
    }  # what differs from the defaults: a resume told nothing new says nothing of it
    loop = {k: v for k, v in given.items() if v != BatchState.model_fields[k].default}
    code = run_batch_command(
        directory,
        out_dir,
        budget=budget,
        resume=resume,
        model_name=model,
        as_json=as_json,
        loop=loop,
        gpus=gpus,
        scheduler=scheduler,
        retries=retries,
    )
    raise typer.Exit(code)


def _error(message: str) -> int:
    err.print(error_line(message), highlight=False, soft_wrap=True)
    return 2


def run_batch_command(
    directory: Path,
    out_dir: Path,
    *,
    budget: int | None = None,
    resume: bool = False,
    model_name: str | None = None,
    as_json: bool = False,
    model: ChatModel | None = None,
    gpu: GpuBackend | None = None,
    device: DeviceInfo | None = None,
    loop: dict[str, Any] | None = None,
    gpus: str | None = None,
    scheduler: str | None = None,
    retries: int | None = None,
    slots: list[GpuSlot] | None = None,
    parts: WorkerParts | None = None,
) -> int:
    """The command without typer; tests hand in a scripted model, a replay backend and a
    device, and for a batch on several GPUs this machine's GPUs (`slots`) and what each worker
    builds instead of the model and the GPU (`parts`). Returns the exit code."""
    from kernelwright.agent.doors.batch import BatchState, discover, run_batch
    from kernelwright.agent.doors.batch_dask import AllGpusLost, open_place, run_parallel
    from kernelwright.agent.doors.batch_report import write_report
    from kernelwright.agent.doors.batch_worker import WorkerParts
    from kernelwright.agent.settings import load

    if not directory.is_dir():
        return _error(f"{directory}: no such directory")
    try:
        old = BatchState.load(out_dir) if out_dir.is_dir() else None
    except KernelwrightError as exc:
        return _error(str(exc))
    if resume and old is None:
        return _error(f"no batch to resume in {out_dir} (run it first without --resume)")
    if resume and old is not None and Path(old.dir) != directory.resolve():
        return _error(f"{out_dir} holds the batch of {old.dir}, not of {directory}")
    if not resume and old is not None:
        n = sum(t.status in ("done", "failed") for t in old.tasks)
        return _error(
            f"{out_dir} already holds a batch ({n} of {len(old.tasks)} tasks finished): "
            "add --resume to continue it, or choose another --out"
        )
    if old is None:
        found, skipped = discover(directory, exclude=(out_dir,))
        if not found:
            return _error(
                f"no tasks found in {directory} (expected name.cu + name.toml, or a KernelBench "
                f".py); {len(skipped)} files or folders passed over"
            )
    try:
        where = _where(old, gpus, scheduler, retries)
    except KernelwrightError as exc:
        return _error(str(exc))
    created = not out_dir.exists()
    if problem := _writable(out_dir):
        return _error(problem)
    with contextlib.ExitStack() as stack:
        place = None
        try:
            backend = (old.backend if old is not None else (loop or {}).get("backend")) or None
            settings = load(model=model_name, compile_backend=backend)
            if where is not None:
                memory = old.memory if old is not None else (loop or {}).get("memory", True)
                place = stack.enter_context(
                    open_place(where, settings, out_dir, root=directory, memory=memory, slots=slots)
                )
            elif gpu is None and device is None:
                from kernelwright.tools import nvml

                device = nvml.device_info()
            if model is None:
                from kernelwright.agent.llm import make_model

                model = make_model(settings)
                if place is None or not place.remote:  # a cluster's hosts reach their own
                    model.ensure_ready()
        except KernelwrightError as exc:
            stack.close()  # the workers and the memory server go before their folder
            if created:
                shutil.rmtree(out_dir, ignore_errors=True)  # no folder for a missing part
            return _error(str(exc))
        if old is None:
            state = BatchState.plan(
                directory, found, skipped, budget or DEFAULT_BUDGET, model.name, **(loop or {})
            )
            _print_plan(state)
        else:
            state = old
            _print_resume(state, budget, loop)
        if where is not None:
            state.gpus, state.scheduler = where.gpus, where.scheduler
            state.retries = where.retries if where.scheduler is None else None  # a cluster's own
        state.save(out_dir)
        own_gpu = gpu is None and place is None
        if own_gpu:
            from kernelwright.agent.options import local_gpu

            gpu = local_gpu(settings)
        arch = device.arch if device is not None else "sm_90"
        try:
            with RichBatchProgress(state, err) as progress:
                if place is not None:
                    overrides = {
                        "model": settings.model,
                        "compile_backend": settings.compile_backend,
                    }
                    run_parallel(
                        state,
                        out_dir,
                        place,
                        overrides=overrides,
                        parts=parts or WorkerParts(),
                        progress=progress,
                    )
                else:
                    assert gpu is not None
                    run_batch(
                        state, out_dir, settings, model=model, gpu=gpu, arch=arch, progress=progress
                    )
        except KeyboardInterrupt:
            err.print(
                f"interrupted: continue with `kernelwright batch {directory} --out {out_dir} "
                "--resume`",
                highlight=False,
                soft_wrap=True,
            )
            return 130
        except AllGpusLost as exc:
            write_report(state, out_dir, device)
            return _error(str(exc))
        finally:
            if own_gpu and gpu is not None:
                gpu.close()
    data = write_report(state, out_dir, device)
    if as_json:
        print(json.dumps(data, indent=2))
    else:
        _print_summary(data, out_dir)
    if data["failed"]:
        err.print(f"[red]{len(data['failed'])} failed:[/]", highlight=False)
        for f in data["failed"]:
            err.print(f"  {f['id']}: {escape(f['reason'])}", highlight=False, soft_wrap=True)
        return 1
    return 0


def _where(
    old: BatchState | None, gpus: str | None, scheduler: str | None, retries: int | None
) -> Where | None:
    """Where the batch runs: on the GPUs or the cluster given, else where it ran before; None:
    one task after another on this machine's GPU. KernelwrightError for flags that clash."""
    from kernelwright.agent.doors.batch_dask import DEFAULT_RETRIES, Where, parse_gpus

    if gpus is not None and scheduler is not None:
        raise KernelwrightError("--gpus and --scheduler: choose one (a cluster has its own GPUs)")
    if gpus is None and scheduler is None and old is not None:
        gpus, scheduler = old.gpus, old.scheduler
        retries = old.retries if retries is None else retries
    if scheduler is not None and retries is not None:
        raise KernelwrightError(
            "--retries goes with --gpus: a cluster's scheduler has its own allowed-failures"
        )
    if gpus is None and scheduler is None:
        if retries is not None:
            raise KernelwrightError("--retries goes with --gpus (a batch on several GPUs)")
        return None
    if gpus is not None:
        parse_gpus(gpus)  # its spelling, before any GPU is looked for
    return Where(gpus, scheduler, DEFAULT_RETRIES if retries is None else retries)


def _writable(path: Path) -> str:
    """Why the output folder cannot be used, or ""."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".kernelwright-write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        return f"{path}: output folder not writable ({exc.strerror or type(exc).__name__})"
    return ""


def _print_plan(state: BatchState) -> None:
    err.print(f"found {len(state.tasks)} tasks in {state.dir}:", highlight=False)
    for t in state.tasks:
        err.print(f"  {t.id}  [dim]{t.kind}: {t.path}[/]", highlight=False)
    if state.skipped:
        err.print(f"passed over {len(state.skipped)}:", highlight=False)
        for s in state.skipped:
            err.print(f"  [dim]{escape(s.path)}: {escape(s.reason)}[/]", highlight=False)


def _print_resume(state: BatchState, budget: int | None, loop: dict[str, Any] | None) -> None:
    if budget is not None and budget != state.budget:
        err.print(f"the batch keeps its budget of {state.budget} candidates per task")
    if loop and any(getattr(state, k) != v for k, v in loop.items()):
        err.print(
            f"the batch keeps how it started: {state.minutes:g} min and a plateau of "
            f"{state.plateau} per task, memory {'on' if state.memory else 'off'}, "
            f"tune {'off' if state.tune is False else 'as the settings say'}, "
            f"compile backend {state.backend or 'from the settings'}",
            highlight=False,
        )
    done = sum(t.status in ("done", "failed") for t in state.tasks)
    err.print(f"resuming: {done} of {len(state.tasks)} tasks already finished", highlight=False)


def _print_summary(data: dict[str, Any], out_dir: Path) -> None:
    from kernelwright.agent.doors.batch_report import times

    table = Table(box=None, pad_edge=False)
    columns = ["task", "verdict", "baseline ms", "best ms", "speedup", "roofline", "attempts"]
    for name in columns + (["gpu"] if data["gpus"] else []):
        table.add_column(name, justify="right" if name.endswith(("ms", "s")) else "left")
    for r in data["tasks"]:
        color = {"faster": "green", "failed": "red"}.get(r["verdict"], "")
        before, after = r["roofline_before"], r["roofline_after"]
        table.add_row(
            r["id"],
            f"[{color}]{r['verdict']}[/]" if color else r["verdict"],
            f"{r['baseline_ms']:.4f}" if r["baseline_ms"] is not None else "",
            f"{r['best_ms']:.4f}" if r["best_ms"] is not None else "",
            f"{r['speedup']:.2f}x" if r["speedup"] is not None else "",
            f"{before:.0%} → {after:.0%}" if before and after else "",
            str(len(r["attempts"])),
            *([escape(r["gpu"])] if data["gpus"] else []),
        )
    out.print(table)
    if data["batch_wall_s"]:
        out.print(times(data), highlight=False)
    out.print(f"report: {out_dir / 'report.html'}  ({out_dir / 'report.md'})", highlight=False)


class RichBatchProgress:
    """A bar for the batch and one for each task in hand, and a line per measured attempt."""

    def __init__(self, state: BatchState, console: Console) -> None:
        self.state = state
        self.console = console
        self.bars = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
        )
        finished = sum(t.status in ("done", "failed") for t in state.tasks)
        self.overall = self.bars.add_task("batch", total=len(state.tasks), completed=finished)
        self.running: dict[str, Any] = {}  # task slug -> its bar's id

    def __enter__(self) -> RichBatchProgress:
        self.bars.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bars.stop()

    def task_started(self, index: int, task: TaskState, attempts_done: int) -> None:
        if task.slug in self.running:  # run again, after its worker died
            self.bars.remove_task(self.running.pop(task.slug))
        where = f" on {task.gpu}" if task.gpu else ""
        self.running[task.slug] = self.bars.add_task(
            f"{task.id}{where}: starting", total=self.state.budget, completed=attempts_done
        )
        overall = f"task {index + 1}/{len(self.state.tasks)}"
        if task.gpu:
            overall = f"{len(self.running)} running"
        self.bars.update(self.overall, description=f"batch: {overall}")

    def loop_event(self, task: TaskState, event: dict[str, Any]) -> None:
        bar = self.running.get(task.slug)
        if bar is None:
            return
        attempt = event.get("attempt")
        if isinstance(attempt, Attempt):
            self.console.print(Text(f"  {task.id} ") + attempt_text(attempt), highlight=False)
            self.bars.update(bar, completed=attempt.index)
        self.bars.update(
            bar,
            description=f"{task.id}: {event.get('node')}: {escape(str(event.get('message', '')))}"
            + (f" · best {event['best_speedup']:.2f}x" if event.get("best_speedup") else ""),
        )

    def task_finished(self, index: int, task: TaskState, report: TaskReport) -> None:
        if task.slug in self.running:
            self.bars.remove_task(self.running.pop(task.slug))
        self.bars.advance(self.overall)
        where = f" [dim]({escape(task.gpu)})[/]" if task.gpu else ""
        if task.status == "failed":
            line = f"[red]failed[/] {task.id}: {escape(task.reason)}{where}"
        else:
            speed = f"{report.speedup:.2f}x" if report.speedup is not None else "-"
            line = f"[green]done[/] {task.id}: {speed}, {escape(task.stop_reason)}{where}"
        self.console.print(line, highlight=False, soft_wrap=True)

    def note(self, text: str) -> None:
        self.console.print(f"[yellow]{escape(text)}[/]", highlight=False, soft_wrap=True)
