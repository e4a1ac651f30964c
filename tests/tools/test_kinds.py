"""Each task kind's facts have one home: its own models (spec.py for CUDA tasks, kernelbench.py
for KernelBench problems), or a row keyed by `task.kind` in the one table of a module whose
work differs by kind. Nothing else asks a task or a candidate for its class: a new kind adds
its models and its rows, and these tests name the rows it lacks (no GPU)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import get_args

from kernelwright.memory import signature
from kernelwright.tools import fit, judge, plan, pool, sanitize
from kernelwright.tools.kernelbench import KernelBenchCandidate, KernelBenchTask
from kernelwright.tools.plan import Trial
from kernelwright.tools.profile import profile
from kernelwright.tools.spec import CudaCandidate, CudaTask
from kernelwright.tools.task import Task, load_candidate, load_task, reference_candidate
from kernelwright.tools.verify import Verifier, VerifyOptions
from tests.conftest import EXAMPLES, ROOT

SOFTMAX = EXAMPLES / "softmax"
PROBLEM = EXAMPLES / "kernelbench" / "relu_mlp.py"
KIND_CLASSES = {
    "CudaTask",
    "KernelBenchTask",
    "CppTask",
    "CudaCandidate",
    "KernelBenchCandidate",
    "CppKernel",
    "CppFunction",
    "HostFile",
}
# Where a task's or a candidate's class may still be asked: the loaders, which make them, and
# the worker's side, which dispatches a job to its kind's roles.
ALLOWED = {
    "tools/task.py",
    "tools/worker.py",
    "tools/cuda_roles.py",
    "tools/torch_roles.py",
    "tools/runners.py",
    "tools/spec.py",
    "tools/kernelbench.py",
}


def _cuda() -> CudaTask:
    task = load_task(SOFTMAX)
    assert isinstance(task, CudaTask)
    return task


def _problem() -> KernelBenchTask:
    task = load_task(PROBLEM)
    assert isinstance(task, KernelBenchTask)
    return task


def _kinds() -> set[str]:
    """Every kind the loaders can give, read off the Task union."""
    return {cls.model_fields["kind"].default for cls in get_args(Task)}


def test_every_kind_has_its_row_in_each_table_keyed_by_kind() -> None:
    kinds = _kinds()
    assert {"cuda", "kernelbench"} <= kinds
    for table in (
        judge.OUTPUTS,
        plan._KINDS,
        sanitize.KIND_TOOLS,
        sanitize.KIND_SIZES,
        signature._SIGNATURES,
        signature._OP_CLASSES,
        pool.WANTED,
    ):
        assert set(table) == kinds
    assert set(fit.NEEDS) <= kinds  # a kind whose arrays its own code makes has none


def test_each_kind_names_workers_its_prestart_keeps_spare() -> None:
    for task in (_cuda(), _problem()):
        assert set(task.worker_kinds) <= set(pool.WANTED[task.kind])
    assert _cuda().worker_kinds == ("cuda", "cuda")
    assert _problem().worker_kinds == ("torch-ref", "torch-cand")


def test_candidates_say_their_tasks_kind() -> None:
    cuda, problem = _cuda(), _problem()
    faster = load_candidate(cuda, SOFTMAX / "candidates" / "faster.cu")
    model_new = load_candidate(problem, EXAMPLES / "kernelbench" / "relu_mlp_candidate.py")
    for task, candidate in ((cuda, faster), (problem, model_new)):
        assert candidate.kind == task.kind == task.reference_candidate().kind


def test_the_reference_candidate_is_the_tasks_own_code() -> None:
    cuda, problem = _cuda(), _problem()
    assert cuda.reference_candidate() == CudaCandidate(
        path=cuda.source_path, source=cuda.source, launch=None
    )
    assert problem.reference_candidate() == KernelBenchCandidate(
        path=problem.path, source=problem.source
    )
    for task in (cuda, problem):
        assert reference_candidate(task) == task.reference_candidate()


def test_kind_facts_stay_out_of_every_dump() -> None:
    """Tasks travel to workers as their dumps, and replays key on candidates: a fact of the
    kind is a ClassVar, never a field."""
    cuda, problem = _cuda(), _problem()
    facts = {"worker_kinds", "run_timeout_factor", "host_code", "compile_entry"}
    for task in (cuda, problem):
        dump = task.model_dump()
        assert dump["kind"] == task.kind and not facts & set(dump)
        assert type(task).model_validate(dump) == task
    # its compile options are the candidate's own (tune's), not its kind's
    assert set(cuda.reference_candidate().model_dump()) == {
        "path",
        "source",
        "launch",
        "options",
        "tune_values",
    }
    assert set(problem.reference_candidate().model_dump()) == {"path", "source"}


def test_a_cpp_tasks_facts_and_its_candidates_kinds() -> None:
    """A C++ task's kernels run on the same CuPy workers as a CUDA task's (its CUDA view), its
    function and a drop-in host file are checked elsewhere, by their own kinds."""
    from kernelwright.tools import cpp_check
    from kernelwright.tools.cpp import CppTask

    task = load_task(EXAMPLES / "cpp" / "gemv")
    assert isinstance(task, CppTask)
    assert task.worker_kinds == ("cuda", "cuda") and set(task.worker_kinds) <= set(
        pool.WANTED["cpp"]
    )
    assert task.compile_entry == "gemv" and not task.host_code and task.run_timeout_factor == 1
    assert task.reference_label == "C++ reference"
    kernel = load_candidate(task, EXAMPLES / "cpp" / "gemv" / "candidates" / "port.cu")
    itself = task.reference_candidate()
    assert kernel.kind == task.kind == "cpp" and itself.kind == "cpp-function"
    assert set(cpp_check.CHECKS) == {"cpp-function", "cpp-host"}  # not run as kernels
    assert kernel.kind not in cpp_check.CHECKS
    assert task.candidate_files(kernel.path, kernel.source) == {}
    assert task.worker_task().kind == "cuda" and _cuda().worker_task() is not None
    facts = {"worker_kinds", "run_timeout_factor", "host_code", "compile_entry"}
    dump = task.model_dump()
    assert not facts & set(dump) and type(task).model_validate(dump) == task
    result = profile(task, itself)  # the function runs on the CPU: nothing to profile
    assert not result.available


def test_run_timeouts_and_budgets_by_kind() -> None:
    options = VerifyOptions(pin_cpus=False, run_timeout_s=20.0, timing_budget_s=0.6)
    with Verifier(options) as verifier:
        assert verifier._run_timeout(_cuda()) == 20.0
        assert verifier._run_timeout(_problem()) == 60.0
        kernel, forward = verifier._budget(_cuda()), verifier._budget(_problem())
    assert (kernel.seconds, kernel.round_timeout_s, kernel.several_calls) == (0.6, 20.0, False)
    assert (forward.seconds, forward.round_timeout_s, forward.several_calls) == (3.0, 60.0, True)
    assert (forward.batch, forward.max_rounds) == (16, 3000)
    assert not _cuda().host_code and _problem().host_code


def test_a_cuda_tasks_workers_get_a_cubin_and_its_python_reference() -> None:
    task = _cuda()
    faster = load_candidate(task, SOFTMAX / "candidates" / "faster.cu")
    assert task.compile_entry == task.entry == "softmax"
    assert task.reference_files() == {"kw_reference.py": (SOFTMAX / "reference.py").read_text()}
    assert task.candidate_files(faster.path, faster.source) == {}
    assert faster.bound_launch is not None  # its launch names its knob, SM_THREADS: in place
    assert faster.worker_job(task.path) == {"launch": faster.bound_launch.model_dump()}
    assert faster.worker_job(task.path)["launch"]["block"] == ("256",)
    assert task.reference_candidate().worker_job(task.path) == {"launch": None}
    assert task.reference_label == "float64 reference"
    own = task.model_copy(update={"reference_python": ""})
    assert own.reference_files() == {} and own.reference_label == "reference kernel"


def test_a_problems_workers_get_its_files_and_import_the_candidate_themselves() -> None:
    task = _problem()
    model_new = load_candidate(task, EXAMPLES / "kernelbench" / "relu_mlp_candidate.py")
    itself = task.reference_candidate()
    assert task.compile_entry is None
    assert task.reference_files() == {"kw_problem.py": task.source}
    assert task.candidate_files(itself.path, itself.source) == {"kw_problem.py": task.source}
    assert task.candidate_files(model_new.path, model_new.source) == {
        "kw_problem.py": task.source,
        "kw_candidate.py": model_new.source,
    }
    assert itself.worker_job(task.path) == {"class_name": "Model"}
    assert model_new.worker_job(task.path) == {"class_name": "ModelNew"}
    assert task.reference_label == "reference kernel"


def test_small_sizes_and_roofline_by_kind() -> None:
    cuda, problem = _cuda(), _problem()
    assert cuda.small_sizes() == {"M": 5, "N": 1000}  # the largest check size
    assert problem.small_sizes() == {"batch_size": 8}
    assert problem.model_copy(update={"size_globals": {}}).small_sizes() == {}
    assert cuda.roofline() == (8 * 4096 * 4096, 5 * 4096 * 4096)
    assert cuda.model_copy(update={"roofline_flops": ""}).roofline() == (8 * 4096 * 4096, None)
    assert problem.roofline() == (None, None)


def test_only_a_kind_with_a_profiler_is_profiled() -> None:
    cuda, problem = _cuda(), _problem()
    for task, candidate in (
        (problem, problem.reference_candidate()),
        (cuda, problem.reference_candidate()),
    ):
        result = profile(task, candidate)
        assert not result.available
        assert result.reason == (
            "profiling unavailable: Nsight Compute profiles CUDA kernels; this candidate "
            "(kernelbench: PyTorch or C++ code) is timed only"
        )


def test_the_judge_reads_each_kinds_outputs_its_way() -> None:
    cuda, problem = _cuda(), _problem()
    trial = Trial({"M": 5, "N": 1000}, seed=1, poisons=(1, 2))
    declared, returned = judge.OUTPUTS["cuda"], judge.OUTPUTS["kernelbench"]
    assert judge.output_expect(cuda, trial, {}).sizes == (5 * 1000 * 4,)  # y, float32
    assert judge.reference_expect(problem, Trial({}, 1, (1,)), 1 << 20).total == 1 << 20
    assert declared.tolerance(cuda, "float32") == (1e-7, 2e-5)  # the task's own
    assert returned.tolerance(problem, "float32") == judge.kernelbench_tolerance("float32")
    assert declared.inputs_differ("timed call 1 of 3")[0] == "implausible"
    assert returned.inputs_differ("timed call 1 of 3")[0] == "error"
    assert declared.round_output(cuda, "y", {}) == (4096 * 4096, "float32")
    meta = {"meta": [{"dtype": "float32", "shape": [128, 1024]}]}
    assert returned.round_output(problem, "output 0", meta) == (128 * 1024, "float32")
    assert returned.round_outputs_problem(meta, {"meta": []}, "call 1") != ""
    assert declared.round_outputs_problem(meta, {"meta": []}, "call 1") == ""


def _kind_isinstances(path: Path) -> list[int]:
    """Lines where `isinstance` or `issubclass` names a task's or a candidate's class."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("isinstance", "issubclass")
            and len(node.args) == 2
        ):
            continue
        names = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
        names |= {n.attr for n in ast.walk(node.args[1]) if isinstance(n, ast.Attribute)}
        if names & KIND_CLASSES:
            lines.append(node.lineno)
    return sorted(lines)


def _package_files() -> list[Path]:
    files = []
    for package in ("tools", "memory", "evals", "agent"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if "cases" not in path.relative_to(ROOT).parts:  # adversarial cases: tasks
                files.append(path)
    return files


def test_the_scan_sees_the_loaders_own_isinstance() -> None:
    assert _kind_isinstances(ROOT / "tools" / "task.py")


def test_no_kind_isinstance_outside_the_loaders_and_the_worker() -> None:
    found = [
        f"{rel}:{line}"
        for path in _package_files()
        if (rel := path.relative_to(ROOT).as_posix()) not in ALLOWED
        for line in _kind_isinstances(path)
    ]
    assert not found, (
        f"{', '.join(found)}: asks a task or a candidate for its class; ask it for the fact "
        "instead (a method or ClassVar on its model), or key a table on task.kind"
    )
