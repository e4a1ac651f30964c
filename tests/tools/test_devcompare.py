"""Large trials compared on the GPU (devcompare.py), without one: which trials go there, the
verdict from the facts the reference's worker sends (the same as the controller's own
comparison of the same arrays), the memory handles' channel, and the controller's side."""

from __future__ import annotations

import dataclasses
import os
import random
import socket
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kernelwright.tools import correctness, judge, plan
from kernelwright.tools.sandbox import Sandbox, WorkerFailure
from kernelwright.tools.serving import Worker
from kernelwright.tools.task import load_task
from kernelwright.tools.verify import Verifier
from tests.conftest import EXAMPLES

POISON = plan.poisons(random.Random(3), 1)


def _transpose() -> Any:
    return load_task(EXAMPLES / "transpose")


def test_only_large_one_run_trials_of_cuda_tasks_are_compared_on_the_gpu() -> None:
    task = _transpose()
    trials, post = plan.plan_trials(task, random.Random(5))
    marked = [plan.on_device(task, t) for t in trials]
    assert plan.on_device(task, post).device  # 256 MB at the bench size
    for before, after in zip(trials, marked, strict=True):
        large = plan._nbytes(task, before.sizes) >= 2 * plan.DEVICE_BYTES
        assert after.device == (large and len(before.poisons) == 1), before.sizes
        assert after.job()["device"] == after.device
    assert any(t.device for t in marked) and not all(t.device for t in marked)
    small = plan.Trial({"M": 8, "N": 8}, 1, POISON)
    assert not plan.on_device(task, small).device
    two_runs = plan.Trial(dict(task.bench), 1, plan.poisons(random.Random(1), 2))
    assert not plan.on_device(task, two_runs).device  # runs are compared with each other too


def test_cpp_trials_stay_on_the_host() -> None:
    cpp = load_task(EXAMPLES / "cpp" / "jacobi2d")
    trials, post = plan.plan_trials(cpp, random.Random(5))
    assert not any(plan.on_device(cpp, t).device for t in [*trials, post])


def test_every_kernelbench_trial_is_compared_on_the_gpu() -> None:
    """A forward's outputs are known only once it ran (today's problems return up to 14 GB):
    every trial, of one run or two, and those after the timing, are compared where they are."""
    kb = load_task(EXAMPLES / "kernelbench" / "relu_mlp.py")
    rng = random.Random(5)
    trials, post = plan.plan_trials(kb, rng)
    later = plan.after_timing(kb, rng)
    marked = [plan.on_device(kb, t) for t in [*trials, *later, post]]
    assert all(t.device and t.job()["device"] for t in marked)
    assert {len(t.poisons) for t in marked} == {1, 2}


def _arrays(case: str) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    exp = rng.standard_normal((64, 48)).astype(np.float32)
    got = exp.copy()
    if case == "one wrong":
        got[40, 3] += 0.5
    elif case == "unwritten tail":
        got.reshape(-1)[-100:] = np.frombuffer(
            np.uint32(POISON[0] & 0xFFFFFFFF).tobytes(), np.float32
        )[0]
    elif case == "infinities":
        exp[1, 1], got[1, 1] = np.inf, np.inf
        exp[2, 2], got[2, 2] = -np.inf, 5.0
    elif case == "float64 reference":
        return got, exp.astype(np.float64) + 1e-7
    return got, exp


CASES = ["correct", "one wrong", "unwritten tail", "infinities", "float64 reference"]


@pytest.mark.parametrize("case", CASES)
def test_facts_word_the_same_verdict_as_the_controllers_own_comparison(case: str) -> None:
    got, exp = _arrays(case)
    direct = correctness.compare("y", got, exp, 1e-5, 1e-5)
    found = correctness.facts(np, got, exp, 1e-5, 1e-5)
    assert correctness.outcome("y", got.shape, found, 1e-5, 1e-5) == direct
    assert direct.ok == (case in ("correct", "float64 reference"))


def test_integer_facts() -> None:
    exp = np.arange(100, dtype=np.int32).reshape(10, 10)
    got = exp.copy()
    got[3, 4] = -1
    found = correctness.facts(np, got, exp, 0.0, 0.0)
    assert correctness.outcome("h", got.shape, found, 0.0, 0.0) == correctness.compare(
        "h", got, exp, 0.0, 0.0
    )
    assert (
        "first at [3, 4]: got -1, expected 34"
        in correctness.outcome("h", got.shape, found, 0.0, 0.0).reason
    )


def _one_run(task: Any, sizes: dict[str, int]) -> plan.Trial:
    return plan.Trial(sizes, 11, POISON, held_out=True, device=True)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("header_change", ["none", "input modified", "guards", "problem"])
def test_a_trial_judged_from_facts_is_judged_as_from_the_arrays(
    case: str, header_change: str
) -> None:
    """The verdict on a run compared on the GPU equals the verdict on the same run's arrays
    sent to the controller: every check of the run's header, then each output."""
    task = _transpose()
    got, exp = _arrays(case)
    sizes = {"M": exp.shape[1], "N": exp.shape[0]}  # y is [N, M]
    trial = _one_run(task, sizes)
    ref_header = {"checksums": {"x": "abc"}, "dtypes": [str(exp.dtype)]}
    header: dict[str, Any] = {"checksums": {"x": "abc"}, "guards": []}
    if header_change == "input modified":
        header["checksums"] = {"x": "abd"}
    elif header_change == "guards":
        header["guards"] = ["y"]
    elif header_change == "problem":
        header["problem"] = "the worker says: out of memory"
    host_trial = plan.Trial(sizes, 11, POISON, held_out=True)
    from_arrays = judge.trial_result(
        task,
        host_trial,
        (ref_header, [memoryview(exp.tobytes())]),
        [(header, [memoryview(got.tobytes())])],
        "check",
    )
    found = [correctness.facts(np, got, exp, *judge.OUTPUTS["cuda"].tolerance(task, "float32"))]
    from_facts = judge.device_trial_result(
        task, trial, ref_header, [(header, found, None)], "check"
    )
    assert from_facts.model_dump(exclude={"on_gpu"}) == from_arrays.model_dump(exclude={"on_gpu"})
    assert from_facts.on_gpu and not from_arrays.on_gpu


def test_facts_that_could_not_be_had_fail_the_trial() -> None:
    task = _transpose()
    trial = _one_run(task, {"M": 4, "N": 4})
    header = {"checksums": {}, "guards": []}
    result = judge.device_trial_result(
        task,
        trial,
        {"checksums": {}},
        [(header, [{"problem": "its memory does not hold it"}], None)],
        "check",
    )
    assert not result.ok and "could not be compared: its memory does not hold it" in result.reason
    result = judge.device_trial_result(
        task, trial, {"checksums": {}}, [(header, [], None)], "check"
    )
    assert not result.ok and "0 outputs compared, expected 1" in result.reason
    result = judge.device_trial_result(task, trial, {"checksums": {}}, [], "check")
    assert not result.ok and "0 runs compared, expected 1" in result.reason


def test_each_output_is_described_from_the_task_not_the_worker() -> None:
    task = _transpose()
    trial = _one_run(task, {"M": 300, "N": 200})
    out = judge.device_outputs(task, trial, {"device": [{"size": 1 << 21, "offset": 256}]}, {})
    assert out == [
        {
            "size": 1 << 21,
            "offset": 256,
            "dtype": "float32",
            "shape": [200, 300],
            "atol": 1e-5,
            "rtol": 1e-5,
        }
    ]
    for bad in (None, [], [{"size": 1}, {"size": 2}], ["x"]):
        with pytest.raises(ValueError, match="not handed over"):
            judge.device_outputs(task, trial, {"device": bad}, {})


def test_the_harness_kernels_compile_with_every_comparison_in_them() -> None:
    """kernels.SOURCE with every template the workers look up, through NVRTC as CuPy compiles
    it in the workers (no GPU needed): NVRTC has no math.h macros, where nvcc would pass."""
    from cupy_backends.cuda.libs import nvrtc

    from kernelwright.tools import kernels
    from kernelwright.tools.compile import cuda_include_dir

    include = cuda_include_dir()
    if include is None:
        pytest.skip("no CUDA headers")
    names = [
        *kernels.COMPARE.values(),
        *kernels.COMPARE_WORST.values(),
        *kernels.COMPARE_EXACT.values(),
        *kernels.SKETCH.values(),
        *kernels.COUNT.values(),
        *kernels.GENERATE.values(),
    ]
    assert len(kernels.COMPARE) == 9 and ("float32", "float64") in kernels.COMPARE
    prog = nvrtc.createProgram(kernels.SOURCE, "kernels.cu", [], [])
    for name in names:
        nvrtc.addNameExpression(prog, name)
    try:
        nvrtc.compileProgram(prog, ["--std=c++17", "-arch=compute_90", f"-I{include}"])
    except nvrtc.NVRTCError:
        pytest.fail(nvrtc.getProgramLog(prog)[-3000:])
    assert all(nvrtc.getLoweredName(prog, name) for name in names)


def _memfd(text: bytes) -> int:
    fd = os.memfd_create("kw-test")
    os.write(fd, text)
    return fd


def _read(fd: int) -> bytes:
    os.lseek(fd, 0, os.SEEK_SET)
    data = os.read(fd, 100)
    os.close(fd)
    return data


def test_descriptors_cross_between_controller_and_worker(tmp_path: Path) -> None:
    box = Sandbox("t")
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    box.fd_socket = ours
    job = {"task": _transpose().model_dump()}
    worker = Worker(None, os.open(os.devnull, os.O_WRONLY), job, tmp_path)
    worker.fd_channel = theirs.fileno()
    try:
        fds = [_memfd(b"first"), _memfd(b"second")]
        worker.send_fds(fds)
        got = box.receive_fds(2, 5.0, "test")
        assert [_read(fd) for fd in got] == [b"first", b"second"]
        box.send_fds([fds[0]])
        (back,) = worker.receive_fds(1)
        assert _read(back) == b"first"
        for fd in fds:
            os.close(fd)
        worker.send_fds([_memfd(b"one")])  # one where two are due: the worker's failure
        with pytest.raises(WorkerFailure, match="sent 1 memory handles, expected 2"):
            box.receive_fds(2, 5.0, "test")
        with pytest.raises(WorkerFailure, match="killed after"):
            box.receive_fds(1, 0.2, "test")  # none at all
    finally:
        ours.close()
        theirs.close()
        box.close()


class _Box:
    """A worker's side of the channel, recorded: replies queued, sends kept."""

    def __init__(self, replies: list[dict[str, Any]], fds: list[int] | None = None) -> None:
        self.replies, self.fds, self.sent, self.passed = replies, fds or [], [], []

    def receive(self, *_: Any) -> tuple[dict[str, Any], list[Any]]:
        return self.replies.pop(0), []

    def receive_fds(self, count: int, *_: Any) -> list[int]:
        assert count == len(self.fds)
        return self.fds

    def send(self, header: dict[str, Any], arrays: Any = None) -> None:
        self.sent.append(header)

    def send_fds(self, fds: list[int]) -> None:
        self.passed += [_read(os.dup(fd)) for fd in fds]


def test_the_controller_passes_the_candidates_memory_to_the_reference() -> None:
    task = _transpose()
    trial = _one_run(task, {"M": 64, "N": 48})
    got, exp = _arrays("one wrong")
    found = correctness.facts(np, got.T.copy().T, exp, 1e-5, 1e-5)
    run = {
        "type": "outputs",
        "checksums": {"x": "a"},
        "guards": [],
        "device": [{"size": 4 << 20, "offset": 512}],
    }
    fd = _memfd(b"the candidate's y")
    cand = _Box([run], [fd])
    ref = _Box([{"type": "compared", "trial": 3, "facts": [found]}])
    verifier = Verifier.__new__(Verifier)
    verifier.options = type("O", (), {"run_timeout_s": 5.0, "start_timeout_s": 5.0})()
    verifier._run_timeout = lambda task: 5.0  # type: ignore[method-assign]
    result = verifier._trial(
        task, trial, ({"trial": 3, "checksums": {"x": "a"}}, []), cand, "check", ref
    )  # type: ignore[arg-type]
    assert ref.sent == [
        {"cmd": "compare", "trial": 3, "outputs": judge.device_outputs(task, trial, run, {})}
    ]
    assert ref.passed == [b"the candidate's y"]
    assert cand.sent == [{"cmd": "taken"}]  # its next run may start: this one was compared
    with pytest.raises(OSError):
        os.fstat(fd)  # the controller keeps no descriptor
    assert not result.ok and result.on_gpu and "wrong at 1 of 3,072" in result.reason
    nothing = _Box([{"type": "outputs", "checksums": {}, "guards": []}])
    with pytest.raises(WorkerFailure, match="not handed over"):
        verifier._trial(task, trial, ({"trial": 3}, []), nothing, "check", ref)  # type: ignore[arg-type]


def _kb() -> Any:
    return load_task(EXAMPLES / "kernelbench" / "relu_mlp.py")


def _kb_ref(shape: list[int], native: str = "float32") -> dict[str, Any]:
    return {
        "trial": 2,
        "checksums": ["in"],
        "meta": [{"dtype": "float64", "shape": shape}],
        "native": [{"dtype": native, "shape": shape}],
        "device": True,
    }


def _kb_run(shape: list[int], dtype: str = "float32", count: int = 1) -> dict[str, Any]:
    return {
        "type": "outputs",
        "checksums": ["in"],
        "meta": [{"dtype": dtype, "shape": shape}] * count,
        "device": [{"size": 1 << 21, "offset": 0}] * count,
    }


def test_a_kernelbench_run_is_described_from_the_references_own_run() -> None:
    """Its outputs' dtype and shape come from the reference's run, never the candidate's; a
    run that returns another count, dtype or shape is wrong before anything is compared, as
    on the host."""
    task, trial = _kb(), plan.Trial({}, 1, POISON, device=True)
    ref = _kb_ref([8, 4], "bfloat16")
    out = judge.device_outputs(task, trial, _kb_run([8, 4], "bfloat16"), ref)
    atol, rtol = judge.kernelbench_tolerance("bfloat16")
    assert out == [
        {"size": 1 << 21, "offset": 0, "dtype": "bfloat16", "shape": [8, 4], "atol": atol,
         "rtol": rtol}
    ]  # fmt: skip
    assert judge.device_run_problem(task, _kb_run([8, 4], "bfloat16"), ref) == ""
    assert judge.device_run_problem(task, _kb_run([8, 4], "float32"), ref) == (
        "output 0 is float32 [8, 4], expected bfloat16 [8, 4]"
    )
    assert judge.device_run_problem(task, _kb_run([4, 8], "bfloat16"), ref).startswith(
        "output 0 is bfloat16 [4, 8]"
    )
    two = _kb_run([8, 4], "bfloat16", count=2)
    assert (
        judge.device_run_problem(task, two, ref)
        == "returned 2 outputs, expected 1: not the reference's outputs"
    )
    changed = {**_kb_run([8, 4], "bfloat16"), "checksums": ["other"]}
    assert (
        judge.device_run_problem(task, changed, ref)
        == "input modified: input 0 differs after the call"
    )
    with pytest.raises(ValueError, match="not handed over"):
        judge.device_outputs(task, trial, two, ref)


def test_two_runs_compared_on_the_gpu_must_agree_with_each_other() -> None:
    """Each run within tolerance of the reference, but not of each other (up to twice the
    tolerance apart): as on the host, the runs disagree."""
    task = _kb()
    trial = plan.Trial({"batch_size": 8}, 1, plan.poisons(random.Random(1), 2), device=True)
    ref = _kb_ref([8, 4])
    exp = np.ones((8, 4))
    atol, rtol = judge.kernelbench_tolerance("float32")
    first = (exp * (1 + 0.9 * (atol + rtol))).astype(np.float32)
    second = (exp * (1 - 0.9 * (atol + rtol))).astype(np.float32)
    runs = [
        (_kb_run([8, 4]), [correctness.facts(np, first, exp, atol, rtol)], None),
        (
            _kb_run([8, 4]),
            [correctness.facts(np, second, exp, atol, rtol)],
            [correctness.facts(np, second, first, atol, rtol)],
        ),
    ]
    on_host = judge.trial_result(
        task,
        dataclasses.replace(trial, device=False),
        ({**ref, "device": False}, [memoryview(exp.tobytes())]),
        [(_kb_run([8, 4]), [memoryview(first.tobytes())]),
         (_kb_run([8, 4]), [memoryview(second.tobytes())])],
        "check",
    )  # fmt: skip
    on_gpu = judge.device_trial_result(task, trial, ref, runs, "check")
    assert not on_host.ok and on_gpu.reason == on_host.reason
    assert "differs between two runs" in on_gpu.reason
    same = [runs[0], (runs[1][0], runs[1][1], [correctness.facts(np, first, first, atol, rtol)])]
    assert judge.device_trial_result(task, trial, ref, same, "check").ok
    unpaired = [runs[0], (runs[1][0], runs[1][1], None)]
    assert (
        "its two runs could not be compared"
        in judge.device_trial_result(
            task, trial, ref, [unpaired[0], (runs[1][0], runs[1][1], [])], "check"
        ).reason
    )


def test_the_controller_holds_a_first_run_for_the_second_and_reads_every_run() -> None:
    """A two-run trial: the first run is compared and held ("hold"), the second compared with
    the reference and with it ("agree"). A run whose header condemns it is not compared, and
    its handles are closed, but the runs after it are still read."""
    task = _kb()
    trial = plan.Trial({"batch_size": 8}, 1, plan.poisons(random.Random(1), 2), device=True)
    exp = np.ones((8, 4))
    found = correctness.facts(np, exp.astype(np.float32), exp, 1e-4, 1e-4)
    verifier = Verifier.__new__(Verifier)
    verifier.options = type("O", (), {"run_timeout_s": 5.0, "start_timeout_s": 5.0})()
    verifier._run_timeout = lambda task: 5.0  # type: ignore[method-assign]

    class Cand(_Box):
        def receive_fds(self, count: int, *_: Any) -> list[int]:
            return [_memfd(b"run") for _ in range(count)]

    runs = [_kb_run([8, 4]), _kb_run([8, 4])]
    ref = _Box(
        [
            {"type": "compared", "trial": 2, "facts": [found]},
            {"type": "compared", "trial": 2, "facts": [found], "agreed": [found]},
        ]
    )
    first = Cand(runs)
    result = verifier._trial(task, trial, (_kb_ref([8, 4]), []), first, "check", ref)  # type: ignore[arg-type]
    assert result.ok and result.on_gpu, result.reason
    assert first.sent == [{"cmd": "taken"}] * 2  # each run's go-ahead, once compared
    assert [(c["cmd"], c.get("hold"), c.get("agree")) for c in ref.sent] == [
        ("compare", True, None),
        ("compare", None, True),
    ]
    assert ref.passed == [b"run", b"run"]
    wrong = [{**_kb_run([8, 4]), "checksums": ["other"]}, _kb_run([8, 4])]
    cand, ref = Cand(wrong), _Box([])
    result = verifier._trial(task, trial, (_kb_ref([8, 4]), []), cand, "check", ref)  # type: ignore[arg-type]
    assert not result.ok and result.reason == "input modified: input 0 differs after the call"
    assert cand.replies == [] and ref.sent == []  # both runs read, neither compared
    assert cand.sent == [{"cmd": "taken"}] * 2  # and each let go, its handles closed
    bad = _Box([{**_kb_run([8, 4]), "device": "everything"}])
    with pytest.raises(WorkerFailure, match="not handed over"):
        verifier._trial(task, trial, (_kb_ref([8, 4]), []), bad, "check", ref)  # type: ignore[arg-type]


def test_the_reference_serves_a_trials_comparisons_until_next(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One trial's outputs kept for as many runs and processes as the controller compares,
    then freed on its "next"; a command for another trial is an error, never a comparison."""
    from kernelwright.tools import devcompare

    class W:
        def __init__(self, cmds: list[dict[str, Any]]) -> None:
            self.cmds = cmds

        def command(self) -> dict[str, Any]:
            return self.cmds.pop(0)

    runs: list[Any] = []

    def run(
        worker: Any, trial: int, kept: list[Any], cmd: dict[str, Any], held: list[Any]
    ) -> list[Any]:
        runs.append((cmd.get("hold"), list(held)))
        return ["held"] if cmd.get("hold") else []

    monkeypatch.setattr(devcompare, "_compare_run", run)
    kept = ["expected"]
    cmds = [
        {"cmd": "compare", "trial": 4, "hold": True},
        {"cmd": "compare", "trial": 4, "agree": True},
        {"cmd": "compare", "trial": 4},
        {"cmd": "next", "trial": 4},
    ]
    devcompare.compare_here(W(cmds), 4, kept)  # type: ignore[arg-type]
    assert runs == [(True, []), (None, ["held"]), (None, [])] and kept == []
    with pytest.raises(ValueError, match="expected the comparison of trial 4"):
        devcompare.compare_here(W([{"cmd": "compare", "trial": 5}]), 4, ["expected"])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="expected the comparison of trial 4"):
        devcompare.compare_here(W([{"cmd": "next", "trial": 3}]), 4, ["expected"])  # type: ignore[arg-type]


def test_a_worker_hands_a_run_over_only_once_the_one_before_was_taken() -> None:
    """serving.Worker.handed_over: after a run's handles go out, the worker waits for the
    controller's "taken" (each handle holds GPU memory: a worker running its trials back to
    back would otherwise have all of them handed over at once); anything else is an error."""
    from kernelwright.tools.protocol import FrameReader, write_message
    from kernelwright.tools.serving import Worker

    def worker(*cmds: dict[str, Any]) -> Worker:
        r, w = os.pipe()
        for cmd in cmds:
            write_message(w, cmd)
        os.close(w)
        got = Worker.__new__(Worker)
        got.reader = FrameReader(r)
        return got

    w = worker({"cmd": "taken"}, {"cmd": "round"})
    w.handed_over()
    assert w.command()["cmd"] == "round"  # the next command, for what comes next
    with pytest.raises(ValueError, match="expected 'taken' after handing a run over"):
        worker({"cmd": "warmup"}).handed_over()
