"""What can be checked against a cpp task (tools/cpp.py), beside nothing but its C++ function:

- `CppKernel`: a CUDA kernel and its launch, as for a CUDA task (device code only), with the
  GPU-side reference it is timed beside (`port`: the run's first correct port; None: the
  task's own port, else the kernel itself);
- `CppFunction`: the task's own C++ function, checked against itself on the CPU (a run's
  original: its time on one core is what the speedups are against);
- `HostFile`: a drop-in host file (best_host.cu: the function's own signature over a CUDA
  kernel, made by kernelwright), checked end to end against the C++ function.

Each says its kind (a ClassVar): the verifier picks how to check it by that (cpp_check.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Literal

from .errors import TaskError
from .files import read_text
from .spec import CudaCandidate, Frozen, load_cuda_candidate

# The first line kernelwright writes in a drop-in host file: how `check` tells it from a kernel.
HOST_MARK = "// kernelwright: drop-in host function"


def is_host_file(source: str) -> bool:
    """Whether a .cu file is a drop-in host file: HOST_MARK opens one of the comment lines it
    starts with (a first line as kernelwright writes it, or below a comment of the user's)."""
    for line in source.splitlines():
        text = line.strip()
        if text.startswith(HOST_MARK):
            return True
        if text and not text.startswith("//"):
            return False
    return False


class CppKernel(CudaCandidate):
    kind: ClassVar[Literal["cpp"]] = "cpp"  # type: ignore[assignment]
    port: CudaCandidate | None = None  # the GPU-side reference; None: the task's port or itself

    def worker_job(self, task_path: str) -> dict[str, Any]:
        return {"launch": self.launch.model_dump() if self.launch else None}


class _BuiltElsewhere(Frozen):
    """A candidate the compile worker never builds (g++ or nvcc do, with the task's wrapper),
    and the GPU's workers never run as a kernel."""

    path: str
    source: str

    def compile_flags(self, backend: str) -> tuple[str, ...]:
        return ()

    def worker_job(self, task_path: str) -> dict[str, Any]:
        return {}


class CppFunction(_BuiltElsewhere):
    kind: ClassVar[Literal["cpp-function"]] = "cpp-function"


class HostFile(_BuiltElsewhere):
    kind: ClassVar[Literal["cpp-host"]] = "cpp-host"


def load_cpp_candidate(task: Any, path: Path) -> CppKernel | HostFile:
    """A .cu file for a cpp task: a drop-in host file if kernelwright wrote it (is_host_file),
    else a kernel with an optional sidecar .toml ([launch], [compile])."""
    path = path.resolve()
    if path.suffix != ".cu":
        raise TaskError(path, "", "a candidate for a C++ task is a .cu file (a kernel, or a "
                        "drop-in best_host.cu)")  # fmt: skip
    try:
        source = read_text(path)
    except OSError as exc:
        raise TaskError(path, "", f"cannot read candidate: {exc.strerror}") from None
    if is_host_file(source):
        return HostFile(path=str(path), source=source)
    kernel = load_cuda_candidate(task.worker_task(), path)  # the kernel's own arguments
    return CppKernel(path=kernel.path, source=source, launch=kernel.launch, options=kernel.options)
