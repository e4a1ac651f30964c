"""The verifier's options and the local GPU, built from the settings in one place, so every
front door (`check`, `optimize`, `batch`, chat and MCP) and the loop honour the same settings."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kernelwright.agent.settings import Settings

if TYPE_CHECKING:
    from pathlib import Path

    from kernelwright.tools.backend import GpuBackend
    from kernelwright.tools.pool import Pool
    from kernelwright.tools.verify_options import VerifyOptions


def verify_options(settings: Settings, **overrides: Any) -> VerifyOptions:
    """`overrides`: what a door sets for itself (a loop's `prestart=True`)."""
    from kernelwright.tools.verify_options import VerifyOptions

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
    settings: Settings,
    *,
    prestart: bool = True,
    progress: Callable[[str], None] | None = None,
    pool: Pool | None = None,
) -> GpuBackend:
    """This machine's GPU with the verifier options the settings give; the caller closes it.
    `prestart`: start the next check's workers while this one runs (a loop's many checks; a
    one-off check does without). `progress` hears each check's steps. `pool`: head_start's,
    made with the same settings and `prestart`."""
    from kernelwright.tools.backend import LocalGpu

    options = verify_options(settings, prestart=prestart)
    return LocalGpu(options, settings.compile_backend, progress, pool)


def head_start(settings: Settings, task: Path, *, prestart: bool = False) -> Pool | None:
    """The workers a first check of `task` takes, starting now, before the door imports the
    verifier and loads the task: handed to local_gpu (with the same `prestart`), or closed by
    the caller. The kind is told from the path (a .py is a KernelBench problem); a wrong guess
    costs only idle workers, stopped with the pool. None where there is no GPU (its error then
    comes where it always did, after any error in the task). Where the driver's device nodes
    are here, the workers start before NVML does (its start took hundreds of ms of a one-off
    check's critical path): the door's own NVML call (jobs.Machine.gpu) then runs beside their
    imports, and says what is wrong if there is no working GPU after all (the pool is then
    closed with the machine, its workers never used)."""
    from kernelwright.tools import nvml, pool
    from kernelwright.tools.errors import NoGpuError

    if not nvml.nodes_present():
        try:  # no node where the driver usually puts one: NVML decides
            nvml.device_info()
        except NoGpuError:
            return None
    made = pool.for_options(verify_options(settings, prestart=prestart))
    made.head_start("kernelbench" if task.suffix == ".py" else "cuda")
    return made
