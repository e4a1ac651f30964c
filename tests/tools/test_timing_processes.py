"""KernelBench's sides timed in several processes (no GPU): how many further pairs of workers a
check starts and keeps, and what it does with the rest (verify.Verifier's _more_workers, _ready,
_imported and _after, with recorded workers)."""

from __future__ import annotations

import os
import random
from typing import Any

import numpy as np
import pytest

from kernelwright.tools import correctness, extbuild, fit, plan
from kernelwright.tools import pool as pool_module
from kernelwright.tools.sandbox import Crew, WorkerFailure
from kernelwright.tools.task import load_task
from kernelwright.tools.verify import OwnReference, Verifier, VerifyOptions
from tests.conftest import EXAMPLES


class Box:
    def __init__(self, kind: str, label: str, log: list[str], imported: bool = True) -> None:
        self.kind, self.label, self.log, self.imported = kind, label, log, imported
        self.jobs: list[dict[str, Any]] = []
        self.replies = 0
        self.killed = False

    def __enter__(self) -> Box:
        return self

    def __exit__(self, *exc: object) -> None:
        self.log.append(f"closed {self.label}")

    def send(self, job: dict[str, Any], arrays: Any = None) -> None:
        self.jobs.append(job)

    def kill(self) -> None:
        self.killed = True
        self.log.append(f"killed {self.label}")

    def signal_kill(self) -> None:
        self.log.append(f"signalled {self.label}")

    def receive(self, timeout_s: float, phase: str, expect: Any = None) -> Any:
        assert not self.killed, f"{self.label} read after it was stopped"
        self.replies += 1
        self.log.append(f"{phase}")
        if self.replies == 2:  # the candidate's import
            result = {"ok": self.imported, "log": "" if self.imported else "ImportError: x"}
            return {"type": "compiled", "result": {**result, "backend": "python"}}, []
        return {"type": "device"}, []


class Task:
    host_code = True
    worker_kinds = ("torch-ref", "torch-cand")

    def model_dump(self) -> dict[str, Any]:
        return {"kind": "kernelbench"}


def _verifier(
    monkeypatch: pytest.MonkeyPatch,
    log: list[str],
    failing: str = "",
    host_gib: int = 128,
    **options: Any,
) -> Verifier:
    monkeypatch.setattr(fit, "host_available_bytes", lambda: host_gib << 30)
    verifier = Verifier(VerifyOptions(pin_cpus=False, **options))

    def take(kind: str, label: str) -> Box:
        return Box(kind, label, log, imported=label != failing)

    monkeypatch.setattr(verifier.pool, "take", take)
    return verifier


def _ext(verifier: Verifier) -> extbuild.Builds:
    return extbuild.Builds(verifier.extensions, lambda: "sm_90", 60.0)


def test_each_side_gets_further_processes_that_only_time(monkeypatch: pytest.MonkeyPatch) -> None:
    log: list[str] = []
    verifier = _verifier(monkeypatch, log, timing_processes=3)
    task: Any = Task()
    side = OwnReference(verifier, task, None)
    with Crew() as crew:
        more = verifier._more_workers(task, crew, side, {"class_name": "ModelNew"}, {}, 7)
        assert [(r.label, c.label) for r, c in more] == [
            ("reference 2", "candidate 2"),
            ("reference 3", "candidate 3"),
        ]
        for ref, cand in more:  # sent their jobs at once, with no trials: they only time
            assert ref.jobs[0]["role"] == "reference" and ref.jobs[0]["trials"] == []
            assert cand.jobs[0]["role"] == "candidate" and cand.jobs[0]["trials"] == []
            assert cand.jobs[0]["candidate"] == {"class_name": "ModelNew"}
        # room for both further pairs: 2 GiB free, each pair about 2 x 100 MiB
        kept = verifier._ready(more, {"gpu_peak_bytes": 100 << 20, "gpu_free_bytes": 2 << 30})
        assert kept == more and not any(b.killed for p in more for b in p)
        verifier._imported(kept, _ext(verifier))
        assert all(c.replies == 2 for _, c in kept)
    verifier.close()
    assert sum(e.startswith("closed") for e in log) == 4  # the check's end stops every one


def test_only_as_many_pairs_as_the_gpus_free_memory_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    log: list[str] = []
    verifier = _verifier(monkeypatch, log, timing_processes=4)
    task: Any = Task()
    side = OwnReference(verifier, task, None)
    with Crew() as crew:
        more = verifier._more_workers(task, crew, side, {}, {}, 7)
        assert len(more) == 3
        # 10 GiB free, the reference's trial took 3 GiB: one further pair (2 x 3 <= 0.7 x 10)
        kept = verifier._ready(more, {"gpu_peak_bytes": 3 << 30, "gpu_free_bytes": 10 << 30})
        assert kept == more[:1]
        assert all(r.killed and c.killed for r, c in more[1:])  # their memory back at once
        none = verifier._ready(more[:1], {"gpu_peak_bytes": 8 << 30, "gpu_free_bytes": 10 << 30})
        assert none == [] and more[0][0].killed
    verifier.close()


def test_further_pairs_are_judged_by_the_native_forward_and_the_memory_free_now(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Today's 6 GiB problems: the reference's float64 trials took 33 GiB, so the least free
    memory it saw left room for no further pair, while a timing process holds about its native
    forward's peak (12 GiB). With that peak and the driver's free memory after the trials, one
    further pair fits (a candidate's holding its memory through the first one's trials after
    the timing included); without them the rule is as before."""
    GIB = 1 << 30
    log: list[str] = []
    verifier = _verifier(monkeypatch, log, timing_processes=3)
    task: Any = Task()
    side = OwnReference(verifier, task, None)
    relu = {
        "gpu_peak_bytes": 33 * GIB,  # float64 included
        "gpu_free_bytes": 12 * GIB,
        "gpu_native_peak_bytes": 12 * GIB,
        "gpu_needed_bytes": 32 * GIB,
        "gpu_free_at_start_bytes": 56 * GIB,
    }
    with Crew() as crew:
        more = verifier._more_workers(task, crew, side, {}, {}, 7)
        assert verifier._ready(more, relu, 60 * GIB) == more[:1]
        assert all(r.killed and c.killed for r, c in more[1:])
    with Crew() as crew:  # as before where the driver cannot say what is free
        more = verifier._more_workers(task, crew, side, {}, {}, 7)
        assert verifier._ready(more, relu, None) == []
    with Crew() as crew:  # ample free memory now, but the trials after the timing would not fit
        more = verifier._more_workers(task, crew, side, {}, {}, 7)
        tight = {**relu, "gpu_needed_bytes": 40 * GIB, "gpu_free_at_start_bytes": 50 * GIB}
        assert verifier._ready(more, tight, 70 * GIB) == []
    with Crew() as crew:  # the first reference's own timing allocation counts: 30 GiB is short
        more = verifier._more_workers(task, crew, side, {}, {}, 7)
        assert verifier._ready(more, relu, 30 * GIB) == []
    with Crew() as crew:  # a small problem: every further pair
        more = verifier._more_workers(task, crew, side, {}, {}, 7)
        small = {"gpu_native_peak_bytes": 100 << 20, "gpu_peak_bytes": 300 << 20}
        assert verifier._ready(more, small, 60 * GIB) == more
    verifier.close()


def test_a_further_reference_that_fails_to_start_beside_the_candidate_is_dropped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A further pair's reference worker warms up on the GPU beside the candidate's workers
    and the first pair's trials: a candidate that takes all the GPU's memory for milliseconds
    at a time made it fail there, and the check read as the task's error (kb_gpu_memory_pulse,
    H200). Nothing says whose doing a failure there is (the float64 trials' own peak comes
    and goes too): the pair is dropped, whatever the failure, and the rest are timed."""

    class Failing(Box):
        def receive(self, timeout_s: float, phase: str, expect: Any = None) -> Any:
            if self.label == "reference 2":
                raise WorkerFailure("crashed", self.why)
            return super().receive(timeout_s, phase, expect)

    room = {"gpu_peak_bytes": 100 << 20, "gpu_free_bytes": 2 << 30}
    for why in (
        "warming up: CUDARuntimeError: cudaErrorMemoryAllocation: out of memory",
        "the worker died (signal 9)",
    ):
        log: list[str] = []
        verifier = _verifier(monkeypatch, log, timing_processes=3)
        task: Any = Task()

        def take(kind: str, label: str, why: str = why, log: list[str] = log) -> Box:
            box = Failing(kind, label, log)
            box.why = why  # type: ignore[attr-defined]
            return box

        monkeypatch.setattr(verifier.pool, "take", take)
        for counted in (room, {}):
            with Crew() as crew:
                side = OwnReference(verifier, task, None)
                more = verifier._more_workers(task, crew, side, {}, {}, 7)
                assert len(more) == 2
                assert verifier._ready(more, counted) == more[1:]
                assert more[0][0].killed and more[0][1].killed
        verifier.close()


def test_a_host_short_of_memory_gets_fewer(monkeypatch: pytest.MonkeyPatch) -> None:
    log: list[str] = []
    task: Any = Task()
    small = _verifier(monkeypatch, log, host_gib=20, timing_processes=3)  # a 32 GB desktop
    assert small.processes == 2 and small.pool.processes == {"kernelbench": 2}
    with Crew() as crew:
        assert len(small._more_workers(task, crew, OwnReference(small, task, None), {}, {}, 1)) == 1
    small.close()


def test_a_cuda_task_or_one_process_a_side_starts_none(monkeypatch: pytest.MonkeyPatch) -> None:
    log: list[str] = []
    task: Any = Task()
    one = _verifier(monkeypatch, log, timing_processes=1)
    with Crew() as crew:
        assert one._more_workers(task, crew, OwnReference(one, task, None), {}, {}, 1) == []
    one.close()
    task.host_code = False  # a kernel's launches, timed by events: one process a side
    three = _verifier(monkeypatch, log, timing_processes=3)
    with Crew() as crew:
        assert three._more_workers(task, crew, OwnReference(three, task, None), {}, {}, 1) == []
    three.close()
    assert log == []


def test_a_candidate_that_imports_once_and_not_again_crashed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    log: list[str] = []
    verifier = _verifier(monkeypatch, log, timing_processes=3, failing="candidate 3")
    task: Any = Task()
    with Crew() as crew:
        more = verifier._more_workers(task, crew, OwnReference(verifier, task, None), {}, {}, 1)
        with pytest.raises(WorkerFailure, match="not in worker 3: ImportError") as caught:
            verifier._imported(more, _ext(verifier))
        assert caught.value.verdict == "crashed"
    verifier.close()


def test_the_pool_keeps_spares_for_every_process_of_a_side(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    started: list[str] = []

    class Spare:
        def __init__(self, kind: str) -> None:
            self.kind = kind

        def start(self) -> Spare:
            started.append(self.kind)
            return self

        def close(self) -> None:
            pass

    pool = pool_module.Pool("nvrtc", 1 << 30, None, set(), 10.0, {"kernelbench": 3})
    monkeypatch.setattr(pool, "new", lambda kind, label, cpus=None, now=False: Spare(kind))
    pool.prestart("kernelbench")
    assert sorted(started) == ["torch-cand"] * 3 + ["torch-ref"] * 3
    started.clear()
    pool.prestart("cuda")  # a CUDA task's are timed in one process a side
    assert sorted(started) == ["compile", "cuda", "cuda"]
    pool.close()


def test_a_checks_workers_are_all_signalled_before_any_is_waited_for() -> None:
    """Six workers with CUDA contexts, each waited for before the next was killed, added
    seconds to every KernelBench check; a crew's are all killed at once, then waited for."""
    log: list[str] = []
    with pytest.raises(RuntimeError), Crew() as crew:
        for label in ("reference", "candidate", "reference 2"):
            assert crew.join(Box("torch-ref", label, log)).label == label  # type: ignore[arg-type]
        raise RuntimeError("a check that fails stops its workers the same way")
    assert log == [
        "signalled reference",
        "signalled candidate",
        "signalled reference 2",
        "closed reference 2",
        "closed candidate",
        "closed reference",
    ]
    assert crew.boxes == []


def test_further_workers_asking_for_an_extension_while_they_import_get_the_kept_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each further candidate worker imports the candidate too: its load_inline's request is
    answered between its start and its import's reply, from what the first request built."""
    built: list[dict[str, Any]] = []

    def build(spec: dict[str, Any], arch: str, timeout_s: float) -> tuple[bool, str, bytes]:
        built.append(spec)
        return True, "", b"library"

    monkeypatch.setattr(extbuild, "build_in_sandbox", build)
    monkeypatch.setattr(extbuild, "machine_identity", lambda arch: {"arch": arch})

    class Asks(Box):
        asked = False

        def receive(self, timeout_s: float, phase: str, expect: Any = None) -> Any:
            if self.replies == 1 and not self.asked and self.label.startswith("candidate"):
                self.asked = True
                return {"type": "build", "spec": {"name": "ext", "cpp_sources": ["int f();"]}}, []
            return super().receive(timeout_s, phase, expect)

    log: list[str] = []
    verifier = _verifier(monkeypatch, log, timing_processes=3)
    monkeypatch.setattr(verifier.pool, "take", lambda kind, label: Asks(kind, label, log))
    task: Any = Task()
    with Crew() as crew:
        more = verifier._more_workers(task, crew, OwnReference(verifier, task, None), {}, {}, 1)
        ext = _ext(verifier)
        verifier._imported(more, ext)
        for _, cand in more:
            assert cand.replies == 2 and cand.jobs[-1]["cmd"] == "built" and cand.jobs[-1]["ok"]
    assert len(built) == 1 and [b.cached for b in ext.done] == [False, True]
    verifier.close()


class Runs(Box):
    """A candidate's worker after the timing: it answers each "post" command with its outputs
    (ones), or zeros at the sizes in `wrong_at` (code that changed once the trials were over)."""

    def __init__(self, label: str, log: list[str], wrong_at: tuple[int, ...] = ()) -> None:
        super().__init__("torch-cand", label, log)
        self.wrong_at = wrong_at

    def receive(self, timeout_s: float, phase: str, expect: Any = None) -> Any:
        assert not self.killed, f"{self.label} read after it was stopped"
        cmd = self.jobs[-1]
        assert cmd["cmd"] == "post", "outputs read with no trial asked for"
        rows = cmd["trial"]["sizes"]["batch_size"]
        out = np.full((rows, 4), 0.0 if rows in self.wrong_at else 1.0, dtype=np.float32)
        meta = [{"dtype": "float32", "shape": [rows, 4]}]
        header = {"type": "outputs", "trial": "post", "run": 0, "checksums": ["in"], "meta": meta}
        return header, [out.tobytes()]


def _unasked(i: int, trial: plan.Trial) -> Any:
    raise AssertionError(f"trial {i}'s outputs were sent before the timing")


def _expected(trial: plan.Trial) -> Any:
    rows = trial.sizes["batch_size"]
    meta = {"dtype": "float64", "shape": [rows, 4]}
    header = {"type": "expected", "checksums": ["in"], "meta": [meta]}
    return header | {"native": [{**meta, "dtype": "float32"}]}, [np.ones((rows, 4)).tobytes()]


def test_other_sizes_are_tried_after_the_timing_in_every_process_that_timed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Code that changes once the trials are over (a call count, or the one size a further
    process has seen) is seen at sizes other than the timed one after the timing, in the
    first process and in each further one, against the reference's outputs for them."""
    task = load_task(EXAMPLES / "kernelbench" / "relu_mlp.py")
    later = plan.after_timing(task, random.Random(5))
    below, above = (t.sizes["batch_size"] for t in later)
    log: list[str] = []
    verifier = _verifier(monkeypatch, log, timing_processes=3)
    first, second, third = Runs("candidate", log), Runs("c2", log), Runs("c3", log, (above,))
    more: Any = [(Box("torch-ref", "r2", log), second), (Box("torch-ref", "r3", log), third)]
    after = [(5 + k, t, _expected(t)) for k, t in enumerate(later)]
    ref = Box("torch-ref", "reference", log)
    results = verifier._after(task, after, _unasked, first, ref, more)  # type: ignore[arg-type]
    for box in (first, second, third):  # each asked for both sizes, in the order planned
        assert [j["trial"] for j in box.jobs] == [t.job() for t in later]
    assert [(r.process, r.sizes["batch_size"], r.ok) for r in results] == [
        (1, below, True),
        (2, below, True),
        (3, below, True),
        (1, above, True),
        (2, above, True),
        (3, above, False),
    ]
    assert ref.jobs == []  # nothing kept on the GPU: nothing to free
    assert all(r.phase == "post-timing" and r.held_out for r in results)
    assert results[-1].reason.startswith(
        f"after the timing, at batch_size={above}, in timing process 3: output 'output 0' wrong at"
    )
    # the further processes are done with once theirs are over; the first answers the bench size
    assert second.killed and third.killed and not first.killed
    verifier.close()


def test_after_the_timing_one_process_names_none() -> None:
    task = load_task(EXAMPLES / "kernelbench" / "relu_mlp.py")
    later = plan.after_timing(task, random.Random(8))
    verifier = Verifier(VerifyOptions(pin_cpus=False))
    log: list[str] = []
    only = Runs("candidate", log, tuple(t.sizes["batch_size"] for t in later))
    after = [(5 + k, t, _expected(t)) for k, t in enumerate(later)]
    ref = Box("torch-ref", "reference", log)
    results = verifier._after(task, after, _unasked, only, ref, [])  # type: ignore[arg-type]
    verifier.close()
    assert [r.ok for r in results] == [False, False]
    size = later[0].sizes["batch_size"]
    assert results[0].reason.startswith(
        f"after the timing, at batch_size={size}: output 'output 0' wrong at"
    )


class RunsOnGpu(Runs):
    """As Runs, but each run hands its outputs over as a memory handle (a memfd here), and the
    reference's worker (Compares) is what sees them."""

    def __init__(self, label: str, log: list[str], seen: list[Any], wrong_at: Any = ()) -> None:
        super().__init__(label, log, wrong_at)
        self.seen = seen

    def receive(self, timeout_s: float, phase: str, expect: Any = None) -> Any:
        header, arrays = super().receive(timeout_s, phase, expect)
        rows = header["meta"][0]["shape"][0]
        self.seen.append(np.frombuffer(arrays[0], dtype=np.float32).reshape(rows, 4))
        return {**header, "device": [{"size": 1 << 21, "offset": 0}]}, []

    def receive_fds(self, count: int, *_: Any) -> list[int]:
        assert count == 1
        return [os.memfd_create("out")]


class Compares(Box):
    """The reference's worker keeping a trial's outputs on the GPU: answers each "compare"
    with the facts of the run the candidate's worker last handed over, against ones."""

    def __init__(self, log: list[str], seen: list[Any]) -> None:
        super().__init__("torch-ref", "reference", log)
        self.seen, self.fds = seen, 0

    def send_fds(self, fds: list[int]) -> None:
        self.fds += len(fds)

    def receive(self, timeout_s: float, phase: str, expect: Any = None) -> Any:
        cmd = self.jobs[-1]
        assert cmd["cmd"] == "compare", cmd
        got = self.seen.pop()
        found = correctness.facts(np, got, np.ones(got.shape), 1e-4, 1e-4)
        return {"type": "compared", "trial": cmd["trial"], "facts": [found]}, []


def test_after_the_timing_outputs_kept_on_the_gpu_are_made_once_for_every_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A trial compared on the GPU after the timing: the reference makes its outputs then
    (asked here, after the rounds), keeps them while every process's run is compared with
    them, and frees them ("next") before the next trial's are made."""
    task = load_task(EXAMPLES / "kernelbench" / "relu_mlp.py")
    later = [plan.on_device(task, t) for t in plan.after_timing(task, random.Random(5))]
    below, above = (t.sizes["batch_size"] for t in later)
    log: list[str] = []
    seen: list[Any] = []
    verifier = _verifier(monkeypatch, log, timing_processes=2)
    first, second = RunsOnGpu("candidate", log, seen), RunsOnGpu("c2", log, seen, (above,))
    ref = Compares(log, seen)
    made: list[int] = []

    def expected_for(i: int, trial: plan.Trial) -> Any:
        made.append(i)
        ref.jobs.append({"cmd": "(made)", "trial": i})
        rows = trial.sizes["batch_size"]
        meta = {"dtype": "float64", "shape": [rows, 4]}
        header = {"type": "expected", "trial": i, "checksums": ["in"], "meta": [meta]}
        return header | {"device": True, "native": [{**meta, "dtype": "float32"}]}, []

    after = [(5 + k, t, None) for k, t in enumerate(later)]
    more: Any = [(Box("torch-ref", "r2", log), second)]
    results = verifier._after(task, after, expected_for, first, ref, more)  # type: ignore[arg-type]
    assert made == [5, 6]
    assert [(j["cmd"], j["trial"]) for j in ref.jobs] == [
        ("(made)", 5), ("compare", 5), ("compare", 5), ("next", 5),
        ("(made)", 6), ("compare", 6), ("compare", 6), ("next", 6),
    ]  # fmt: skip
    assert ref.fds == 4 and all(r.on_gpu for r in results)
    assert [(r.process, r.sizes["batch_size"], r.ok) for r in results] == [
        (1, below, True),
        (2, below, True),
        (1, above, True),
        (2, above, False),
    ]
    assert "in timing process 2: output 'output 0' wrong at" in results[-1].reason
    verifier.close()
