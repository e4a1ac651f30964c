"""`kernelwright mcp`: the tools an IDE's assistant calls (doctor, profile_kernel, check_kernel,
optimize_kernel, search_memory), served by the MCP SDK's `MCPServer` over stdio or streamable
HTTP. Bad input comes back as a tool error a person can read; the server goes on."""

from __future__ import annotations

import contextlib
import errno
import inspect
import socket
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any

import anyio
import anyio.from_thread
import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from kernelwright.agent import __version__
from kernelwright.agent.doors import jobs
from kernelwright.agent.formats import event_line
from kernelwright.agent.privacy import keep_traces_local
from kernelwright.agent.rundir import RunDir
from kernelwright.tools.backend import ReplayMiss
from kernelwright.tools.errors import KernelwrightError
from kernelwright.tools.results import Attempt, CheckReport
from kernelwright.tools.task import load_task

INSTRUCTIONS = """\
kernelwright makes CUDA kernels faster on this machine's GPU. A task is a path: a directory
holding name.cu + name.toml, the .toml or .cu itself, or a KernelBench .py problem. Start with
profile_kernel(task) to see how fast the kernel is and what limits it; check_kernel(task,
candidate) verifies and times your own rewrite (source text or a path) against the original;
optimize_kernel(task, budget) lets kernelwright's local model search for a faster kernel and
returns the best verified one. Only verified-correct kernels are ever reported as faster."""


class RunCancelled(Exception):
    """The client cancelled optimize_kernel: the loop stops at its next step."""


@contextmanager
def readable() -> Iterator[None]:
    """Failures of input or of the machine become tool errors a person can read."""
    try:
        yield
    except KernelwrightError as exc:
        raise ToolError(str(exc)) from None
    except ReplayMiss as exc:  # a recorded GPU was asked something it never saw
        raise ToolError(str(exc)) from None


TaskArg = Annotated[
    str,
    Field(
        description="A task on this machine: a directory, name.toml, name.cu, or a KernelBench "
        "problem's .py"
    ),
]
CandidateArg = Annotated[
    str | None,
    Field(
        description="CUDA source text, or the path of a .cu (a .toml holding [launch] beside it "
        "sets its launch); leave it out to check the task's own kernel against itself"
    ),
]
QueryArg = Annotated[
    str, Field(description="CUDA source (works best) or words, e.g. 'float4 loads in a reduction'")
]


def tool(server: MCPServer, *, read_only: bool) -> Callable[[Any], Any]:
    """server.tool with the docstring dedented as the description, and what the tool touches:
    nothing outside this machine; the read-only ones write nothing of the user's."""

    def register(fn: Any) -> Any:
        hints = ToolAnnotations(
            read_only_hint=read_only,
            destructive_hint=False,
            idempotent_hint=read_only,
            open_world_hint=False,
        )
        return server.tool(description=inspect.cleandoc(fn.__doc__ or ""), annotations=hints)(fn)

    return register


def build(machine: jobs.Machine) -> MCPServer:
    """The server with its tools, working on `machine` (tests hand in stand-ins there)."""
    server: MCPServer = MCPServer("kernelwright", version=__version__, instructions=INSTRUCTIONS)
    gpu = threading.Lock()  # one job on the GPU at a time: timings must not share it

    @tool(server, read_only=True)
    def doctor() -> dict[str, Any]:
        """Check this machine: GPU, CuPy, NVRTC, nvcc, Nsight Compute, Ollama and its model,
        the memory directory. Each check says ok or not, what was found, and the fix."""
        from kernelwright.agent.doors.doctor import run_checks

        checks = run_checks(machine.settings)
        return {
            "ready": all(c.ok for c in checks if c.required),
            "checks": [asdict(c) for c in checks],
        }

    @tool(server, read_only=True)
    def profile_kernel(task: TaskArg) -> dict[str, Any]:
        """Time a task's own kernel and profile it with Nsight Compute: median time with its
        spread, position against the roofline, registers and shared memory, and the
        bottleneck (memory-, compute- or latency-bound) where counters can be read."""
        with readable(), gpu:
            loaded = load_task(Path(task).expanduser())
            measured = jobs.measure(machine, loaded)
        t = measured.report.timing
        return {
            "task": loaded.name,
            "summary": measured.lines(),
            "median_ms": t.candidate.median_ms if t else None,
            "floor_ms": t.floor_ms if t else None,
            "profile": measured.profile.model_dump(mode="json"),
        }

    @tool(server, read_only=True)
    def check_kernel(task: TaskArg, candidate: CandidateArg = None) -> dict[str, Any]:
        """Verify a candidate against a task's original kernel (several sizes, one held out,
        every output element) and time both. `candidate` is CUDA source text or a path to a
        .cu (with an optional .toml holding [launch] beside it); without it, the task's own
        kernel is checked against itself (1.00x)."""
        with readable(), gpu:
            loaded = load_task(Path(task).expanduser())
            cand = jobs.parse_candidate(loaded, candidate)
            report = jobs.check_compiled(machine, loaded, cand)
        return check_answer(report)

    @tool(server, read_only=False)
    async def optimize_kernel(
        task: TaskArg,
        ctx: Context,
        budget: Annotated[int, Field(ge=1, le=200, description="candidates to try at most")] = 5,
        tune: Annotated[
            bool,
            Field(
                description="then tune the best kernel's knobs, block shape and compile options "
                "(a few minutes; false: leave it as the loop found it)"
            ),
        ] = True,
    ) -> dict[str, Any]:
        """Search for a faster version of a task's kernel (a CUDA task, or a KernelBench problem's
        Model as a ModelNew with custom CUDA) with kernelwright's local model:
        propose, compile, verify and time up to `budget` candidates, keeping only verified,
        faster ones, then (`tune`) tune the best one's launch and compile options. Progress is
        reported as it goes; returns the best kernel's source, its launch, the speedup, what
        tuning it found and the run's report."""
        stop = threading.Event()
        step = {"done": 0, "events": 0, "tune": 0}

        def progress(event: dict[str, Any]) -> None:
            if stop.is_set():
                raise RunCancelled
            attempt = event.get("attempt")
            total = float(budget)
            if isinstance(attempt, Attempt):
                step["done"], step["events"] = attempt.index, 0
                value = float(attempt.index)
            elif event.get("node") == "tune":  # after the loop: rises toward budget + 1
                step["tune"] += 1
                value, total = budget + step["tune"] / (step["tune"] + 1), budget + 1.0
            elif step["done"] >= budget:  # the run is ending: the result follows at once
                return
            else:  # within a candidate: rises toward the next whole number, never past it
                step["events"] += 1
                value = step["done"] + step["events"] / (step["events"] + 1)
            line = event_line(event)
            anyio.from_thread.run(ctx.report_progress, value, total, line)

        def work() -> jobs.RunOutcome:
            with readable(), gpu:
                return jobs.optimize(
                    machine,
                    Path(task).expanduser(),
                    budget=budget,
                    progress=progress,
                    tune=None if tune else False,  # on: as the settings say
                )

        try:
            outcome = await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            stop.set()
            raise
        return {
            "task": outcome.task,
            "best_speedup": outcome.best_speedup,
            "stop_reason": outcome.stop_reason,
            "best_source": outcome.best_source,
            "best_launch": outcome.best_launch,
            "best_kernel_path": str(RunDir(outcome.run_dir).best_file),
            "run_dir": str(outcome.run_dir),
            "attempts": [
                {
                    "index": a.index,
                    "tags": list(a.tags),
                    "verdict": a.verdict,
                    "speedup": a.speedup,
                    "kept": a.kept,
                    "reason": a.reason,
                    "explanation": a.explanation,
                }
                for a in outcome.attempts
            ],
            "tune": outcome.tune,
            "report": outcome.summary,
        }

    @tool(server, read_only=True)
    def search_memory(
        query: QueryArg, n: Annotated[int, Field(ge=1, le=50, description="results at most")] = 5
    ) -> dict[str, Any]:
        """Past attempts from kernelwright's memory nearest to `query` (CUDA source works
        best; words work too): their techniques, verdicts, speedups, GPU and source."""
        with readable():
            answer = jobs.search_memory(machine.settings, query, n)
        return {
            "memory": answer.where,
            "note": answer.note,
            "results": [
                {
                    "id": e.id,
                    "tags": list(e.tags),
                    "verdict": e.verdict,
                    "speedup": e.speedup,
                    "arch": e.arch,
                    "op_class": e.op_class,
                    "bottleneck": e.bottleneck,
                    "source": e.source,
                }
                for e in answer.episodes
            ],
        }

    return server


def check_answer(report: CheckReport) -> dict[str, Any]:
    t = report.timing
    summary = f"{report.verdict}: {report.reason}"
    if t is not None:
        summary += (
            f"; {t.speedup:.2f}x (reference {t.reference.median_ms:.4f} ms, "
            f"candidate {t.candidate.median_ms:.4f} ms)"
        )
    return {
        "verdict": report.verdict,
        "reason": report.reason,
        "speedup": t.speedup if t else None,
        "summary": summary,
        "report": report.model_dump(mode="json"),
    }


def serve(
    machine: jobs.Machine, http: tuple[str, int] | None = None, also: Sequence[str] = ()
) -> None:
    """Serve until the client goes (stdio) or the process is stopped (HTTP)."""
    keep_traces_local(machine.settings.allow_tracing)
    server = build(machine)
    try:
        if http is None:
            server.run()
        else:
            host, port = http
            guard = guarded(host, port, also)
            server.run("streamable-http", host=host, port=port, transport_security=guard)
    finally:
        machine.close()


def is_loopback(host: str) -> bool:
    """Whether HOST names this machine's loopback only (127.0.0.0/8, ::1, localhost)."""
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


WILDCARDS = ("0.0.0.0", "::", "")


def served_names(host: str, also: Sequence[str] = ()) -> list[str]:
    """The names a client may give as the Host of a server bound to `host`: the bind address
    itself; for a loopback one, loopback's names too; for a wildcard (0.0.0.0, ::), this
    machine's name, its full name and the addresses that name has; and `also` (--allowed-host).
    IPv6 addresses in brackets, as a Host header carries them."""
    names = [] if host in WILDCARDS else [host]
    if is_loopback(host) or host in WILDCARDS:
        names += ["127.0.0.1", "localhost", "::1"]
    if host in WILDCARDS:
        here = socket.gethostname()
        names += [here, socket.getfqdn()]
        with contextlib.suppress(OSError):
            names += [str(info[4][0]) for info in socket.getaddrinfo(here, None)]
    names += list(also)
    return [f"[{n}]" if ":" in n else n for n in dict.fromkeys(n for n in names if n)]


def guarded(host: str, port: int, also: Sequence[str] = ()) -> Any:
    """The HTTP transport's DNS-rebinding guard: requests must name this server as their Host
    (and Origin, where they carry one): served_names. The MCP SDK turns it on by itself for a
    loopback host only; on any other, a web page the user opened could reach the tools (a
    review showed a server on 0.0.0.0 answer a request from Host evil.example)."""
    from mcp.server.transport_security import TransportSecuritySettings

    names = served_names(host, also)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{n}:{port}" for n in names],
        allowed_origins=[f"http://{n}:{port}" for n in names],
    )


def parse_address(text: str) -> tuple[str, int]:
    """HOST:PORT (":PORT" means 127.0.0.1; "[::1]:PORT" for IPv6)."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{text!r} is not HOST:PORT (for example 127.0.0.1:8765)")
    return host.strip("[]") or "127.0.0.1", int(port)


def address_free(host: str, port: int) -> None:
    """ValueError in one line when HOST:PORT cannot be served: taken by another server, or not
    an address of this machine (the HTTP server would fail only after saying it started)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise ValueError(f"{host}:{port}: {exc.strerror or exc}") from None
    family, kind, proto, _, sockaddr = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server will
        try:
            probe.bind(sockaddr)
        except OSError as exc:
            why = "in use (another server is there?)" if exc.errno == errno.EADDRINUSE else exc
            raise ValueError(f"{host}:{port}: {why}") from None
