"""The loop's own overhead, measured and printed (not a timed test):

    python -m kernelwright.evals.bench_loop [--candidates 5] [--model-s 2.0] [--check-s 2.3]
                                            [--no-memory]

Runs the real graph (LangGraph, SQLite checkpoints, prompt rendering, reply parsing, sandboxed
NVRTC compiles, the run directory) on examples/gelu. Two parts stand in, with fixed delays: the
model (a script that answers after --model-s seconds) and the GPU measurement (recorded reports
returned after --check-s seconds; 2.3 s is the median check measured on an H100). Overhead is the
wall time less model, GPU and compile time; the target is at most 5% of a candidate's wall time.
The memory (a fresh ChromaDB store and reasoning graph in the temporary data directory: the
search, contrastive retrieval, storing each attempt, saving the graph) counts as overhead.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import kernelwright.agent.nodes.compile as compile_node
from kernelwright.agent.llm import Message, ScriptedLLM
from kernelwright.agent.nodes.common import as_candidate
from kernelwright.agent.optimize import optimize
from kernelwright.agent.settings import Settings
from kernelwright.tools.backend import ReplayGpu
from kernelwright.tools.results import CheckReport, KernelTiming, TimingResult
from kernelwright.tools.spec import CudaTask
from kernelwright.tools.task import load_task, reference_candidate

GELU = Path(__file__).resolve().parent.parent / "examples" / "gelu"
clock = {"model": 0.0, "gpu": 0.0, "compile": 0.0}


class SlowScript(ScriptedLLM):
    def __init__(self, replies: list[str], delay_s: float) -> None:
        super().__init__(replies)
        self.delay_s = delay_s

    def complete(self, messages: list[Message]) -> str:
        t0 = time.perf_counter()
        time.sleep(self.delay_s)
        reply = super().complete(messages)
        clock["model"] += time.perf_counter() - t0
        return reply


class SlowReplay(ReplayGpu):
    def __init__(self, delay_s: float) -> None:
        super().__init__()
        self.delay_s = delay_s

    def check(self, task: Any, candidate: Any) -> CheckReport:
        t0 = time.perf_counter()
        time.sleep(self.delay_s)
        report = super().check(task, candidate)
        clock["gpu"] += time.perf_counter() - t0
        return report


def _timed_compile(*args: Any, **kwargs: Any) -> Any:
    t0 = time.perf_counter()
    try:
        return _compile(*args, **kwargs)
    finally:
        clock["compile"] += time.perf_counter() - t0


_compile = compile_node.compile_in_sandbox
compile_node.compile_in_sandbox = _timed_compile


def _report(task: CudaTask, speedup: float) -> CheckReport:
    ref = KernelTiming(median_ms=0.11, iqr_ms=0.002, min_ms=0.1, max_ms=0.12, samples=100)
    timing = TimingResult(
        reference=ref,
        candidate=ref.model_copy(update={"median_ms": 0.11 / speedup}),
        speedup=speedup,
        speedup_iqr=0.01,
        rounds=100,
        input_sets=4,
        l2_flush_bytes=100 << 20,
    )
    return CheckReport(
        task=task.name, candidate="c.cu", verdict="correct", reason="ok", timing=timing
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", type=int, default=5)
    parser.add_argument("--model-s", type=float, default=2.0)
    parser.add_argument("--check-s", type=float, default=2.3)
    parser.add_argument("--no-memory", action="store_true", help="Run without the memory.")
    ns = parser.parse_args()
    task = load_task(GELU)
    assert task.kind == "cuda"  # a CUDA example (the assert narrows the type)
    source = (GELU / "candidates" / "faster.cu").read_text()
    gpu = SlowReplay(ns.check_s)
    gpu.add(task, reference_candidate(task), _report(task, 1.0))
    replies = []
    for i in range(ns.candidates):  # each a little faster, so each is kept and re-profiled
        variant = source.replace("// ", f"// variant {i}: ", 1)
        gpu.add(task, as_candidate(task, variant, None), _report(task, 1.1 + 0.1 * i))
        replies += [
            f"```cuda\n{variant}\n```\n```json\n{json.dumps({'tags': ['unroll']})}\n```",
            "It helped a little.",
        ]
    with tempfile.TemporaryDirectory() as data:
        t0 = time.perf_counter()
        out, _ = optimize(
            GELU,
            Settings(data_dir=Path(data)),
            model=SlowScript(replies, ns.model_s),
            gpu=gpu,
            arch="sm_90",
            budget=ns.candidates,
            plateau=ns.candidates + 1,
            memory=not ns.no_memory,
        )
        wall = time.perf_counter() - t0
    n = len(out["attempts"])
    overhead = wall - clock["model"] - clock["gpu"] - clock["compile"]
    print(
        f"candidates {n}, wall {wall:.2f} s ({wall / n:.2f} s per candidate, first check of the "
        f"original included), memory {'off' if ns.no_memory else 'on'}"
    )
    for name in ("model", "gpu", "compile"):
        print(f"  {name:<8} {clock[name]:7.2f} s  {clock[name] / wall:6.1%}")
    print(
        f"  {'overhead':<8} {overhead:7.2f} s  {overhead / wall:6.1%}   "
        f"({overhead / n * 1e3:.0f} ms per candidate; target at most 5%)"
    )
    print(f"  overhead with compile counted in: {(overhead + clock['compile']) / wall:.1%}")


if __name__ == "__main__":
    from kernelwright.agent.privacy import keep_traces_local

    keep_traces_local()
    main()
