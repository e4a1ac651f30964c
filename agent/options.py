"""What every front door (`check`, `optimize`, `batch`, chat and MCP) takes from the user in one
place: the verifier's options and the local GPU from the settings, so all of them honour the
same settings, and the command-line flags they share."""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any

import typer

from kernelwright.agent.settings import Settings

if TYPE_CHECKING:
    from kernelwright.tools.backend import GpuBackend
    from kernelwright.tools.verify import VerifyOptions


class Backend(StrEnum):
    """The compile backends a flag may name."""

    nvrtc = "nvrtc"
    nvcc = "nvcc"


# Flags shared by the commands: the loop's on `optimize` and `batch` (there, per task), the
# model on every door that runs the loop, the compiler on `check`, `optimize` and `batch`.
Minutes = Annotated[float, typer.Option(min=0.1, help="Wall time budget in minutes.")]
Plateau = Annotated[
    int, typer.Option(min=1, help="Stop after this many candidates without a 2% gain.")
]
NoMemory = Annotated[bool, typer.Option("--no-memory", help="Neither read nor write the memory.")]
ModelFlag = Annotated[str | None, typer.Option(help="Ollama model (default: qwen2.5-coder:7b).")]
BackendFlag = Annotated[
    Backend | None, typer.Option(help="Compiler (default: the setting, nvrtc).")
]


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
        "build_cache_dir": str(settings.builds_dir),
    }
    return VerifyOptions(**{**fields, **overrides})


def local_gpu(settings: Settings) -> GpuBackend:
    """This machine's GPU with the verifier options the settings give; the caller closes it."""
    from kernelwright.tools.backend import LocalGpu

    return LocalGpu(verify_options(settings, prestart=True), settings.compile_backend)
