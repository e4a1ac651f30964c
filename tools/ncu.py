"""Nsight Compute: profile one launch of a kernel and read the few metrics that say what limits it.

ncu runs the sandboxed worker (role "profile") with `--clock-control none`, so its duration agrees
with event timing. Parsing is a pure function, tested on output recorded on a real H100.
"""

from __future__ import annotations

import csv
import io
import shutil
from typing import Any

from .results import ProfileResult

METRICS = {
    "gpu__time_duration.sum": "duration",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": "sm_pct",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": "dram_pct",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": "memory_pct",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "achieved_occupancy_pct",
    "sm__maximum_warps_per_active_cycle_pct": "theoretical_occupancy_pct",
    "launch__registers_per_thread": "registers_per_thread",
}
# A unit is "busy" above this share of its peak; below it on every unit, latency limits the kernel.
BUSY_PCT = 60.0


def command(entry: str, log_path: str) -> list[str]:
    ncu = shutil.which("ncu") or "ncu"
    return [
        ncu,
        "--csv",
        "--page",
        "raw",
        "--clock-control",
        "none",
        "--metrics",
        ",".join(METRICS),
        "-k",
        f"regex:^{entry}$",
        "-c",
        "1",
        "--log-file",
        log_path,
    ]


def bottleneck(sm_pct: float | None, memory_pct: float | None) -> str:
    """memory-bound, compute-bound or latency-bound, from throughput as % of peak (pure)."""
    if sm_pct is None and memory_pct is None:
        return "unknown"
    sm, mem = sm_pct or 0.0, memory_pct or 0.0
    if max(sm, mem) < BUSY_PCT:
        return "latency-bound"
    return "compute-bound" if sm >= mem else "memory-bound"


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


_TIME_SCALE_MS = {
    "ns": 1e-6,
    "nsecond": 1e-6,
    "us": 1e-3,
    "usecond": 1e-3,
    "ms": 1.0,
    "msecond": 1.0,
    "s": 1e3,
    "second": 1e3,
}


def parse(output: str) -> ProfileResult:
    """A ProfileResult from `ncu --csv --page raw` output, or why there is none (pure)."""
    if "ERR_NVGPUCTRPERM" in output:
        return ProfileResult(
            available=False,
            reason="profiling unavailable: no permission for GPU "
            "performance counters (ERR_NVGPUCTRPERM); see "
            "https://developer.nvidia.com/ERR_NVGPUCTRPERM",
        )
    lines = [ln for ln in output.splitlines() if ln.startswith('"')]
    if len(lines) < 3:
        for ln in output.splitlines():
            if ln.startswith("==ERROR==") or "No kernels were profiled" in ln:
                return ProfileResult(
                    available=False,
                    reason="profiling unavailable: " + ln.split("==", 2)[-1].strip(),
                )
        return ProfileResult(
            available=False, reason="profiling unavailable: ncu printed no metrics"
        )
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    header, units, data = rows[0], rows[1], rows[2]
    col = {name: i for i, name in enumerate(header)}
    values: dict[str, Any] = {}
    for metric, key in METRICS.items():
        i = col.get(metric)
        if i is None or i >= len(data):
            continue
        value = _number(data[i])
        if value is None:
            continue
        if key == "duration":
            values["duration_ms"] = value * _TIME_SCALE_MS.get(units[i].strip().lower(), 1e-6)
        elif key == "registers_per_thread":
            values[key] = int(value)
        else:
            values[key] = value
    name = data[col["Kernel Name"]] if "Kernel Name" in col else ""
    mem = max(
        (v for v in (values.get("dram_pct"), values.get("memory_pct")) if v is not None),
        default=None,
    )
    return ProfileResult.model_validate(
        {
            "available": True,
            "kernel_name": name,
            "bottleneck": bottleneck(values.get("sm_pct"), mem),
            **values,
        }
    )
