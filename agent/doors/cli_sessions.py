"""`kernelwright chat` and `kernelwright mcp`: the commands of the two interactive doors,
registered on the main app in cli.py; the work lives in chat.py, mcp_server.py and jobs.py."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kernelwright.agent.settings import Settings, load

from .flags import ModelFlag

if TYPE_CHECKING:
    from .jobs import Machine

_STAND_INS_HELP = (
    "Testing only: a JSON file of scripted replies (and optionally recorded GPU reports) "
    "standing in for the model and the GPU."
)
StandIns = Annotated[
    Path | None, typer.Option("--test-stand-ins", hidden=True, help=_STAND_INS_HELP)
]


def chat(
    task: Annotated[
        Path | None,
        typer.Argument(help="A task to load first: directory, name.toml, name.cu or a .py."),
    ] = None,
    model: ModelFlag = None,
    test_stand_ins: StandIns = None,
) -> None:
    """Talk about a kernel in the terminal: load, profile, optimize, diff, keep; ask why."""
    from .chat import run

    settings = load(model=model)
    run(_machine(settings, test_stand_ins), task, settings.data_dir / "chat_history")


def mcp(
    http: Annotated[
        str | None,
        typer.Option(
            "--http",
            metavar="HOST:PORT",
            help="Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio.",
        ),
    ] = None,
    allow_remote: Annotated[
        bool,
        typer.Option(
            "--allow-remote",
            help="Serve --http on an address other than loopback: anyone who can reach it can "
            "run the tools (check_kernel runs the code it is given). A trusted network only.",
        ),
    ] = False,
    allowed_host: Annotated[
        list[str] | None,
        typer.Option(
            "--allowed-host",
            metavar="NAME",
            help="With --allow-remote: a further name or address clients reach the server by "
            "(its Host header); the bind address, and for 0.0.0.0 this machine's names, are in.",
        ),
    ] = None,
    model: ModelFlag = None,
    test_stand_ins: StandIns = None,
) -> None:
    """Serve kernelwright's tools to an IDE's assistant over MCP (stdio by default)."""
    from .mcp_server import address_free, is_loopback, parse_address, serve

    address = None
    if http is not None:
        try:
            address = parse_address(http)
            if not is_loopback(address[0]) and not allow_remote:
                raise ValueError(
                    f"{address[0]} is not this machine's loopback: anyone who can reach it could "
                    "run the tools, which run code (pass --allow-remote on a network you trust)"
                )
            address_free(*address)
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint="--http") from None
    settings = load(model=model)
    serve(_machine(settings, test_stand_ins), address, allowed_host or ())


def _machine(settings: Settings, stand_ins: Path | None) -> Machine:
    from .jobs import Machine

    if stand_ins is not None:
        from .stand_ins import machine_with_stand_ins

        return machine_with_stand_ins(settings, stand_ins)
    return Machine(settings)
