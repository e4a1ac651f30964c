"""`kernelwright eval ...`: the evaluation suites. `eval adversarial` runs the cheating and broken
candidates the verifier must reject, and the controls it must pass, and prints what it said.
`eval kernelbench` runs the loop (or replays ModelNew files) on the problems of a KernelBench
clone and scores them as KernelBench does, against eager and torch.compile. `eval pareval`
imports a ParEval clone's problems as cpp tasks, runs them as a batch and prints ParEval's
build@1, pass@1 and speedup@1 per problem type."""

from __future__ import annotations

import json
import shutil
import time
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kernelwright.agent.doors.flags import Minutes, ModelFlag, NoMemory, Plateau
from kernelwright.agent.formats import clip, error_line
from kernelwright.tools.errors import KernelwrightError

if TYPE_CHECKING:
    from kernelwright.agent.llm import ChatModel
    from kernelwright.evals.kb_baselines import Baselines, Retimer
    from kernelwright.evals.kb_run import KbState, ProblemResult
    from kernelwright.tools.backend import GpuBackend
    from kernelwright.tools.results import DeviceInfo

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
        expected = escape(r.case.expects)
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
                "expected_all": c.expects,
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
        expected = escape(c.expects)
        table.add_row(c.name, c.task, expected, escape(c.description))
    out.print(table)


# --- eval kernelbench ---

KB_BUDGET = 10
KB_OUT = Path("kernelwright-kernelbench")


class Timing(StrEnum):
    ours = "ours"
    kernelbench = "kernelbench"


@eval_app.command()
def kernelbench(
    kb: Annotated[
        Path,
        typer.Option(
            "--kb",
            help="Your KernelBench clone (git clone "
            "https://github.com/ScalingIntelligence/KernelBench); read where it lies.",
        ),
    ],
    level: Annotated[
        str | None,
        typer.Option(help="Levels: 1, 2, 3 or 4, or several such as 1,2 (default: 1,2,3)."),
    ] = None,
    subset: Annotated[
        str,
        typer.Option(
            help="representative (the clone's own subset), all, or problem ids such as "
            "1,3,5-9 (with one --level)."
        ),
    ] = "representative",
    budget: Annotated[
        int | None,
        typer.Option(min=1, help=f"Candidates per problem at most (default {KB_BUDGET})."),
    ] = None,
    baselines: Annotated[
        str, typer.Option(help="What the speedups are against: eager, compile, or both.")
    ] = "eager,compile",
    out_dir: Annotated[
        Path, typer.Option("--out", help="Where the results and the runs go.")
    ] = KB_OUT,
    resume: Annotated[
        bool, typer.Option("--resume", help="Continue the interrupted run in --out.")
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print kernelbench.json to stdout.")
    ] = False,
    candidates: Annotated[
        Path | None,
        typer.Option(
            help="Replay, no model: evaluate the ModelNew files in this folder (any tool's, "
            "named level_L_problem_I_sample_0_kernel.py, or I.py / I_*.py under levelL/)."
        ),
    ] = None,
    timing: Annotated[
        Timing,
        typer.Option(
            help="kernelbench: also re-time each final kernel with KernelBench's protocol "
            "and flag those more than 5% from ours (GPU)."
        ),
    ] = Timing.ours,
    list_problems: Annotated[
        bool, typer.Option("--list", help="List the problems selected; run nothing.")
    ] = False,
    model: ModelFlag = None,
    minutes: Minutes = 60.0,
    plateau: Plateau = 4,
    no_memory: NoMemory = False,
) -> None:
    """Run the loop on each problem of a KernelBench clone and score it as KernelBench does.

    Prints compiled and correct counts, fast_0, fast_1 and fast_1.2 (every problem in the
    denominator, failures included; strictly faster than p), KernelBench's geometric mean over
    the correct problems, the geometric mean and median with failures as 1.0x, each against
    eager and torch.compile. Writes to --out: results.jsonl, summary.md, report.html,
    kernelbench.json, and KernelBench's own eval_results.json and baseline timing files."""
    from kernelwright.evals.kb_run import KbState

    given = {"minutes": minutes, "plateau": plateau, "memory": not no_memory}
    loop = {k: v for k, v in given.items() if v != KbState.model_fields[k].default}
    code = run_kernelbench_command(
        kb,
        out_dir,
        level=level,
        subset=subset,
        budget=budget,
        baselines=baselines,
        resume=resume,
        as_json=as_json,
        candidates=candidates,
        timing=timing.value,
        list_only=list_problems,
        model_name=model,
        loop=loop,
    )
    raise typer.Exit(code)


def _kb_error(message: str) -> int:
    err.print(error_line(message), highlight=False, soft_wrap=True)
    return 2


def _baseline_names(text: str) -> list[str]:
    from kernelwright.evals.kb_baselines import BASELINES

    names = {part.strip().lower() for part in text.split(",") if part.strip()}
    names = {"compile" if n in ("torch.compile", "torch_compile") else n for n in names}
    unknown = sorted(names - set(BASELINES))
    if unknown or not names:
        raise KernelwrightError(f"--baselines {text!r}: expected eager, compile, or eager,compile")
    return [b for b in BASELINES if b in names]


def run_kernelbench_command(
    kb: Path,
    out_dir: Path,
    *,
    level: str | None = None,
    subset: str = "representative",
    budget: int | None = None,
    baselines: str = "eager,compile",
    resume: bool = False,
    as_json: bool = False,
    candidates: Path | None = None,
    timing: str = "ours",
    list_only: bool = False,
    model_name: str | None = None,
    loop: dict[str, Any] | None = None,
    model: ChatModel | None = None,
    gpu: GpuBackend | None = None,
    device: DeviceInfo | None = None,
    baseline_timer: Baselines | None = None,
    retimer: Retimer | None = None,
) -> int:
    """The command without typer; tests hand in a scripted model, a replay backend, a device
    and recorded timers. Returns the exit code: 0 the run ended (failed problems are results),
    2 bad input or a missing machine part (one line), 130 interrupted (resume with --resume)."""
    from kernelwright.agent.settings import load
    from kernelwright.evals.kb_problems import open_clone, parse_levels, select
    from kernelwright.evals.kb_report import write_report
    from kernelwright.evals.kb_run import KbState, KbTools, run_eval

    try:
        clone = open_clone(kb)
        wanted = _baseline_names(baselines)
        old = None if list_only or not out_dir.is_dir() else KbState.load(out_dir)
        levels: list[int] = []
        problems: list[Any] = []
        if not (resume and old is not None):  # a resume keeps its plan
            levels = parse_levels(level, clone.levels())
            problems = select(clone, levels, subset)
    except KernelwrightError as exc:
        return _kb_error(str(exc))
    if list_only:
        _list_problems(clone.described, problems, as_json)
        return 0
    if candidates is not None and not candidates.is_dir():
        return _kb_error(f"--candidates {candidates}: no such directory")
    if resume and old is None:
        return _kb_error(
            f"no KernelBench run to resume in {out_dir} (run it first without --resume)"
        )
    if resume and old is not None and Path(old.kb) != clone.root:
        return _kb_error(f"{out_dir} holds a run over {old.kb}, not over {clone.root}")
    if not resume and old is not None:
        n = sum(p.status in ("done", "failed", "skipped") for p in old.problems)
        return _kb_error(
            f"{out_dir} already holds a KernelBench run ({n} of {len(old.problems)} problems "
            "finished): add --resume to continue it, or choose another --out"
        )
    created = not out_dir.exists()
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / ".kernelwright-write-test").write_text("")
        (out_dir / ".kernelwright-write-test").unlink()
    except OSError as exc:
        return _kb_error(f"{out_dir}: output folder not writable ({exc.strerror or exc})")
    replay = (old.mode == "replay") if old is not None else candidates is not None
    try:
        settings = load(model=model_name)
        if gpu is None and device is None:
            from kernelwright.tools import nvml

            device = nvml.device_info()  # no GPU: one line, exit 2
        if model is None and not replay:
            from kernelwright.agent.llm import make_model

            model = make_model(settings)
            model.ensure_ready()
    except KernelwrightError as exc:
        if created:
            out_dir.rmdir()
        return _kb_error(str(exc))
    if old is None:
        state = KbState.plan(
            problems,
            kb=str(clone.root),
            commit=clone.commit,
            modified=clone.modified,
            levels=levels,
            subset=subset,
            mode="replay" if replay else "loop",
            candidates=str(candidates.resolve()) if candidates is not None else None,
            budget=budget or KB_BUDGET,
            baselines=wanted,
            timing=timing,
            proposals_by="" if replay else (model.name if model else ""),
            device=device.name if device is not None else "",
            **(loop or {}),
        )
        state.save(out_dir)
        err.print(
            f"{len(problems)} problems from {clone.described}"
            + (f", replaying {state.candidates}" if replay else ""),
            highlight=False,
            soft_wrap=True,
        )
    else:
        state = old
        done = sum(p.status in ("done", "failed", "skipped") for p in state.problems)
        err.print(
            f"resuming: {done} of {len(state.problems)} problems already finished "
            "(the run keeps the plan and settings it started with)",
            highlight=False,
        )
    own_gpu = gpu is None
    if gpu is None:
        from kernelwright.agent.options import local_gpu

        gpu = local_gpu(settings)
    tools = KbTools(
        gpu=gpu,
        arch=device.arch if device is not None else "sm_90",
        model=model,
        baselines=baseline_timer,
        retimer=retimer,
        device=device,
        kb=state.kb,
    )
    try:
        with RichKbProgress(state, err) as progress:
            run_eval(state, out_dir, settings, tools, progress)
    except KeyboardInterrupt:
        err.print(
            f"interrupted: continue with `kernelwright eval kernelbench --kb {kb} "
            f"--out {out_dir} --resume`",
            highlight=False,
            soft_wrap=True,
        )
        return 130
    finally:
        if own_gpu:
            gpu.close()
    data = write_report(state, out_dir)
    if as_json:
        print(json.dumps(data, indent=2))
    else:
        _print_kb_summary(data, out_dir)
    return 0


def _list_problems(where: str, problems: list[Any], as_json: bool) -> None:
    if as_json:
        rows = [
            {"level": p.level, "id": p.id, "name": p.name, "path": str(p.path)} for p in problems
        ]
        print(json.dumps(rows, indent=2))
        return
    table = Table(title=f"{len(problems)} problems from {escape(where)}")
    for name in ("level", "id", "problem"):
        table.add_column(name, justify="right" if name != "problem" else "left")
    for p in problems:
        table.add_row(str(p.level), str(p.id), p.name)
    out.print(table)


def _print_kb_summary(data: dict[str, Any], out_dir: Path) -> None:
    from kernelwright.evals.kb_report import BASELINE_NAMES, header_lines, score_columns

    for line in header_lines(data):
        out.print(escape(line), highlight=False, soft_wrap=True)
    for name, by_level in data["scores"].items():
        if by_level is None:
            continue
        header, rows = score_columns(data, name)
        table = Table(title=f"against {BASELINE_NAMES[name]}", title_justify="left")
        for i, column in enumerate(header):
            table.add_column(column, justify="left" if i == 0 else "right")
        for r in rows:
            table.add_row(*r)
        out.print(table)
    for f in data["failed"][:20]:
        err.print(
            f"  [red]failed[/] L{f['level']}/{f['id']} {escape(f['name'])}: "
            f"{escape(clip(f['reason'] or f['verdict'], 160))}",
            highlight=False,
            soft_wrap=True,
        )
    if len(data["failed"]) > 20:
        err.print(f"  ... and {len(data['failed']) - 20} more (summary.md)", highlight=False)
    for s in data["skipped"]:
        err.print(
            f"  [dim]skipped[/] L{s['level']}/{s['id']} {escape(s['name'])}: {escape(s['reason'])}",
            highlight=False,
            soft_wrap=True,
        )
    out.print(
        f"report: {out_dir / 'report.html'}  ({out_dir / 'summary.md'}, "
        f"{out_dir / 'results.jsonl'}); KernelBench's files: {out_dir / 'kernelbench'}",
        highlight=False,
        soft_wrap=True,
    )


class RichKbProgress:
    """Two bars on stderr, the run and the problem in hand, and a line per finished problem."""

    def __init__(self, state: KbState, console: Console) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        self.state = state
        self.console = console
        self.bars = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
        )
        finished = sum(p.status in ("done", "failed", "skipped") for p in state.problems)
        self.overall = self.bars.add_task(
            "kernelbench", total=len(state.problems), completed=finished
        )
        self.current: Any = None

    def __enter__(self) -> RichKbProgress:
        self.bars.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bars.stop()

    def started(self, index: int, problem: ProblemResult, attempts_done: int) -> None:
        self.bars.update(
            self.overall, description=f"kernelbench: {index + 1}/{len(self.state.problems)}"
        )
        total = self.state.budget if self.state.mode == "loop" else 1
        self.current = self.bars.add_task(
            f"L{problem.level}/{problem.id}: starting", total=total, completed=attempts_done
        )

    def loop_event(self, problem: ProblemResult, event: dict[str, Any]) -> None:
        from kernelwright.tools.results import Attempt

        attempt = event.get("attempt")
        if isinstance(attempt, Attempt):
            self.bars.update(self.current, completed=attempt.index)
        self.bars.update(
            self.current,
            description=f"L{problem.level}/{problem.id}: {event.get('node')}: "
            f"{escape(clip(str(event.get('message', '')), 60))}"
            + (f" · best {event['best_speedup']:.2f}x" if event.get("best_speedup") else ""),
        )

    def finished(self, index: int, problem: ProblemResult) -> None:
        if self.current is not None:
            self.bars.remove_task(self.current)
            self.current = None
        self.bars.advance(self.overall)
        where = f"L{problem.level}/{problem.id} {escape(problem.name)}"
        if problem.status == "skipped":
            line = f"[dim]skipped[/] {where}: {escape(problem.reason)}"
        elif problem.correct:
            speed = f"{problem.speedup_eager:.2f}x eager" if problem.speedup_eager else ""
            if problem.speedup_compile is not None:
                speed += f", {problem.speedup_compile:.2f}x torch.compile"
            line = f"[green]correct[/] {where}: {speed}"
        else:
            why = escape(clip(problem.reason or problem.verdict, 140))
            line = f"[red]{escape(problem.verdict or 'failed')}[/] {where}: {why}"
        self.console.print(line, highlight=False, soft_wrap=True)

    def note(self, text: str) -> None:
        self.console.print(f"[yellow]note:[/] {escape(text)}", highlight=False, soft_wrap=True)


@eval_app.command()
def pareval(
    path: Annotated[Path, typer.Argument(help="A clone of ParEval (its root directory).")],
    out_dir: Annotated[
        Path, typer.Option("--out", help="Where the tasks, the runs and the results go.")
    ] = Path("kernelwright-pareval"),
    problems: Annotated[
        str | None,
        typer.Option(help="Only these problems, by name: 00_transform_scale_from,..."),
    ] = None,
    budget: Annotated[
        int | None,
        typer.Option(min=1, help="Kernels per problem at most (default 10, the batch's)."),
    ] = None,
    resume: Annotated[
        bool, typer.Option("--resume", help="Continue the interrupted run in --out.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print pareval.json to stdout.")] = False,
    model: ModelFlag = None,
    minutes: Minutes = 60.0,
    plateau: Plateau = 4,
    no_memory: NoMemory = False,
) -> None:
    """Run the loop on each ParEval problem that converts into a cpp task and score it as
    ParEval does.

    Imports the clone's serial problems (as `kernelwright import pareval`) into --out/problems,
    runs them as a batch into --out/batch (report, runs, --resume), and prints ParEval's
    figures per problem type: build@1 and pass@1 over the kernels the loop checked, speedup@1
    over the correct ones against the C++ function on one core, and the run's own result
    (pass@n, speedup@n: each problem's best). Writes pareval.json and pareval.md to --out."""
    from kernelwright.agent.doors.batch_records import BatchState

    given = {"minutes": minutes, "plateau": plateau, "memory": not no_memory}
    loop = {k: v for k, v in given.items() if v != BatchState.model_fields[k].default}
    names = [n.strip() for n in problems.split(",") if n.strip()] if problems else None
    code = run_pareval_command(
        path,
        out_dir,
        names=names,
        budget=budget,
        resume=resume,
        as_json=as_json,
        model_name=model,
        loop=loop,
    )
    raise typer.Exit(code)


def run_pareval_command(
    clone: Path,
    out_dir: Path,
    *,
    names: list[str] | None = None,
    budget: int | None = None,
    resume: bool = False,
    as_json: bool = False,
    model_name: str | None = None,
    loop: dict[str, Any] | None = None,
    model: ChatModel | None = None,
    gpu: GpuBackend | None = None,
    device: DeviceInfo | None = None,
) -> int:
    """The command without typer (tests hand in a scripted model, a replay backend and a
    device). 0 when the run ended (failed problems are results), 2 bad input or a missing
    machine part (one line), 130 interrupted."""
    import contextlib
    import sys

    from kernelwright.agent.doors.cli_batch import run_batch_command
    from kernelwright.evals import pareval_run

    had = pareval_run.imported(out_dir) if out_dir.is_dir() else None
    created = not out_dir.exists()
    if resume and had is None:
        return _kb_error(f"no ParEval run to resume in {out_dir} (run it first without --resume)")
    if not resume and had is not None:
        return _kb_error(
            f"{out_dir} already holds a ParEval run: add --resume to continue it, or choose "
            "another --out"
        )
    if had is None:
        try:
            had = pareval_run.prepare(clone, out_dir, names)
        except (KernelwrightError, OSError) as exc:
            if created:
                shutil.rmtree(out_dir, ignore_errors=True)
            return _kb_error(str(exc))
        err.print(
            f"{len(had['problems'])} ParEval problems imported into "
            f"{out_dir / pareval_run.PROBLEMS} ({len(had['skipped'])} skipped: struct or "
            "string arguments, listed in pareval-import.json)",
            highlight=False,
            soft_wrap=True,
        )
    # the batch's own lines go to stderr with --json: stdout is pareval.json alone
    to = contextlib.redirect_stdout(sys.stderr) if as_json else contextlib.nullcontext()
    with to:
        code = run_batch_command(
            out_dir / pareval_run.PROBLEMS,
            out_dir / pareval_run.BATCH,
            budget=budget,
            resume=resume and (out_dir / pareval_run.BATCH).is_dir(),
            model_name=model_name,
            model=model,
            gpu=gpu,
            device=device,
            loop=loop,
        )
    if code == 2 and created:  # a missing part (the model, the GPU): nothing left behind
        shutil.rmtree(out_dir, ignore_errors=True)
    if code not in (0, 1):  # 1: a problem failed, which is a result here
        if code == 130:
            err.print(
                f"continue with `kernelwright eval pareval {clone} --out {out_dir} --resume`",
                highlight=False,
                soft_wrap=True,
            )
        return code
    data, rows = pareval_run.write(out_dir)
    if as_json:
        print(json.dumps(data, indent=2))
        return 0
    table = Table(title="ParEval figures (cpp problems, CUDA kernels)")
    for name in pareval_run.HEAD:
        table.add_column(name, justify="left" if name == "type" else "right")
    for row in rows:
        table.add_row(*row)
    out.print(table)
    out.print(f"{data['note']}; pareval.json and pareval.md in {escape(str(out_dir))}")
    return 0
