"""The verifier's options from the user's settings, built in one place for every front door
(`check`, `optimize`, `batch`, chat and MCP), so all of them honour the same settings."""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any

import typer

from kernelwright.agent.settings import Settings

if TYPE_CHECKING:
    from kernelwright.tools.verify import VerifyOptions


class Backend(StrEnum):
    """The compile backends a flag may name."""

    nvrtc = "nvrtc"
    nvcc = "nvcc"


# The loop's flags, the same on `optimize` and `batch` (there, per task).
Minutes = Annotated[float, typer.Option(min=0.1, help="Wall time budget in minutes (per task).")]
Plateau = Annotated[
    int, typer.Option(min=1, help="Stop after this many candidates without a 2% gain.")
]
NoMemory = Annotated[bool, typer.Option("--no-memory", help="Neither read nor write the memory.")]


def verify_options(settings: Settings, **overrides: Any) -> VerifyOptions:
    """`overrides`: what a door sets for itself (a loop's `prestart=True`)."""
    from kernelwright.tools.verify import VerifyOptions

    fields: dict[str, Any] = {
        "backend": settings.compile_backend,
        "run_timeout_s": settings.run_timeout_s,
        "compile_timeout_s": settings.compile_timeout_s,
        "timing_budget_s": settings.timing_budget_s,
        "host_memory_bytes": int(settings.worker_host_memory_gib * (1 << 30)),
        "cache_dir": str(settings.cache_dir / "cupy"),
        "build_cache_dir": str(settings.cache_dir / "builds"),
    }
    return VerifyOptions(**{**fields, **overrides})
