"""The `kernelwright` command. Progress goes to stderr, results to stdout (`--json` for machines).

Exit codes: 0 success, 1 the job ran and said no (a wrong kernel, a failed check), 2 bad input
or a missing machine part, printed as one line without a traceback.
"""

from __future__ import annotations

import json
import signal
import sys
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kernelwright.agent import __version__
from kernelwright.agent.privacy import keep_traces_local
from kernelwright.agent.settings import load
from kernelwright.tools.errors import KernelwrightError, NoGpuError

from .cli_batch import batch
from .cli_eval import eval_app
from .cli_import import import_app
from .cli_memory import memory_app
from .cli_sessions import chat, mcp
from .flags import BackendFlag, Minutes, ModelFlag, NoMemory, NoTune, Plateau

app = typer.Typer(
    name="kernelwright",
    add_completion=False,
    no_args_is_help=True,
    help="Make CUDA kernels faster on your own GPU.",
    context_settings={"help_option_names": ["-h", "--help"]},
)
out = Console()
err = Console(stderr=True)
app.add_typer(memory_app, name="memory")
app.add_typer(eval_app, name="eval")
app.add_typer(import_app, name="import")


def _version(value: bool) -> None:
    if value:
        print(f"kernelwright {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    pass


@app.command()
def doctor(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    model: Annotated[
        str | None, typer.Option(help="The Ollama model to look for (default: the setting).")
    ] = None,
) -> None:
    """Check the GPU, driver, compilers, Nsight Compute, Ollama and the memory directory."""
    from .doctor import as_json as doctor_json
    from .doctor import run_checks

    with err.status("checking the machine..."):
        checks = run_checks(load(model=model))
    ok = all(c.ok for c in checks if c.required)
    if as_json:
        print(doctor_json(checks))
    else:
        for c in checks:
            mark = (
                "[green]ok[/]  " if c.ok else ("[red]FAIL[/]" if c.required else "[yellow]warn[/]")
            )
            fix = f"  [dim]fix: {c.fix}[/]" if c.fix and not c.ok else ""
            # one line per check even when piped (| grep FAIL): no wrapping at 80 columns
            out.print(f"{mark} {c.name:<11} {c.detail}{fix}", highlight=False, soft_wrap=True)
        out.print("ready" if ok else "[red]not ready:[/] fix the FAIL lines above", highlight=False)
    raise typer.Exit(0 if ok else 1)


@app.command()
def check(
    task: Annotated[
        Path,
        typer.Argument(
            help="A task: directory, name.toml, name.cu, name.cpp, or a KernelBench .py."
        ),
    ],
    candidate: Annotated[
        Path | None,
        typer.Argument(
            help="A candidate .cu (or .py with ModelNew); default: the task's own kernel."
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the full report as JSON.")] = False,
    profile: Annotated[
        bool,
        typer.Option(
            "--profile/--no-profile", help="Profile with Nsight Compute for the bottleneck."
        ),
    ] = True,
    backend: BackendFlag = None,
    sanitize: Annotated[
        bool,
        typer.Option(
            "--sanitize",
            help="Also run compute-sanitizer (memcheck, racecheck, initcheck, synccheck) on a "
            "small size; any finding makes the verdict wrong.",
        ),
    ] = False,
) -> None:
    """Verify and time CANDIDATE against TASK's reference (by default the reference itself)."""
    from kernelwright.agent.options import head_start
    from kernelwright.tools.protocol import process_age_ms

    # where this command's own time goes around the check, in --json's command_ms
    spent: dict[str, float] = {"before the workers": process_age_ms() or 0.0}
    mark = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal mark
        now = time.perf_counter()
        spent[name] = round((now - mark) * 1e3, 1)
        mark = now

    settings = load(compile_backend=backend.value if backend else None)
    # one check: no spare workers started for a next one; its own workers start first, and
    # import PyTorch or CuPy while this process imports the verifier and loads the task
    head = head_start(settings, task, prestart=False)
    lap("starting them")
    try:
        from kernelwright.agent.doors import jobs
        from kernelwright.tools.task import load_candidate, load_task, reference_candidate

        loaded = load_task(task)
        cand = load_candidate(loaded, candidate) if candidate else reference_candidate(loaded)
        with err.status(f"checking {loaded.name}...") as status:

            def step(msg: str) -> None:
                status.update(f"{loaded.name}: {msg}")

            machine = jobs.Machine(settings, prestart=False, progress=step, pool=head)
            head = None  # the machine's now
            lap("until the check")
            try:
                report = jobs.check(
                    machine, loaded, cand, sanitize=sanitize, profile=profile, step=step
                )
                lap("check")
            finally:
                machine.close()
            lap("close")
    finally:
        if head is not None:  # the task or candidate did not load: its workers stop
            head.close()
    if report.sanitizer is not None and not report.sanitizer.available:
        err.print(f"[yellow]compute-sanitizer did not run: {escape(report.sanitizer.reason)}[/]")
    report = report.model_copy(update={"command_ms": spent})
    if as_json:
        print(json.dumps(report.model_dump(mode="json"), indent=2))
    else:
        _print_report(report)
    raise typer.Exit(0 if report.ok else 1)


@app.command()
def optimize(
    task: Annotated[
        Path,
        typer.Argument(
            help="A task: directory, name.toml, name.cu, name.cpp, or a KernelBench .py."
        ),
    ],
    model: ModelFlag = None,
    budget: Annotated[int, typer.Option(min=1, help="Candidates to try at most.")] = 10,
    minutes: Minutes = 60.0,
    plateau: Plateau = 4,
    resume: Annotated[
        bool, typer.Option("--resume", help="Continue the unfinished run of TASK.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    no_memory: NoMemory = False,
    no_tune: NoTune = False,
) -> None:
    """Make TASK's kernel faster: propose, compile, verify, reflect, until a budget or plateau.

    Then the best kernel is tuned (kernelwright tune, with the settings' [tune] limits): a
    winning launch and compile options go into the run's best.toml, and the end shows what
    was tried. --no-tune leaves it as the loop found it."""
    from rich.text import Text

    from kernelwright.agent.doors import jobs
    from kernelwright.agent.formats import (
        attempt_text,
        search_event_line,
        search_table,
        tune_outcome,
        tune_table,
    )
    from kernelwright.agent.rundir import RunDir
    from kernelwright.tools.results import Attempt

    settings = load(model=model)
    state = {"best": 1.0, "n": 0}

    def progress(event: dict[str, object]) -> None:
        attempt = event.get("attempt")
        if isinstance(attempt, Attempt):
            state["n"] = attempt.index
            state["best"] = float(event.get("best_speedup") or state["best"])  # type: ignore[arg-type]
            err.print(Text("  ") + attempt_text(attempt), highlight=False)
        if (line := search_event_line(event)) is not None:
            err.print(Text(f"  {line}"), highlight=False)
        status.update(
            f"{task.name}: candidate {state['n'] + 1}/{budget} · {event.get('node')}: "
            f"{event.get('message', '')} · best {state['best']:.2f}x"
        )

    machine = jobs.Machine(settings)
    try:
        with err.status(f"{task.name}: starting") as status:
            run = jobs.optimize(
                machine,
                task,
                budget=budget,
                max_seconds=minutes * 60,
                plateau=plateau,
                resume=resume,
                progress=progress,
                memory=False if no_memory else None,
                tune=False if no_tune else None,
            )
    finally:
        machine.close()
    best_kernel = RunDir(run.run_dir).best_file
    if as_json:
        print(
            json.dumps(
                {
                    "run_dir": str(run.run_dir),
                    "stop_reason": run.stop_reason,
                    "best_speedup": run.best_speedup,
                    "best_kernel": str(best_kernel),
                    "attempts": [a.model_dump(mode="json") for a in run.attempts],
                    "choices": [c.model_dump(mode="json") for c in run.choices],
                    "tune": run.tune,
                },
                indent=2,
            )
        )
        return
    if run.tune is not None:
        if (table := tune_table(run.tune, "Tuning the best kernel")) is not None:
            out.print(table)
        out.print(Text(f"tune: {tune_outcome(run.tune)}"), soft_wrap=True)
    out.print(
        f"[bold]{run.best_speedup:.2f}x[/] over the original, "
        f"{len(run.attempts)} candidates, stopped: {run.stop_reason}",
        highlight=False,
    )
    out.print(
        f"best kernel: {best_kernel}   summary: {run.run_dir / 'summary.md'}",
        highlight=False,
        soft_wrap=True,
    )
    if (table := search_table({"choices": run.choices, "attempts": run.attempts})) is not None:
        out.print(table)


@app.command()
def tune(
    task: Annotated[Path, typer.Argument(help="A CUDA task: directory, name.toml or name.cu.")],
    candidate: Annotated[
        Path | None,
        typer.Argument(help="A correct kernel .cu to tune; default: the task's own kernel."),
    ] = None,
    budget: Annotated[
        int | None,
        typer.Option(min=1, help="Configurations to check at most (default: the setting, 24)."),
    ] = None,
    minutes: Annotated[
        float | None,
        typer.Option(min=0.1, help="Wall time budget in minutes (default: the setting, 3)."),
    ] = None,
    numerics: Annotated[
        bool,
        typer.Option(
            "--numerics",
            help="Also try fast math, flush-to-zero and approximate division and sqrt (each "
            "checked against the task's tolerance).",
        ),
    ] = False,
    backend: BackendFlag = None,
    no_memory: NoMemory = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Search a correct kernel's knobs, block shape and compile options on this GPU, no model.

    Its #ifndef knobs (a launch in its .toml may name them), its block shape where the launch
    fixes it, a register cap, the ptxas level, launch bounds given to ptxas, and with
    --numerics the approximations the task's tolerance allows; earlier winners on this GPU
    architecture are tried first, and each configuration checked is remembered. One is kept
    only if the verifier finds it correct and at least 2% faster with spreads apart; then
    NAME.tuned.cu and NAME.tuned.toml are written beside the kernel (check them with
    `kernelwright check TASK NAME.tuned.cu`)."""
    from rich.text import Text

    from kernelwright.agent.doors import jobs
    from kernelwright.agent.formats import tune_outcome, tune_table
    from kernelwright.agent.tune import NOT_ASKED, write_tuned
    from kernelwright.tools.task import load_candidate, load_task, reference_candidate

    settings = load(compile_backend=backend.value if backend else None)
    loaded = load_task(task)
    cand = load_candidate(loaded, candidate) if candidate else reference_candidate(loaded)
    with err.status(f"tuning {loaded.name}...") as status:

        def step(msg: str) -> None:
            status.update(f"{loaded.name}: {msg}")

        machine = jobs.Machine(settings, progress=step)
        try:
            found = jobs.tune(
                machine,
                loaded,
                cand,
                budget=budget,
                max_seconds=minutes * 60 if minutes else None,
                numerics=numerics or None,
                memory=False if no_memory else None,
                progress=step,
            )
        finally:
            machine.close()
    written, kept = write_tuned(found.best, loaded.name) if found.improved else (None, None)
    data = found.as_json(written)
    if kept is not None:
        data["earlier_kept"] = str(kept)
    if as_json:
        print(json.dumps({"task": loaded.name, **data}, indent=2))
        return
    if (table := tune_table(data, f"{loaded.name}: configurations checked")) is not None:
        out.print(table)
    out.print(Text(tune_outcome(data)), soft_wrap=True)
    if data.get("numerics", NOT_ASKED) != NOT_ASKED:  # what was tried, and why not the rest
        out.print(Text(str(data["numerics"])), soft_wrap=True)
    if written is not None:
        out.print(Text(f"written: {written} (+ .toml)"), soft_wrap=True)
    if written is not None and kept is not None:
        was = written.name if kept.suffix == ".cu" else written.with_suffix(".toml").name
        out.print(Text(f"the earlier {was} kept as {kept}"), soft_wrap=True)


def _print_report(report: object) -> None:
    from kernelwright.tools.results import CheckReport

    assert isinstance(report, CheckReport)
    color = "green" if report.ok else "red"
    out.print(f"[bold {color}]{report.verdict}[/]: {report.reason}", highlight=False)
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="dim")
    table.add_column()
    if report.device:
        table.add_row("device", f"{report.device.name} ({report.device.arch})")
    c = report.compile
    if c and c.ok and c.backend == "python":
        table.add_row("load", f"ModelNew built in {c.duration_ms:.0f} ms")
    elif c and c.ok:
        spills = (c.spill_stores_bytes or 0) + (c.spill_loads_bytes or 0)
        table.add_row(
            "compile",
            f"{c.backend} {c.duration_ms:.0f} ms{' (built before: reused)' if c.cached else ''}, "
            f"{c.registers} registers, "
            f"{c.shared_mem_bytes} B shared, {c.local_mem_bytes} B stack, "
            f"{spills} B spilled",
        )
    t = report.timing
    if t:
        table.add_row(
            "reference",
            f"{t.reference.median_ms:.4f} ms ± {t.reference.iqr_ms / 2:.4f} "
            f"(median ± half IQR, {t.reference.samples} samples)",
        )
        table.add_row("candidate", f"{t.candidate.median_ms:.4f} ms ± {t.candidate.iqr_ms / 2:.4f}")
        if report.speedups is None:
            table.add_row(
                "speedup",
                f"{t.speedup:.2f}x (IQR {t.speedup_iqr:.3f}, {t.rounds} rounds, fresh inputs "
                "each, in separate processes)",
            )
        else:
            _speedup_rows(table, report.speedups)
        if t.charged_us:
            table.add_row("charged", f"{t.charged_us:.0f} us per call (the controller's clock)")
        if t.floor_ms:
            table.add_row(
                "roofline",
                f"floor {t.floor_ms:.4f} ms: candidate at "
                f"{t.floor_ms / t.candidate.median_ms:.0%} of the bound",
            )
        if t.clocks_after:
            ck = t.clocks_after
            table.add_row(
                "clocks",
                f"SM {ck.sm_mhz} MHz, memory {ck.mem_mhz} MHz, {ck.temperature_c} C"
                + (f", throttle: {', '.join(ck.throttle_reasons)}" if ck.throttle_reasons else ""),
            )
        for note in t.notes:
            table.add_row("note", note)
    p = report.profile
    if p:
        if p.available:
            table.add_row(
                "bottleneck",
                f"{p.bottleneck} (SM {p.sm_pct:.0f}%, DRAM {p.dram_pct:.0f}%, "
                f"occupancy {p.achieved_occupancy_pct:.0f}% of "
                f"{p.theoretical_occupancy_pct:.0f}%, ncu {p.duration_ms:.4f} ms)",
            )
        else:
            table.add_row("bottleneck", p.reason)
    if report.check:
        table.add_row(
            "checked", f"{len(report.check.trials)} trials against {report.check.reference}"
        )
    table.add_row("wall", f"{report.wall_ms / 1e3:.2f} s")
    out.print(table)


def _speedup_rows(table: Table, speedups: object) -> None:
    """A C++ task's three speedups, each labelled with what it is against."""
    from kernelwright.agent.kinds_cpp import speedup_rows
    from kernelwright.tools.results import Speedups

    assert isinstance(speedups, Speedups)
    for label, text in speedup_rows(speedups):
        table.add_row(label, text)


def _fail(message: str) -> None:
    from kernelwright.agent.formats import error_line

    err.print(error_line(message), highlight=False, soft_wrap=True)
    sys.exit(2)


app.command()(chat)
app.command()(mcp)


app.command("batch")(batch)


def _terminated(signum: int, _frame: object) -> None:
    """SIGTERM (a scheduler's `timeout`, a CI runner) ends the run as Ctrl-C does: every
    `with` unwinds, so the workers (each in its own session) are killed, not left running."""
    raise SystemExit(128 + signum)


def main() -> None:
    """Entry point: the app's own exit codes, and one line for our errors."""
    keep_traces_local()  # first: no prompt, trace or kernel goes to LangSmith or OpenTelemetry
    signal.signal(signal.SIGTERM, _terminated)
    try:
        app()  # standalone: typer prints usage errors and exits with their codes
    except NoGpuError as exc:
        _fail(str(exc))
    except KernelwrightError as exc:
        _fail(str(exc))
