"""compute-sanitizer on a candidate: memcheck, racecheck, initcheck and synccheck over one launch
(CUDA tasks) or one forward (KernelBench) at a small size, inside the same confinement as a
check: the confined worker runs the sanitizer on a one-shot child in its own namespaces, so a
candidate's Python is never run outside its sandbox. A finding is a verdict with its reason:
a race that happens to give the right answer today (a warp-synchronous reduction without
__syncwarp, a missing __syncthreads) is still wrong.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

from .protocol import Expect
from .results import SanitizeResult
from .sandbox import Sandbox, WorkerFailure, cap
from .task import Candidate, Task

TOOLS = ("memcheck", "racecheck", "initcheck", "synccheck")
# PyTorch's own kernels read memory its caching allocator never initialised: initcheck would
# blame the candidate for torch. A KernelBench forward gets the other three.
TORCH_TOOLS = ("memcheck", "racecheck", "synccheck")
KIND_TOOLS = {"cuda": TOOLS, "kernelbench": TORCH_TOOLS, "cpp": TOOLS}  # for each task kind
_SUMMARY = re.compile(r"ERROR SUMMARY:\s*(\d+)\s+error")
_RACES = re.compile(r"RACECHECK SUMMARY:.*?\((\d+)\s+errors?,\s*(\d+)\s+warnings?")
_NOISE = re.compile(r"^=+\s*(COMPUTE-SANITIZER|ERROR SUMMARY|RACECHECK SUMMARY|$)")


def available() -> str | None:
    """The compute-sanitizer executable, or None."""
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    for root in ("/usr/local/cuda/bin", "/opt/cuda/bin"):
        if (Path(root) / "compute-sanitizer").is_file():
            return str(Path(root) / "compute-sanitizer")
    return None


def parse(tool: str, text: str) -> tuple[int | None, list[str]]:
    """(errors, first findings) from one tool's output; None errors if it never summarised."""
    races = _RACES.search(text)
    if races:  # a hazard it only warns of is still a race between threads
        return int(races[1]) + int(races[2]), _findings(text)
    m = _SUMMARY.search(text)
    return (int(m[1]) if m else None), _findings(text)


def _findings(text: str) -> list[str]:
    lines = [
        ln.strip("= ").strip()
        for ln in text.splitlines()
        if ln.startswith("=========") and not _NOISE.match(ln) and ln.strip("= ").strip()
    ]
    return lines[:6]


def small_sizes(task: Task) -> dict[str, int]:
    """The largest check size (CUDA tasks), or a small batch (KernelBench): enough threads and
    blocks for a race to show, small enough for the sanitizer's slowdown."""
    return task.small_sizes()


def sanitize(
    task: Task,
    candidate: Candidate,
    backend: str = "nvrtc",
    timeout_s: float = 600.0,
    tools: tuple[str, ...] | None = None,
) -> SanitizeResult:
    """Run each tool; any error it reports makes the result not ok, with the first finding."""
    from .compile import compile_in_sandbox
    from .nvml import device_info

    sanitizer = available()
    if sanitizer is None:
        return SanitizeResult(available=False, reason="compute-sanitizer not found on PATH")
    tools = tools or KIND_TOOLS[task.kind]
    sizes = small_sizes(task)
    arrays: list[bytes] = []
    view = task.worker_task().model_dump()  # as the workers see it (a C++ task: its CUDA view)
    job: dict[str, Any] = {"role": "sanitize", "task": view, "trials": [],
                           "tools": list(tools), "sanitizer": sanitizer, "sizes": sizes,
                           "timeout_s": timeout_s, "limits": {"file_bytes": 1 << 30}}  # fmt: skip
    entry = task.compile_entry  # None: the worker imports the candidate itself
    if entry is not None:
        flags = candidate.compile_flags(backend)
        compiled, cubin = compile_in_sandbox(
            candidate.source, entry, device_info().arch, backend, flags=flags
        )
        if cubin is None:
            return SanitizeResult(
                available=False, reason=f"does not compile: {compiled.first_error}"
            )
        arrays = [cubin]
    job["files"] = task.candidate_files(candidate.path, candidate.source)
    job["candidate"] = candidate.worker_job(task.path)
    try:
        with Sandbox("sanitize") as box:
            box.send(job, arrays)
            box.receive(120, "starting the sanitizer's worker", Expect(sizes=()))
            header, _ = box.receive(timeout_s * len(tools) + 60, "sanitizing", Expect(sizes=()))
    except WorkerFailure as failure:
        return SanitizeResult(
            available=False, reason=f"the sanitizer's worker failed: {failure.reason}"
        )
    return judge(header, sizes)


def judge(header: dict[str, Any], sizes: dict[str, int]) -> SanitizeResult:
    """The result from the worker's report of each tool's raw output (pure)."""
    runs = header.get("tools")
    if header.get("type") != "sanitized" or not isinstance(runs, dict):
        return SanitizeResult(available=False, reason="the sanitizer's worker sent no report")
    errors, findings, missing = {}, [], []
    for tool, raw in runs.items():
        n, lines = parse(str(tool), str(raw)[-200_000:])
        if n is None:
            missing.append(str(tool))
            continue
        errors[str(tool)] = n
        if n:
            findings += [f"{tool}: {cap(line, 300)}" for line in lines[:3]] or [
                f"{tool}: {n} errors"
            ]
    if missing and not errors:
        return SanitizeResult(
            available=False, reason="compute-sanitizer gave no summary for " + ", ".join(missing)
        )
    bad = {t: n for t, n in errors.items() if n}
    reason = ""
    if bad:
        reason = "compute-sanitizer " + ", ".join(f"{t}: {n} errors" for t, n in bad.items())
        reason += f" at {', '.join(f'{k}={v}' for k, v in sizes.items()) or 'its size'}"
        reason += f" ({findings[0].split(': ', 1)[1]})" if findings else ""
    return SanitizeResult(
        available=True, ok=not bad, reason=cap(reason), errors=errors,
        findings=tuple(findings[:12]), sizes=sizes,
    )  # fmt: skip
