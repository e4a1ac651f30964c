"""Measure the shipped worked examples with the real verifier (run on a GPU machine):

    python -m kernelwright.evals.measure_examples [--dry-run] [--pairs NAME,...] [--index FILE]

For each pair of memory/examples/index.yaml it loads the pair's example task (examples/TASK),
checks the before kernel against the task (it must be correct), then checks the after kernel
with the before kernel as the timing reference, side by side in the verifier's rounds, so the
speedup is after over before. A KernelBench pair's before is its problem, PyTorch eager: the
after is checked against the problem itself. What it finds (measured, verdict, speedup, the GPU,
its architecture and the day) goes back into the index after each pair. Exit code 1 when a pair
was not verified correct, 2 for bad input. `--dry-run` only lists what it would check, after
loading each task and each side on the CPU (launches, signatures, ModelNew): no GPU needed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

from kernelwright.agent.kinds import as_candidate
from kernelwright.memory.shipped import (
    ShippedIndex,
    ShippedPair,
    ShippedSide,
    index_path,
    read_index,
    source,
    write_index,
)
from kernelwright.tools.backend import GpuBackend
from kernelwright.tools.errors import KernelwrightError
from kernelwright.tools.results import CheckReport
from kernelwright.tools.spec import CudaTask, check_signature
from kernelwright.tools.task import Candidate, Task, load_candidate, load_task

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

# (the task, and the before side as the reference it is timed against) -> the checks to run:
# [(label, task to check against, candidate)]; the last one's speedup is after over before.
Plan = list[tuple[str, Task, Candidate]]


def _cuda_plan(task: CudaTask, pair: ShippedPair, index: Path) -> Plan:
    sides = []
    for label, side in (("before", pair.before), ("after", pair.after)):
        code = source(pair, side, index)
        check_signature(Path(side.file), code, task.entry, task.args, Path(task.path))
        sides.append((label, as_candidate(task, code, side.launch, side.file)))
    (_, before), (_, after) = sides
    # the after kernel is timed against the before one: the task with the before as its kernel
    behind = task.model_copy(
        update={"source": before.source, "launch": before.launch or task.launch}
    )
    return [("before", task, before), ("after", behind, after)]


def _kernelbench_plan(task: Task, pair: ShippedPair, index: Path) -> Plan:
    if source(pair, pair.before, index).strip() != task.source.strip():
        raise KernelwrightError(f"{pair.name}: a KernelBench pair's before must be its problem")
    return [("after", task, load_candidate(task, index.parent / pair.after.file))]


PLANS: dict[str, Callable[[Any, ShippedPair, Path], Plan]] = {
    "cuda": _cuda_plan,
    "kernelbench": _kernelbench_plan,
}


def plan(pair: ShippedPair, index: Path, examples: Path) -> Plan:
    """The checks that measure one pair, loaded on the CPU; KernelwrightError if one cannot."""
    if pair.kind not in PLANS:
        raise KernelwrightError(f"{pair.name}: kind {pair.kind!r}: no way to measure it")
    task = load_task(examples / pair.task)
    if task.kind != pair.kind:
        raise KernelwrightError(f"{pair.name}: {pair.task} is a {task.kind} task, not {pair.kind}")
    return PLANS[pair.kind](task, pair, index)


def _launch(side: ShippedSide) -> str:
    if not side.launch:
        return side.file
    block, grid = (", ".join(str(v) for v in side.launch[k]) for k in ("block", "grid"))
    return f"{side.file} (block [{block}], grid [{grid}])"


def describe(pair: ShippedPair, checks: Plan) -> str:
    """What measuring the pair would do, in a line."""
    state = (
        f"measured {pair.verdict}"
        + (f" {pair.speedup:.2f}x" if pair.speedup else "")
        + f" on {pair.gpu} {pair.measured_on}"
        if pair.measured
        else "not measured"
    )
    steps = " then ".join(label for label, _, _ in checks)
    return (
        f"{pair.name}: {pair.technique} on examples/{pair.task}: {_launch(pair.before)} -> "
        f"{_launch(pair.after)}; checks {steps} ({state})"
    )


def measure(pair: ShippedPair, checks: Plan, gpu: GpuBackend) -> ShippedPair:
    """The pair with what the verifier found: correct with the after's speedup over the
    before, or which side failed and why."""
    report: CheckReport | None = None
    for label, task, candidate in checks:
        report = gpu.check(task, candidate)
        if not report.ok or report.timing is None:
            why = report.reason if not report.ok else "not timed"
            return _found(pair, report, f"{label} {report.verdict}: {why}"[:300], None)
    assert report is not None and report.timing is not None
    return _found(pair, report, "correct", round(report.timing.speedup, 3))


def _found(pair: ShippedPair, report: CheckReport, verdict: str, speedup: float | None) -> Any:
    from kernelwright.tools import nvml

    device = report.device or nvml.device_info()
    return pair.model_copy(
        update={
            "measured": True,
            "verdict": verdict,
            "speedup": speedup,
            "gpu": device.name,
            "arch": device.arch,
            "measured_on": date.today().isoformat(),
        }
    )


def _replace(index: ShippedIndex, pair: ShippedPair) -> ShippedIndex:
    pairs = tuple(pair if p.name == pair.name else p for p in index.pairs)
    return ShippedIndex.model_validate({**index.model_dump(), "pairs": pairs})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--dry-run", action="store_true", help="list what it would check")
    parser.add_argument("--pairs", help="only these pairs, by name, comma-separated")
    parser.add_argument("--index", type=Path, default=None, help="the index (the shipped one)")
    parser.add_argument("--examples", type=Path, default=EXAMPLES, help="the example tasks")
    ns = parser.parse_args(argv)
    path = ns.index or index_path()
    try:
        index = read_index(path)
        wanted = [p.name for p in index.pairs]
        if ns.pairs:
            names = [n.strip() for n in ns.pairs.split(",") if n.strip()]
            unknown = [n for n in names if n not in wanted]
            if unknown:
                raise KernelwrightError(f"{path}: no pair {unknown[0]!r} (see --dry-run)")
            wanted = names
        pairs = [p for p in index.pairs if p.name in wanted]
        plans = [(p, plan(p, path, ns.examples)) for p in pairs]
    except KernelwrightError as exc:
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    if ns.dry_run:
        for pair, checks in plans:
            print(describe(pair, checks))
        print(f"{len(plans)} pair(s) would be measured and written into {path}")
        return 0
    from kernelwright.agent.options import local_gpu
    from kernelwright.agent.settings import load

    gpu = local_gpu(load(), prestart=False)
    try:
        return measure_all(index, plans, path, gpu)
    finally:
        gpu.close()


def measure_all(
    index: ShippedIndex, plans: list[tuple[ShippedPair, Plan]], path: Path, gpu: GpuBackend
) -> int:
    """Measures each planned pair and writes the index after each; 1 if one was not correct."""
    failed = 0
    for pair, checks in plans:
        print(f"measuring {describe(pair, checks)}", flush=True)
        found = measure(pair, checks, gpu)
        speed = f", {found.speedup:.3f}x" if found.speedup else ""
        print(f"  {found.verdict}{speed} on {found.gpu} ({found.arch})", flush=True)
        failed += found.verdict != "correct"
        index = _replace(index, found)
        write_index(index, path)  # after each pair: a killed run keeps what it measured
    print(f"measured {len(plans)} pair(s), {failed} not correct; written into {path}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
