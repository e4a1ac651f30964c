"""Benchmark the foundation on a GPU machine and print a table (not a timed test):

    python -m kernelwright.evals.bench_foundation [--tasks gelu,softmax] [--repeat 3] [--json FILE]

Per example task, in one run:
  - wall ms to fully check one candidate (compile, correctness, timing) through kernelwright,
    the median of --repeat checks of the hand-written faster candidate, with the phase breakdown:
    "warm" as in a loop, where the model's answer (--think seconds) gives the verifier's spare
    workers time to start, and "b2b" with checks back to back, where the spares are still starting;
  - the same kernel through PyTorch's load_inline (build, one checked run, event timing), the
    path KernelBench's harness takes, and the ratio of the two;
  - the reference timed against itself (must read 1.00x within 2%);
  - our event-timed median of the reference against Nsight Compute's gpu__time_duration.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from kernelwright.tools import expr
from kernelwright.tools.profile import profile
from kernelwright.tools.spec import CudaTask, LaunchSpec
from kernelwright.tools.task import load_candidate, load_task, reference_candidate
from kernelwright.tools.verify import Verifier, VerifyOptions

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
TASKS = ("gelu", "rowsum", "softmax", "matmul", "stencil", "transpose")
_TORCH_DTYPE = {"float32": "float", "float64": "double", "int32": "int", "int64": "int64_t"}


def load_inline_check(task: CudaTask, source: str, launch: LaunchSpec) -> dict[str, float]:
    """Build `source` with torch's load_inline (fresh build dir, no cache), run it once, compare
    with the float64 reference at the bench size, and time it with events: KernelBench's path."""
    import numpy as np
    import torch
    from torch.utils.cpp_extension import load_inline

    params, call, names = [], [], []
    for a in task.args:
        if a.role == "scalar":
            params.append(
                f"double {a.name}" if a.dtype.startswith("float") else f"int64_t {a.name}"
            )
            call.append(f"({_TORCH_DTYPE.get(a.dtype, 'int')}){a.name}")
        else:
            params.append(f"torch::Tensor {a.name}")
            call.append(f"({_TORCH_DTYPE[a.dtype]}*){a.name}.data_ptr()")
        names.append(a.name)
    dims = ", ".join(f"int64_t {d}" for d in ("gx", "gy", "gz", "bx", "by", "bz", "smem"))
    signature = f"void run({', '.join(params)}, {dims})"
    cuda = (
        source + "\n#include <torch/extension.h>\n#include <ATen/cuda/CUDAContext.h>\n"
        f"{signature} {{ {task.entry}<<<dim3(gx, gy, gz), dim3(bx, by, bz), smem, "
        f"at::cuda::getCurrentCUDAStream()>>>({', '.join(call)}); }}\n"
    )
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as build:
        module = load_inline(
            name=f"kw_bench_{task.name}_{int(t0)}",
            cpp_sources=signature + ";",
            cuda_sources=cuda,
            functions=["run"],
            build_directory=build,
            extra_cuda_cflags=["-O3"],
            verbose=False,
        )
    build_ms = (time.perf_counter() - t0) * 1e3
    sizes = task.bench
    torch.manual_seed(0)
    tensors, kwargs = {}, {}
    for a in task.args:
        if a.role == "scalar":
            kwargs[a.name] = expr.evaluate(a.value, sizes)
        else:
            shape = task.shape(a, sizes)
            tensors[a.name] = torch.rand(shape, device="cuda", dtype=torch.float32) * 2 - 1
    grid, block, smem = launch.resolve(sizes)
    grid3, block3 = (*grid, 1, 1)[:3], (*block, 1, 1)[:3]
    args = [tensors.get(n, kwargs.get(n)) for n in names]

    def call_once() -> None:
        module.run(*args, *grid3, *block3, smem)

    t1 = time.perf_counter()
    call_once()
    torch.cuda.synchronize()
    file, func = task.reference_python.rsplit(":", 1)
    namespace: dict[str, Any] = {}
    exec(compile(Path(file).read_text(), file, "exec"), namespace)  # the task's own reference
    ins = {
        n: t.double().cpu().numpy()
        for n, t in tensors.items()
        if next(a for a in task.args if a.name == n).role in ("in", "inout")
    }
    expected = namespace[func](np, **ins, **kwargs)
    for name, value in expected.items():
        np.testing.assert_allclose(tensors[name].cpu().numpy(), value, rtol=1e-3, atol=1e-3)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(50):
        start.record()
        call_once()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    check_ms = (time.perf_counter() - t1) * 1e3
    return {
        "build_ms": build_ms,
        "check_ms": check_ms,
        "total_ms": build_ms + check_ms,
        "median_ms": statistics.median(times),
    }


def bench_task(
    name: str, repeat: int, with_load_inline: bool, cache: str, think_s: float
) -> dict[str, Any]:
    task = load_task(EXAMPLES / name)
    assert task.kind == "cuda"  # a CUDA example (the assert narrows the type)
    faster = load_candidate(task, EXAMPLES / name / "candidates" / "faster.cu")
    # Cold: what one `kernelwright check` costs (new workers; the kernel cache already filled).
    with Verifier(VerifyOptions(cache_dir=cache)) as cold_verifier:
        cold = cold_verifier.check(task, faster)
    verifier = Verifier(VerifyOptions(cache_dir=cache, prestart=True))
    verifier.check(task, faster)  # primes the spare workers, as the loop's first candidate does
    b2b = [verifier.check(task, faster) for _ in range(repeat)]
    checks = []
    for _ in range(repeat):
        time.sleep(think_s)  # the model answering; the spares finish starting meanwhile
        checks.append(verifier.check(task, faster))
    bad = [c for c in checks + b2b if not c.ok]
    if bad:
        raise SystemExit(f"{name}: faster candidate not verified: {bad[0].reason}")
    walls = sorted(c.wall_ms for c in checks)
    phases = {
        k: statistics.median(c.phase_ms.get(k, 0.0) for c in checks) for k in checks[0].phase_ms
    }
    self_check = verifier.check(task, reference_candidate(task))
    verifier.close()
    assert self_check.timing is not None
    prof = profile(task, reference_candidate(task))
    row: dict[str, Any] = {
        "task": name,
        "check_ms": statistics.median(walls),
        "check_ms_all": walls,
        "think_s": think_s,
        "b2b_check_ms": statistics.median(c.wall_ms for c in b2b),
        "b2b_phases_ms": {
            k: statistics.median(c.phase_ms.get(k, 0.0) for c in b2b) for k in b2b[0].phase_ms
        },
        "phases_ms": phases,
        "cold_check_ms": cold.wall_ms,
        "cold_phases_ms": cold.phase_ms,
        "faster_speedup": statistics.median(c.timing.speedup for c in checks if c.timing),
        "self_speedup": self_check.timing.speedup,
        "self_speedup_iqr": self_check.timing.speedup_iqr,
        "event_median_ms": self_check.timing.reference.median_ms,
        "ncu_ms": prof.duration_ms if prof.available else None,
        "ncu_note": "" if prof.available else prof.reason,
    }
    if row["ncu_ms"]:
        row["event_vs_ncu"] = row["event_median_ms"] / row["ncu_ms"]
    if with_load_inline:
        li = load_inline_check(task, faster.source, faster.launch or task.launch)
        row["load_inline"] = li
        row["load_inline_ratio"] = li["total_ms"] / row["check_ms"]
        row["load_inline_ratio_cold"] = li["total_ms"] / row["cold_check_ms"]
    return row


def print_table(rows: list[dict[str, Any]]) -> None:
    head = (
        f"{'task':<10} {'cold ms':>8} {'b2b ms':>7} {'warm ms':>8} {'load_inline ms':>15} "
        f"{'ratio':>7} "
        f"{'self':>6} "
        f"{'event ms':>9} {'ncu ms':>9} {'ev/ncu':>7} {'faster':>7}"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        li = r.get("load_inline", {}).get("total_ms")
        print(
            f"{r['task']:<10} {r['cold_check_ms']:>8.0f} {r['b2b_check_ms']:>7.0f} "
            f"{r['check_ms']:>8.0f} "
            f"{li if li else float('nan'):>15.0f} "
            f"{r.get('load_inline_ratio', float('nan')):>6.1f}x {r['self_speedup']:>5.3f}x "
            f"{r['event_median_ms']:>9.4f} {r['ncu_ms'] or float('nan'):>9.4f} "
            f"{r.get('event_vs_ncu', float('nan')):>7.3f} {r['faster_speedup']:>6.2f}x"
        )
    print()
    print("ratio: load_inline total over the warm check; cold: a one-off check in new workers;")
    print("b2b: checks back to back; warm: each after the model's answer time (--think)")
    if rows:
        print(
            "median over tasks: warm "
            f"{statistics.median(r['check_ms'] for r in rows):.0f} ms, b2b "
            f"{statistics.median(r['b2b_check_ms'] for r in rows):.0f} ms"
        )
    print(
        "phases (median ms): "
        + "; ".join(
            f"{r['task']}: " + ", ".join(f"{k} {v:.0f}" for k, v in r["phases_ms"].items())
            for r in rows
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-load-inline", action="store_true")
    parser.add_argument(
        "--think", type=float, default=2.0, help="seconds the model takes between checks"
    )
    parser.add_argument("--json", type=Path)
    ns = parser.parse_args()
    rows = []
    cache = tempfile.mkdtemp(prefix="kw-bench-cache-")
    for name in ns.tasks.split(","):
        rows.append(bench_task(name, ns.repeat, not ns.no_load_inline, cache, ns.think))
        print(f"{name}: done", flush=True)
        if ns.json:
            ns.json.write_text(json.dumps(rows, indent=2))
    print_table(rows)


if __name__ == "__main__":
    main()
