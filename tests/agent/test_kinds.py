"""The one table of task kinds in agent/: each kind's prompt, reply parser, repair round,
candidate files, best file and code fence, looked up by task.kind (no GPU, no model)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import get_args

import pytest

from kernelwright.agent.kinds import KINDS, kind_of
from kernelwright.agent.nodes.compile import BUILDS
from kernelwright.agent.replies import ReplyError
from kernelwright.agent.rundir import RunDir
from kernelwright.tools.errors import TaskError
from kernelwright.tools.kernelbench import KernelBenchCandidate, KernelBenchTask
from kernelwright.tools.spec import CudaCandidate, CudaTask
from kernelwright.tools.task import Task, load_task
from tests.agent.test_graph import FASTER, FASTER_LAUNCH, GELU, reply
from tests.conftest import EXAMPLES

PROBLEM = EXAMPLES / "kernelbench" / "relu_mlp.py"
MODEL_NEW = (
    "import torch\n\nclass ModelNew(torch.nn.Module):\n"
    "    def __init__(self, *a):\n        super().__init__()\n"
    "    def forward(self, x):\n        return x\n"
)


def _kinds() -> set[str]:
    return {cls.model_fields["kind"].default for cls in get_args(Task)}


def _run(tmp_path: Path, task: Task) -> RunDir:
    return RunDir.create(tmp_path, task.name, {"task": task.path})


def test_every_kind_has_a_row_and_a_build() -> None:
    assert _kinds() == set(KINDS) == set(BUILDS)


def test_a_cuda_tasks_row(tmp_path: Path) -> None:
    task = load_task(GELU)
    assert isinstance(task, CudaTask)
    kind = kind_of(task)
    assert (kind.fence, kind.suffix, kind.best_file) == ("cuda", ".cu", "best.cu")
    assert kind.inherits_launch and kind.launch(task) == task.launch.model_dump()
    proposal = kind.parse(task, reply(FASTER, FASTER_LAUNCH, ["vector-access-16b"]))
    assert proposal.source.strip() == FASTER.strip() and proposal.tags == ("vector-access-16b",)
    with pytest.raises(ReplyError) as err:
        kind.parse(task, "no code here")
    assert f"void {task.entry}(...)" in kind.repair(err.value)["content"]
    cand = kind.candidate(task, _run(tmp_path, task), FASTER, FASTER_LAUNCH, "candidate")
    assert isinstance(cand, CudaCandidate) and cand.path == "candidate.cu" and cand.launch
    assert kind.original_best(task) == task.source
    assert kind.original_file(task) == Path(task.source_path)
    assert kind.loaded(task).startswith(f"{task.name}: gelu.cu, {task.entry}(")
    with pytest.raises(TaskError):  # pasted source must define the task's entry point
        kind.from_text(task, "__global__ void other(float* x) {}")


def test_a_kernelbench_problems_row(tmp_path: Path) -> None:
    task = load_task(PROBLEM)
    assert isinstance(task, KernelBenchTask)
    kind = kind_of(task)
    assert (kind.fence, kind.suffix, kind.best_file) == ("python", ".py", "best.py")
    assert not kind.inherits_launch and kind.launch(task) is None and not kind.profiled
    text = f"```python\n{MODEL_NEW}```\n```json\n{json.dumps({'tags': ['fusion']})}\n```\n"
    assert "class ModelNew" in kind.parse(task, text).source
    with pytest.raises(ReplyError) as err:
        kind.parse(task, "no code here")
    assert "class ModelNew(torch.nn.Module)" in kind.repair(err.value)["content"]
    run = _run(tmp_path, task)
    cand = kind.candidate(task, run, MODEL_NEW, None, "candidate-3")
    assert isinstance(cand, KernelBenchCandidate)
    assert Path(cand.path) == run.path / "candidates" / "candidate-3.py"  # its worker imports it
    assert Path(cand.path).read_text() == MODEL_NEW
    assert kind.original_best(task).endswith("ModelNew = Model\n")  # checks as a candidate
    assert kind.best_candidate(task, run, "", None, True) == task.reference_candidate()
    assert kind.loaded(task).startswith(f"{task.name} (KernelBench problem: Model, ")
    with pytest.raises(TaskError, match="ModelNew"):
        kind.from_text(task, "x = 1\n")


def test_a_cpp_tasks_row(tmp_path: Path) -> None:
    from kernelwright.tools.cpp import CppTask
    from kernelwright.tools.cpp_candidates import HOST_MARK, CppFunction, CppKernel, HostFile
    from kernelwright.tools.results import Attempt

    task = load_task(EXAMPLES / "cpp" / "histogram")
    assert isinstance(task, CppTask)
    kind = kind_of(task)
    assert (kind.fence, kind.suffix, kind.best_file, kind.first_prompt) == (
        "cuda",
        ".cu",
        "best.cu",
        "port",
    )
    assert kind.inherits_launch and not kind.tunable and kind.profiled
    port = (EXAMPLES / "cpp" / "histogram" / "candidates" / "port.cu").read_text()
    proposal = kind.parse(task, reply(port, None, ["port"]))
    assert "atomicAdd" in proposal.source
    run = _run(tmp_path, task)
    cand = kind.candidate(task, run, port, None, "candidate")
    assert isinstance(cand, CppKernel) and cand.port is None  # the task's own port stands beside
    assert kind.original_best(task) == task.port_source
    assert kind.original_file(task) == Path(task.source_path)
    assert isinstance(kind.best_candidate(task, run, task.source, None, True), CppFunction)
    assert isinstance(kind.from_text(task, f"{HOST_MARK} for histogram()\n"), HostFile)
    with pytest.raises(TaskError):  # a pasted kernel must take the kernel's arguments
        kind.from_text(task, 'extern "C" __global__ void histogram(const int* p, unsigned* c) {}')
    # without a port of its own, a run's first correct kernel is every later one's reference
    mine = task.model_copy(update={"port_source": "", "port_path": ""})
    assert "no CUDA port of histogram() is verified yet" in kind.original_best(mine)
    run.append_attempt(Attempt(index=1, parent=0, source="w", verdict="wrong", reason="x"))
    run.append_attempt(
        Attempt(index=2, parent=0, source=port, verdict="correct", reason="ok", speedup=2.0)
    )
    later = kind.candidate(mine, run, port, FASTER_LAUNCH_N, "candidate")
    assert isinstance(later, CppKernel) and later.port is not None
    assert (later.port.path, later.port.source, later.port.launch) == ("attempt 2", port, None)


FASTER_LAUNCH_N = {"block": ["256"], "grid": ["ceil_div(N, 1024)"], "shared_mem_bytes": "0"}
