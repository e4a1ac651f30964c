"""`kernelwright tune` over the example kernels (not a timed test; run on a GPU machine):

    python -m kernelwright.evals.bench_tune [--tasks gelu,rowsum,...] [--kernels naive,faster]
        [--budget 24] [--minutes 3] [--numerics] [--json FILE]

For each example, tune its hand-written candidates/faster.cu (its knobs, which its launch
follows) and its naive reference kernel (its block shape, derived from the task's launch), each
over tune's whole space (register caps, ptxas levels and launch bounds too; with --numerics the
approximations the task's tolerance allows, and the line saying which), and print per kernel
the configurations checked, dropped unchecked (same code and launch, or no build), the time
spent, the best configuration and its gain over the kernel as given, its time a call and the
share of the roofline's speed it reaches (the task's [roofline] bytes and flops at the GPU's
peaks: how much room any configuration had), and the three configurations that read the highest
gains (kept or not; --json holds every one); then the
geometric mean gain over the already-optimized kernels (issue 16's target: at least +9%, no
kernel slower, at most 3 minutes a kernel). The gains are the verifier's own: per-round
speedup medians against the task's reference on the same inputs, in one process, side by side.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any, cast

from kernelwright.agent.options import local_gpu
from kernelwright.agent.settings import load
from kernelwright.agent.tune import tune
from kernelwright.tools import nvml
from kernelwright.tools.builds import BuildCache
from kernelwright.tools.results import DeviceInfo, TimingResult
from kernelwright.tools.spec import CudaCandidate
from kernelwright.tools.task import load_candidate, load_task, reference_candidate
from kernelwright.tools.timing import roofline_floor_ms

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
TASKS = ("gelu", "rowsum", "softmax", "matmul", "stencil", "transpose")
KERNELS = ("naive", "faster")


def bench(
    names: list[str], budget: int, minutes: float, numerics: bool, labels: tuple[str, ...] = KERNELS
) -> list[dict[str, Any]]:
    settings = load()
    device = nvml.device_info()
    arch = device.arch
    gpu = local_gpu(settings)
    rows: list[dict[str, Any]] = []
    try:
        for name in names:
            task = load_task(EXAMPLES / name)
            assert task.kind == "cuda"
            faster = EXAMPLES / name / "candidates" / "faster.cu"
            kernels = [("naive", reference_candidate(task))] if "naive" in labels else []
            if "faster" in labels and faster.is_file():
                kernels.append(("faster", load_candidate(task, faster)))
            for label, cand in kernels:
                found = tune(
                    task,
                    cast(CudaCandidate, cand),
                    gpu,
                    arch=arch,
                    backend=settings.compile_backend,
                    budget=budget,
                    max_seconds=minutes * 60,
                    numerics=numerics,
                    builds=BuildCache(settings.builds_dir),
                    progress=lambda m, n=name, k=label: print(f"  {n} {k}: {m}", flush=True),
                )
                rows.append(
                    {
                        "task": name,
                        "kernel": label,
                        "checked": len(found.tried),
                        "dropped": len(found.dropped),
                        "left": found.left,
                        "seconds": round(found.seconds, 1),
                        "best": found.best_config.describe(),
                        "gain": found.gain,  # never below 1: only a clear gain is kept
                        # each configuration checked: its verdict, speedup and gain
                        "tried": found.as_json()["tried"],
                        "numerics": found.numerics,
                        **_roofline(found.best_report.timing, task.roofline(), device),
                    }
                )
                row = rows[-1]  # said as it ends: a run cut short keeps what it measured
                print(
                    f"{name} {label}: {row['checked']} checked, {row['dropped']} dropped, "
                    f"{row['seconds']} s, gain {row['gain']:.3f} with {row['best']}"
                    + _floor_words(row),
                    flush=True,
                )
                gains = sorted(
                    (t for t in row["tried"] if t["gain"]), key=lambda t: -float(t["gain"])
                )
                if numerics:
                    print(f"  {found.numerics}", flush=True)
                print(
                    "  highest: "
                    + "; ".join(f"{t['config']} {float(t['gain']):.3f}" for t in gains[:3]),
                    flush=True,
                )
    finally:
        gpu.close()
    return rows


def _roofline(
    timing: TimingResult | None, work: tuple[float | None, float | None], device: DeviceInfo
) -> dict[str, float | None]:
    """The best's median ms a call and the task's roofline at the bench size (its [roofline]
    bytes at the GPU's peak DRAM bandwidth, its flops at the peak FP32 rate without tensor
    cores, the slower of the two): how much room was left for any configuration to find.
    (The verifier's own floor sets flops against 16 times that rate, a bound of what is
    possible, not of what these kernels could reach.)"""
    if timing is None:
        return {"ms": None, "floor_ms": None, "of_floor": None}
    peaks = (device.peak_dram_gbps, device.peak_fp32_tflops)
    ms, floor = timing.candidate.median_ms, roofline_floor_ms(*work, *peaks, fp32_times=1.0)
    return {
        "ms": ms,
        "floor_ms": floor,
        "of_floor": floor / ms if floor and ms > 0 else None,
    }


def _floor_words(row: dict[str, Any]) -> str:
    if row.get("of_floor") is None:
        return ""
    return f" ({row['ms']:.4f} ms a call, {100 * row['of_floor']:.0f}% of the roofline's speed)"


def print_table(rows: list[dict[str, Any]]) -> None:
    print(
        f"{'task':10} {'kernel':7} {'checked':>7} {'dropped':>7} {'s':>6} {'gain':>7} "
        f"{'ms':>8} {'roofline':>8}  best"
    )
    for r in rows:
        share = "-" if r.get("of_floor") is None else f"{100 * r['of_floor']:.0f}%"
        ms = "-" if r.get("ms") is None else f"{r['ms']:.4f}"
        print(
            f"{r['task']:10} {r['kernel']:7} {r['checked']:7d} {r['dropped']:7d} "
            f"{r['seconds']:6.0f} {r['gain']:7.3f} {ms:>8} {share:>8}  {r['best']}"
        )
    optimized = [r["gain"] for r in rows if r["kernel"] == "faster"]
    if optimized:
        geomean = math.exp(sum(math.log(g) for g in optimized) / len(optimized))
        print(f"geometric mean gain over the hand-optimized kernels: {geomean:.3f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--kernels", default=",".join(KERNELS), help="naive, faster or both")
    parser.add_argument("--budget", type=int, default=24)
    parser.add_argument("--minutes", type=float, default=3.0)
    parser.add_argument("--numerics", action="store_true")
    parser.add_argument("--json", type=Path)
    ns = parser.parse_args()
    labels = tuple(ns.kernels.split(","))
    if not labels or set(labels) - set(KERNELS):
        parser.error(f"--kernels takes naive, faster or both (comma-separated), not {ns.kernels!r}")
    rows = bench(ns.tasks.split(","), ns.budget, ns.minutes, ns.numerics, labels)
    if ns.json:
        ns.json.write_text(json.dumps(rows, indent=2))
    print_table(rows)


if __name__ == "__main__":
    main()
