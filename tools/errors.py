"""Failures of the machine or of the user's input are exceptions; failures of a kernel are values.

Every exception here carries a message a user can act on in one line.
"""


class KernelwrightError(Exception):
    """Base class: caught once at the front door and printed as one line."""


class TaskError(KernelwrightError):
    """A task or candidate file is malformed: the message names the file and the field."""

    def __init__(self, path: object, field: str, problem: str) -> None:
        self.path = str(path)
        self.field = field
        self.problem = problem
        where = f"{self.path}: {field}: " if field else f"{self.path}: "
        super().__init__(where + problem)


class NoGpuError(KernelwrightError):
    """No usable NVIDIA GPU (no driver, no device, or CuPy cannot reach it)."""


class ToolMissingError(KernelwrightError):
    """A required external tool (nvcc, ncu, NVRTC) is not installed."""


class WorkerError(KernelwrightError):
    """The sandboxed worker could not be started or broke the protocol for a reason of ours."""
