"""The verifier's options and the local GPU, built from the settings in one place, so every
front door (`check`, `optimize`, `batch`, chat and MCP) and the loop honour the same settings."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kernelwright.agent.settings import Settings

if TYPE_CHECKING:
    from kernelwright.tools.backend import GpuBackend
    from kernelwright.tools.verify import VerifyOptions


def verify_options(settings: Settings, **overrides: Any) -> VerifyOptions:
    """`overrides`: what a door sets for itself (a loop's `prestart=True`)."""
    from kernelwright.tools.verify import VerifyOptions

    fields: dict[str, Any] = {
        "backend": settings.compile_backend,
        "run_timeout_s": settings.run_timeout_s,
        "compile_timeout_s": settings.compile_timeout_s,
        "timing_budget_s": settings.timing_budget_s,
        "timing_processes": settings.timing_processes,
        "host_memory_bytes": int(settings.worker_host_memory_gib * (1 << 30)),
        "cache_dir": str(settings.cache_dir / "cupy"),
        "build_cache_dir": str(settings.builds_dir),
        "reference_cache_dir": str(settings.cache_dir / "cpp"),  # as `import pareval --check`
    }
    return VerifyOptions(**{**fields, **overrides})


def local_gpu(
    settings: Settings, *, prestart: bool = True, progress: Callable[[str], None] | None = None
) -> GpuBackend:
    """This machine's GPU with the verifier options the settings give; the caller closes it.
    `prestart`: start the next check's workers while this one runs (a loop's many checks; a
    one-off check does without). `progress` hears each check's steps."""
    from kernelwright.tools.backend import LocalGpu

    options = verify_options(settings, prestart=prestart)
    return LocalGpu(options, settings.compile_backend, progress)
