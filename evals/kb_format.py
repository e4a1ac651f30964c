"""KernelBench's own files, written from our results so its analysis script reads them unchanged
(scripts/benchmark_eval_analysis.py with eval_results_dir= and baseline_file=):

    OUT/kernelbench/runs/kernelwright_levelN/eval_results.json
        {"<problem id>": [{"sample_id": 0, "compiled", "correctness", "metadata", "runtime",
        "runtime_stats"}]}, keys in numeric order: what scripts/eval_from_generations.py's
        add_to_eval_results_file writes (a list per problem, since KernelBench's pass@k change)
    OUT/kernelbench/runs/kernelwright_levelN/level_N_problem_I_sample_0_kernel.py
        each final kernel, named as KernelBench's fetch_kernel_from_disk looks for it
    OUT/kernelbench/results/timing/HARDWARE/baseline_time_torch.json and
    baseline_time_torch_compile_inductor_default.json
        {"levelN": {"<file name>": {"mean", "std", "min", "max", "num_trials", "hardware",
        "device"}}}, as scripts/generate_baseline_time.py writes them

Times are in ms on the verifier's clock: `runtime` is the final kernel's median, a baseline's
`mean` the eager reference's median from the same check, and torch.compile's that times the
ratio compile/eager that the baseline timer measured. KernelBench's script then computes
baseline `mean` over `runtime`, the ratio of the medians: within the spread of our speedup,
which is the median of per-round ratios. A problem whose eager time could not be measured (its
kernel failed before) has a baseline entry of -1.0 (KernelBench's own "not measured"), so that
its script keeps the failure in its denominator as we do.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

EAGER_FILE = "baseline_time_torch.json"
COMPILE_FILE = "baseline_time_torch_compile_inductor_default.json"
NOT_MEASURED = -1.0  # KernelBench's runtime for "not measured" (KernelExecResult.runtime)

# Our verdicts as KernelBench's metadata names their failures (src/kernelbench/eval.py).
FAILURE_KEYS = {
    "compile_error": "compilation_error",
    "error": "compilation_error",
    "wrong": "correctness_issue",
    "implausible": "correctness_issue",
    "crashed": "runtime_error",
    "timeout": "runtime_error",
}


def run_name(level: int) -> str:
    return f"kernelwright_level{level}"


def hardware_name(device: str) -> str:
    """A GPU's name as a folder name: "NVIDIA H100 80GB HBM3" -> "NVIDIA_H100_80GB_HBM3"."""
    slug = re.sub(r"[^A-Za-z0-9.-]+", "_", device).strip("_")
    return slug or "unknown_gpu"


def kernel_file_name(level: int, problem_id: int) -> str:
    return f"level_{level}_problem_{problem_id}_sample_0_kernel.py"


def eval_entry(
    *,
    compiled: bool,
    correct: bool,
    runtime_stats: dict[str, Any] | None,
    verdict: str,
    reason: str,
    hardware: str,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One problem's entry, KernelBench's keys in its order; `runtime` is runtime_stats' mean
    (-1.0 and {} when not timed); `extra` goes under metadata["kernelwright"]."""
    metadata: dict[str, Any] = {"hardware": hardware, "device": "cuda:0"} if hardware else {}
    key = FAILURE_KEYS.get(verdict)
    if key is not None and not correct:
        metadata[key] = reason
        metadata[f"{key}_name"] = verdict
    if extra:
        metadata["kernelwright"] = extra
    stats = dict(runtime_stats or {}) if correct else {}
    return {
        "sample_id": 0,
        "compiled": compiled,
        "correctness": correct,
        "metadata": metadata,
        "runtime": float(stats["mean"]) if stats else NOT_MEASURED,
        "runtime_stats": stats,
    }


def not_measured_stats(hardware: str) -> dict[str, Any]:
    """A baseline entry for a problem whose baseline was not timed: KernelBench's -1.0."""
    stats: dict[str, Any] = {
        "mean": NOT_MEASURED,
        "std": 0.0,
        "min": NOT_MEASURED,
        "max": NOT_MEASURED,
        "num_trials": 0,
    }
    return stats | ({"hardware": hardware, "device": "cuda:0"} if hardware else {})


def _write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=4) + "\n")
    os.replace(tmp, path)


def write_eval_results(path: Path, entries: dict[int, dict[str, Any]]) -> None:
    """eval_results.json: one sample (id 0) per problem, in numeric order of the ids."""
    _write_json(path, {str(pid): [entries[pid]] for pid in sorted(entries)})


def write_baselines(path: Path, levels: dict[int, dict[str, dict[str, Any]]]) -> None:
    """A baseline timing file: {"levelN": {file name: stats}} for the levels given."""
    _write_json(path, {f"level{lv}": dict(sorted(levels[lv].items())) for lv in sorted(levels)})


def analysis_command(out: Path, level: int, hardware: str, baseline_file: str = EAGER_FILE) -> str:
    """How to run KernelBench's analysis script on these files, from the clone."""
    kb = (out / "kernelbench").resolve()
    return (
        "uv run python scripts/benchmark_eval_analysis.py "
        f"run_name={run_name(level)} level={level} hardware={hardware} "
        f"baseline={baseline_file.removesuffix('.json')} eval_results_dir={kb / 'runs'} "
        f"baseline_file={kb / 'results' / 'timing' / hardware / baseline_file}"
    )
