"""A C++ task whose inputs come from a Python input maker (`[inputs]`), on a real GPU: both GPU
workers make the maker's inputs from a trial's seed with the bits the C++ reference's worker
gives its function, so an honest kernel is correct and a wrong one wrong (issue 14: ParEval's
graph problems)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from kernelwright.tools.cpp import load_cpp_task
from kernelwright.tools.cpp_inputs import arg_seed, generate
from kernelwright.tools.cpp_pareval import convert
from kernelwright.tools.makers import load_maker, made_inputs
from kernelwright.tools.task import load_candidate
from kernelwright.tools.verify import Verifier, VerifyOptions
from tests.conftest import EXAMPLES

pytestmark = pytest.mark.gpu

FAKE = Path(__file__).parents[1] / "fixtures" / "pareval_fake"

# One block: each thread sums rows i = tid, tid + 256, ..., then a max over the block. Only the
# maker's graphs (0 and 1, symmetric, no self loops) give the degrees the C++ function returns;
# on the default init's integers (-100 to 100) it would disagree with a function fed the maker's.
DEGREE = """extern "C" __global__ void maxDegree(const int* A, unsigned long long N, int* degree)
{
    __shared__ int best[256];
    int mine = 0;
    for (unsigned long long i = threadIdx.x; i < N; i += blockDim.x) {
        int d = 0;
        for (unsigned long long j = 0; j < N; ++j) d += A[i * N + j];
        mine = max(mine, d);
    }
    best[threadIdx.x] = mine;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
        if (threadIdx.x < s) best[threadIdx.x] = max(best[threadIdx.x], best[threadIdx.x + s]);
        __syncthreads();
    }
    if (threadIdx.x == 0) *degree = best[0];
}
"""
# Wrong: the degree of node 0 alone.
FIRST_ROW = """extern "C" __global__ void maxDegree(const int* A, unsigned long long N, int* degree)
{
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        int d = 0;
        for (unsigned long long j = 0; j < N; ++j) d += A[j];
        *degree = d;
    }
}
"""
ONE_BLOCK = '[launch]\nblock = [256]\ngrid = ["1"]\n'


@pytest.fixture(scope="module")
def verifier(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Verifier]:
    cache = tmp_path_factory.mktemp("cpp-cache")
    with Verifier(VerifyOptions(prestart=True, reference_cache_dir=str(cache))) as v:
        yield v


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("pareval")
    convert(FAKE, out)
    return out / "02_graph_max_degree" / "02_graph_max_degree.toml"


def _kernel(folder: Path, name: str, source: str) -> Path:
    path = folder / f"{name}.cu"
    path.write_text(source)
    path.with_suffix(".toml").write_text(ONE_BLOCK)
    return path


def test_the_gpu_makes_the_makers_inputs_bit_for_bit(tmp_path: Path) -> None:
    """gemv with a maker of a symmetric A: the GPU runner's A is the maker's, its x the
    generator's at x's own seed, and a trial drawing A from a wider init gets the generator's."""
    from kernelwright.tools.cuda_roles import _runner_class

    copy = tmp_path / "gemv"
    shutil.copytree(EXAMPLES / "cpp" / "gemv", copy)
    (copy / "inputs.py").write_text(
        "def make(np, rng, sizes):\n"
        "    a = rng.uniform(-2.0, 2.0, size=(sizes['M'], sizes['N']))\n"
        "    n = min(a.shape)\n"
        "    a[:n, :n] = (a[:n, :n] + a[:n, :n].T) / 3\n"
        "    return {'A': a}\n"
    )
    spec = copy / "gemv.toml"
    spec.write_text(spec.read_text() + '\n[inputs]\npython = "inputs.py:make"\n')
    task = load_cpp_task(spec)
    view = task.worker_task()
    assert view.inputs_maker == "make" and "def make" in view.inputs_source
    runner = _runner_class()(view, None, tmp_path, "x")
    maker = load_maker(view.inputs_source, "make")
    sizes = dict(task.checks[-1])
    for seed, inits in ((7, {}), (2**63 + 5, {}), (11, {"A": "uniform:-9:9"})):
        got = {k: v.get() for k, v in runner.inputs(sizes, seed, inits, spread=seed).items()}
        made = made_inputs(maker, "make", task.args, lambda a: task.shape(a, sizes), sizes, seed)
        for i, a in enumerate(task.args):
            if a.role not in ("in", "inout"):
                continue
            want = (
                made[a.name]
                if a.name in made and a.name not in inits
                else generate(
                    a.dtype, task.shape(a, sizes), arg_seed(seed, i), inits.get(a.name, a.init)
                )
            )
            assert got[a.name].dtype == want.dtype
            np.testing.assert_array_equal(got[a.name].reshape(-1), want.reshape(-1))
    a = got["A"].reshape(-1)
    assert np.abs(a).max() > 2.0  # the last trial's A: the wider init's, not the maker's


def test_a_graph_problem_is_checked_on_the_gpu(
    graph: Path, tmp_path: Path, verifier: Verifier
) -> None:
    task = load_cpp_task(graph)
    assert task.inputs_python
    right = verifier.check(task, load_candidate(task, _kernel(tmp_path, "degree", DEGREE)))
    assert right.verdict == "correct", right.reason
    assert right.speedups is not None and right.speedups.cpu_core
    assert "itself" in right.speedups.port_is  # no port: its timed calls audited against C++
    wrong = verifier.check(task, load_candidate(task, _kernel(tmp_path, "first", FIRST_ROW)))
    assert wrong.verdict == "wrong", wrong.reason
    print(f"maxDegree: {right.speedups.cpu_core:.1f}x one core; first row: {wrong.reason}")


# --- `kernelwright eval pareval` on the GPU ---------------------------------------------------

SCALE = """extern "C" __global__ void scaleFrom(double alpha, double* x, int start, long long N)
{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= start && i < N) x[i] *= alpha;
}
"""
PARITY = """extern "C" __global__ void parityCounts(const int* x, unsigned long long* bins,
                                             long long N)
{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) atomicAdd(&bins[x[i] % 2], 1ULL);
}
"""
KERNELS = {
    "scaleFrom": (SCALE, None),
    "parityCounts": (PARITY, None),
    "maxDegree": (DEGREE, {"block": ["256"], "grid": ["1"]}),
}


class ByFunction:
    """A scripted stand-in that answers each port prompt with the kernel for the function it
    names (the batch's order of problems and repairs does not matter), and each request to
    review an attempt with a sentence."""

    name = "scripted"

    def __init__(self, kernels: dict[str, tuple[str, dict[str, list[str]] | None]]) -> None:
        self.kernels = kernels
        self.asked: list[str] = []

    def ensure_ready(self) -> None:
        pass

    def complete(self, messages: list[dict[str, str]]) -> str:
        import json

        if "review one attempt" in messages[0]["content"]:
            return "Ported."
        text = messages[-1]["content"]
        for function, (source, launch) in self.kernels.items():
            if f"{function}(" in text:
                self.asked.append(function)
                meta: dict[str, object] = {"tags": ["port"]}
                if launch:
                    meta["launch"] = launch
                return f"```cuda\n{source}```\n```json\n{json.dumps(meta)}\n```\n"
        return "I would rather not write code."


def test_eval_pareval_checks_every_problem_on_the_gpu(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fake clone's three problems, the graph one's inputs from its maker, each given a
    correct kernel: pass@n 100%, every problem's first sample correct and faster than nothing."""
    import json

    from kernelwright.agent.doors.cli_eval import run_pareval_command

    monkeypatch.setenv("KERNELWRIGHT_DATA_DIR", str(tmp_path / "data"))
    model = ByFunction(KERNELS)
    out = tmp_path / "run"
    loop = {"memory": False, "tune": False}
    code = run_pareval_command(FAKE, out, as_json=True, budget=1, model=model, loop=loop)
    printed = capsys.readouterr().out
    assert code == 0, printed
    result = json.loads(printed)
    samples = {p["name"]: p["samples"] for p in result["problems"]}
    assert sorted(model.asked) == sorted(KERNELS)
    for name, got in samples.items():
        assert got and got[0]["verdict"] == "correct", (name, got)
        assert got[0]["speedup"] > 0
    every = result["figures"]["all"]
    assert every["problems"] == 3 and every["pass_at_n"] == 1.0 and every["build_at_1"] == 1.0
    print((out / "pareval.md").read_text())
