"""The memory's speed, measured and printed (not a timed test):

    python -m kernelwright.evals.bench_memory [--sizes 1000,10000,100000] [--queries 200]

One PersistentClient store in a temporary directory grows to each size in turn. At each size:
insert throughput of the attempts added to reach it (batched, embedding included), then the
latency of `search` (embed the query + nearest 5) and of `contrastive.pairs` (two filtered
searches and the pairing), p50 and p95. Sources are the example kernels (examples/*/*.cu and
their candidates) varied: renamed identifiers, other block sizes and unroll factors, extra
lines from a list of real CUDA idioms. Target: search p95 at most 50 ms with 10k attempts.
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import tempfile
import time
from pathlib import Path

from kernelwright.memory.contrastive import pairs
from kernelwright.memory.store import ChromaStore, Provenance
from kernelwright.tools.results import Attempt

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
IDIOMS = (
    "__shared__ float tile[32][33];",
    "__syncthreads();",
    "for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);",
    "float4 q = reinterpret_cast<const float4*>(x)[i];",
    "atomicAdd(&out[blockIdx.x], acc);",
    "#pragma unroll 4",
    "const float* __restrict__ xr = x;",
    "float r = __ldg(&x[i]);",
    "acc = fmaf(a[i], b[i], acc);",
    "if (threadIdx.x % warpSize == 0) partial[threadIdx.x / warpSize] = v;",
)
OPS = ("elementwise", "reduction", "gemm", "stencil", "transpose", "softmax")
BOTTLENECKS = ("memory-bound", "compute-bound", "latency-bound")
VERDICTS = ("correct",) * 6 + ("wrong", "compile_error", "timeout")
TAGS = ("shared-memory", "warp-shuffle", "vectorize", "unroll", "tiling", "fast-math", "ldg")


def seeds() -> list[str]:
    found = sorted(EXAMPLES.glob("*/*.cu")) + sorted(EXAMPLES.glob("*/candidates/*.cu"))
    return [p.read_text() for p in found] or ["__global__ void k(float* x) { x[0] = 1.0f; }"]


def vary(source: str, rng: random.Random) -> str:
    """A plausible sibling of `source`: different constants, names and a few idioms."""
    out = re.sub(
        r"\b(16|32|64|128|256|512|1024)\b", lambda _: str(rng.choice((32, 64, 128, 256))), source
    )
    for name in ("acc", "sum", "tile", "partial", "row", "col"):
        if rng.random() < 0.3:
            out = re.sub(rf"\b{name}\b", f"{name}_{rng.randrange(100)}", out)
    lines = out.splitlines()
    for _ in range(rng.randrange(4)):
        lines.insert(rng.randrange(1, max(2, len(lines))), "    " + rng.choice(IDIOMS))
    return "\n".join(lines) + f"\n// variant {rng.getrandbits(32):08x}\n"


def synthetic(
    n: int, start: int, rng: random.Random, base: list[str]
) -> list[tuple[Attempt, Provenance]]:
    items = []
    for i in range(start, start + n):
        run, index = divmod(i, 20)
        verdict = rng.choice(VERDICTS)
        attempt = Attempt(
            index=index + 1,
            parent=rng.randrange(index + 1),
            tags=tuple(rng.sample(TAGS, rng.randrange(1, 3))),
            source=vary(rng.choice(base), rng),
            verdict=verdict,
            reason="ok" if verdict == "correct" else "max abs err 0.5 at [3]",
            speedup=round(rng.lognormvariate(0.3, 0.6), 3) if verdict == "correct" else None,
        )
        where = Provenance(
            task_signature=f"task{run % 300}",
            op_class=OPS[run % len(OPS)],
            bottleneck=rng.choice(BOTTLENECKS),
            arch=rng.choice(("sm_80", "sm_89", "sm_90")),
            model="qwen2.5-coder:7b",
            run_id=f"run{run}",
        )
        items.append((attempt, where))
    return items


def percentile(xs: list[float], q: float) -> float:
    return statistics.quantiles(xs, n=100, method="inclusive")[int(q) - 1] if len(xs) > 1 else xs[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000", help="comma-separated store sizes")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--batch", type=int, default=1000, help="attempts per add_many call")
    args = ap.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    rng, base = random.Random(0), seeds()
    print(f"{len(base)} seed kernels; {args.queries} queries per size")
    print(
        f"{'attempts':>9} {'insert/s':>9} {'search p50':>11} {'search p95':>11} "
        f"{'pairs p50':>10} {'pairs p95':>10}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        store = ChromaStore.open(Path(tmp) / "memory")
        have = 0
        for size in sizes:
            todo = synthetic(size - have, have, rng, base)
            t0 = time.perf_counter()
            for i in range(0, len(todo), args.batch):
                store.add_many(todo[i : i + args.batch])
            rate = len(todo) / (time.perf_counter() - t0)
            have = size
            assert store.count() == size
            search_ms, pairs_ms = [], []
            for _ in range(args.queries):
                query = vary(rng.choice(base), rng)
                t0 = time.perf_counter()
                store.search(query, n=5)
                search_ms.append((time.perf_counter() - t0) * 1e3)
                t0 = time.perf_counter()
                pairs(
                    store,
                    task_signature="task7",
                    op_class=rng.choice(OPS),
                    bottleneck=rng.choice(BOTTLENECKS),
                    source=query,
                    run_attempts=[],
                )
                pairs_ms.append((time.perf_counter() - t0) * 1e3)
            print(
                f"{size:>9} {rate:>9.0f} {percentile(search_ms, 50):>8.1f} ms "
                f"{percentile(search_ms, 95):>8.1f} ms {percentile(pairs_ms, 50):>7.1f} ms "
                f"{percentile(pairs_ms, 95):>7.1f} ms",
                flush=True,
            )


if __name__ == "__main__":
    from kernelwright.agent.privacy import keep_traces_local

    keep_traces_local()
    main()
