"""The KernelBench workers' set-up order, without torch or a GPU: fakes stand for torch, the
runner and the clock, and record what each worker does first."""

from __future__ import annotations

import contextlib
import sys
import types
import weakref
from pathlib import Path
from typing import Any

import pytest

from kernelwright.tools import runners, timing, torch_roles


class _Model:
    def __call__(self, *inputs: Any) -> float:
        return 0.0


class _Worker:
    def __init__(self, trials: int) -> None:
        self.job: dict[str, Any] = {
            "trials": [{"sizes": {}, "seed": s} for s in range(trials)],
            "device": {"l2_bytes": 1 << 20},
        }
        self.scratch = Path("/nonexistent")
        self.sent: list[str] = []
        self.clock: Any = None
        self.made: list[Any] = []  # weak references to every model the trials built
        self.alive_when_served: list[Any] = []

    def send(self, msg: dict[str, Any], arrays: Any = ()) -> None:
        self.sent.append(msg["type"] + (" on the GPU" if msg.get("device") else ""))

    def serve(self, timed: Any, post: Any = None) -> None:
        self.sent.append("serve")
        self.alive_when_served = [r for r in self.made if r() is not None]


def _fakes(monkeypatch: pytest.MonkeyPatch, w: _Worker, done: list[str]) -> None:
    fake_torch = types.ModuleType("torch")
    fake_torch.no_grad = contextlib.nullcontext  # type: ignore[attr-defined]
    fake_torch.Tensor = type("Tensor", (), {})  # type: ignore[attr-defined]
    fake_torch.cuda = types.SimpleNamespace(  # type: ignore[attr-defined]
        reset_peak_memory_stats=lambda: None,
        max_memory_allocated=lambda: 1 << 20,
        mem_get_info=lambda: (1 << 30, 1 << 31),
        synchronize=lambda: None,
        empty_cache=lambda: None,
    )
    monkeypatch.setitem(sys.modules, "torch", fake_torch)

    class Runner:
        def inputs(self, seed: int, sizes: dict[str, int], scale: float = 1.0) -> list[Any]:
            done.append("inputs" if scale == 1.0 else f"inputs x{scale:g}")
            return []

        def __init__(self, *args: Any, share: bool = False) -> None:
            done.append("runner shared" if share else "runner")
            self.kept: dict[Any, Any] = {}

        def _rng(self, state: Any = None) -> Any:  # the generators' states (none here)
            return None

        def build(
            self,
            seed: int,
            sizes: dict[str, int],
            float64: bool = False,
            keep: bool = False,
            twin: bool = False,
        ) -> Any:
            key = (seed, tuple(sorted(sizes.items())), float64)
            if twin:
                done.append("twin")
            if keep and key in self.kept:
                done.append("kept64" if float64 else "kept")
                return self.kept[key]
            done.append("build64" if float64 else "build")
            model = _Model()
            w.made.append(weakref.ref(model))
            if keep:
                self.kept[key] = model
            return model

        def forget(self) -> None:
            done.append("forget")
            self.kept.clear()

        def prepare(self, seed: int) -> None:
            done.append(f"prepare {seed}")

    def clock(l2_bytes: int) -> str:
        done.append("clock")
        return "the clock"

    monkeypatch.setattr(runners, "TorchRunner", Runner)
    monkeypatch.setattr(timing, "Clock", clock)
    monkeypatch.setattr(torch_roles, "tensor_checksums", lambda xs: [])
    monkeypatch.setattr(torch_roles, "outputs", lambda out: ([], {}))
    monkeypatch.setattr(torch_roles, "described", lambda out: [])


def test_the_reference_worker_sets_up_as_the_candidates_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The candidate's worker binds its clock before its code loads; the reference's made it
    after its float64 trials, so the two set up differently and the reference read slower
    against itself. Both now make the clock first."""
    done: list[str] = []
    w = _Worker(trials=2)
    _fakes(monkeypatch, w, done)
    torch_roles.torch_reference(w)
    assert done[0] == "clock" and done.count("clock") == 1
    assert done.count("build64") == 2 and w.clock == "the clock"
    assert w.sent == ["expected", "expected", "serve"]
    # nothing a trial built is held through the timing: the float64 model of a problem at its
    # own size (and its float64 inputs) can be as large as the problem's inputs
    assert len(w.made) == 4 and w.alive_when_served == []


def test_a_scaled_trial_makes_its_inputs_scaled_in_the_reference_worker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The job's `scale` for a trial (plan.SCALES) reaches the runner's inputs there, and only
    there: the other trials and the rounds get get_inputs()'s own."""
    done: list[str] = []
    w = _Worker(trials=3)
    w.job["trials"][2]["scale"] = 64.0
    _fakes(monkeypatch, w, done)
    torch_roles.torch_reference(w)
    made = [d for d in done if d.startswith("inputs")]
    assert made == ["inputs", "inputs", "inputs x64"]


def test_trials_compared_on_the_gpu_are_kept_there_and_run_where_the_controller_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A trial marked `device` sends no arrays: its outputs stay on the GPU while the
    candidate's runs are compared with them (devcompare.compare_here); those the controller
    names in `after_rounds` run after the rounds, in its order (the post-timing one first).
    Without memory to hand over, every trial is sent, in the job's order, before the rounds."""
    from kernelwright.tools import devcompare

    done: list[str] = []
    w = _Worker(trials=4)
    for t in w.job["trials"][1:]:
        t["device"] = True
    w.job["after_rounds"] = [3, 2]
    w.job["device"]["vmm"] = True
    _fakes(monkeypatch, w, done)
    monkeypatch.setattr(torch_roles, "_on_device", lambda out: ["kept"])
    compared: list[tuple[int, list[str]]] = []
    monkeypatch.setattr(
        devcompare, "compare_here", lambda worker, i, kept: compared.append((i, kept))
    )
    torch_roles.torch_reference(w)
    assert w.sent == [
        "expected",
        "expected on the GPU",
        "serve",
        "expected on the GPU",
        "expected on the GPU",
    ]
    assert compared == [(1, ["kept"]), (3, ["kept"]), (2, ["kept"])]
    w2 = _Worker(trials=4)
    for t in w2.job["trials"][1:]:
        t["device"] = True
    w2.job["after_rounds"] = [3, 2]  # no "vmm": all before, all sent
    _fakes(monkeypatch, w2, [])
    torch_roles.torch_reference(w2)
    assert w2.sent == ["expected"] * 4 + ["serve"]
    w3 = _Worker(trials=2)
    w3.job["device"]["vmm"] = True
    w3.job["after_rounds"] = [1]  # not marked `device`: the controller and worker disagree
    with pytest.raises(ValueError, match="cannot run after the rounds"):
        torch_roles.torch_reference(w3)


def test_a_sized_job_says_its_trials_sizes_first_and_keeps_room_for_the_candidate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With "sized" in its job (fit.MEASURED), the reference's worker sends every trial's
    sizes (torch_roles.sized) and the GPU's free memory before it runs one. A trial whose
    float64 forward, kept beside the candidate's run, would not fit the free memory gets its
    expected outputs from the native forward (labelled so); one not sized runs in float64."""
    done: list[str] = []
    w = _Worker(trials=2)
    w.job["sized"] = True
    headers: list[dict[str, Any]] = []
    send = w.send

    def keep(msg: dict[str, Any], arrays: Any = ()) -> None:
        headers.append(msg)
        send(msg, arrays)

    w.send = keep  # type: ignore[method-assign]
    _fakes(monkeypatch, w, done)
    big = {"in": 1 << 30, "in64": 2 << 30, "out": 1 << 30, "out64": 2 << 30, "w": 0, "w64": 0}
    monkeypatch.setattr(torch_roles, "sized", lambda runner, trials: [big, None])
    torch_roles.torch_reference(w)  # the fakes' GPU: 1 GiB free of 2
    assert w.sent == ["sized", "expected", "expected", "serve"]
    assert headers[0]["trials"] == [big, None] and headers[0]["gpu_free_bytes"] == 1 << 30
    assert headers[1]["reference"] == "PyTorch eager"
    assert headers[2]["reference"] == "PyTorch eager in float64"
    # the native forward's peak, read before any float64 model: about a timing process's
    assert all(h["gpu_native_peak_bytes"] == 1 << 20 for h in headers[1:])
    assert done.count("build64") == 1
    # a copy of the native model as built is asked for in every trial, before any float64
    # model: it serves the float64 build, other sizes and the trials after the timing
    assert done.count("twin") == 2 and done.index("twin") < done.index("build64")
    # the reference's runner keeps one model for every trial built alike
    assert "runner shared" in done and "runner" not in done
    w2 = _Worker(trials=1)  # no "sized": nothing sent before the trials, as before
    _fakes(monkeypatch, w2, [])
    monkeypatch.setattr(torch_roles, "sized", lambda runner, trials: pytest.fail("sized"))
    torch_roles.torch_reference(w2)
    assert w2.sent == ["expected", "serve"]


def test_trials_of_one_model_seed_build_the_model_once_and_not_through_the_timing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Trials that share a model seed and sizes (a check gives all its trials one, as
    KernelBench's harness builds one model) share the model in each precision; a trial at
    other sizes builds its own; none is alive when the rounds are served."""
    done: list[str] = []
    w = _Worker(trials=4)
    for t in w.job["trials"]:
        t["model_seed"] = 77
    w.job["trials"][2]["sizes"] = {"batch_size": 3}
    _fakes(monkeypatch, w, done)
    torch_roles.torch_reference(w)
    assert done.count("build") == 2 and done.count("build64") == 2  # {} and batch_size=3
    assert done.count("kept") == 2 and done.count("kept64") == 2
    assert done[-1] == "forget" and w.sent[-1] == "serve"
    assert w.alive_when_served == []


def test_what_the_candidate_holds_does_not_choose_the_references_precision(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The float64 forward's room is judged against the GPU's whole memory: a candidate's
    worker that holds nearly all of it (free: 1 MiB of 80 GiB) cannot make the reference fall
    back to its native precision."""
    import sys

    done: list[str] = []
    w = _Worker(trials=1)
    w.job["sized"] = True
    _fakes(monkeypatch, w, done)
    sys.modules["torch"].cuda.mem_get_info = lambda: (1 << 20, 80 << 30)  # type: ignore[attr-defined]
    big = {"in": 1 << 30, "in64": 2 << 30, "out": 1 << 30, "out64": 2 << 30, "w": 0, "w64": 0}
    monkeypatch.setattr(torch_roles, "sized", lambda runner, trials: [big])
    torch_roles.torch_reference(w)
    assert done.count("build64") == 1


def test_the_reference_draws_the_timings_model_before_it_serves_the_rounds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where the job names the timing's model seed, the reference's worker draws that model
    after its trials and before the rounds (not in the warm-up, pinned beside every other
    worker); a further timing process, with no trials, at once."""
    done: list[str] = []
    w = _Worker(trials=2)
    w.job["timing_model_seed"] = 41
    _fakes(monkeypatch, w, done)
    torch_roles.torch_reference(w)
    assert done[-2:] == ["forget", "prepare 41"] and w.sent[-1] == "serve"
    further = _Worker(trials=0)
    further.job["timing_model_seed"] = 41
    done.clear()
    _fakes(monkeypatch, further, done)
    torch_roles.torch_reference(further)
    assert "prepare 41" in done and further.sent == ["serve"]
    plain = _Worker(trials=1)  # no seed named (a job from before): nothing drawn ahead
    done.clear()
    _fakes(monkeypatch, plain, done)
    torch_roles.torch_reference(plain)
    assert not any(d.startswith("prepare") for d in done)


def test_how_far_the_native_forward_is_from_float64_in_tolerances(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """native_slack: the most an output's sampled elements took of its dtype's tolerance
    (from the reference's own native forward and its float64 one); NaN where float64 is
    finite is SLACK_MAX; integer outputs 0. A large output is sampled every p-th element, p
    prime, which falls on every column: an error in one column alone is seen."""
    torch = pytest.importorskip("torch")
    from kernelwright.tools.judge import kernelbench_tolerance

    atol, rtol = kernelbench_tolerance("float32")
    truth = torch.rand(100, 128, dtype=torch.float64) - 0.5
    bound = atol + rtol * truth.abs()
    meta = [{"dtype": "float32", "shape": [100, 128]}, {"dtype": "int64", "shape": [3]}]

    def slack(native: Any) -> list[float]:
        ints = torch.arange(3)
        out = (native, ints)
        return torch_roles.native_slack(torch_roles._samples(out), (truth, ints), meta)

    assert slack(truth.float()) == pytest.approx([0.0, 0.0], abs=0.01)
    off = truth.clone()
    off[7, 5] += 5.5 * bound[7, 5]
    assert slack(off.float())[0] == pytest.approx(5.5, rel=0.01)
    nan = truth.float()
    nan[3, 3] = float("nan")
    assert slack(nan)[0] == torch_roles.SLACK_MAX
    monkeypatch.setattr(torch_roles, "SAMPLE_ELEMENTS", 1000)  # 12,800 elements: every 13th
    assert torch_roles._prime_at_least(13) == 13 and torch_roles._prime_at_least(14) == 17
    column = truth.clone()
    column[:, 40] += 4.0 * bound[:, 40]
    assert slack(column.float())[0] == pytest.approx(4.0, rel=0.01)


def test_the_native_outputs_whole_see_a_peak_their_sample_steps_over(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A sample's worst element can miss a sharp peak (a cumsum whose running sum cancels to
    near zero: KernelBench 1/89's own Model read wrong against itself on an H200): picked
    whole, every element counts, compared a chunk at a time (the same figures as in one)."""
    torch = pytest.importorskip("torch")
    from kernelwright.tools.judge import kernelbench_tolerance

    monkeypatch.setattr(torch_roles, "SAMPLE_ELEMENTS", 1000)  # 12,800 elements: every 13th
    atol, rtol = kernelbench_tolerance("float32")
    truth = torch.rand(100, 128, dtype=torch.float64) + 0.5
    meta = [{"dtype": "float32", "shape": [100, 128]}]
    native = truth.clone()
    native.view(-1)[13 * 400 + 6] += 6.0 * (atol + rtol * 2.0)  # between two sampled places
    sampled = torch_roles.native_slack(torch_roles._samples(native.float()), truth, meta)
    assert sampled[0] < 1.0
    whole = torch_roles._samples(native.float(), whole=True)
    assert whole[0][1] == 1
    seen = torch_roles.native_slack(whole, truth, meta)[0]
    assert seen > 3.0
    rms = torch_roles.float64_rms(whole, truth)
    monkeypatch.setattr(torch_roles, "CHUNK_ELEMENTS", 1000)
    assert torch_roles.native_slack(whole, truth, meta)[0] == pytest.approx(seen)
    assert torch_roles.float64_rms(whole, truth) == pytest.approx(rms)
    nan = truth.clone()
    nan.view(-1)[12_345] = float("nan")
    assert torch_roles.float64_nan(whole, nan) == 1
    assert torch_roles.float64_nan(torch_roles._samples(native.float()), nan) == 0
    thin = torch_roles._thinned(whole)  # what a smaller GPU keeps: the sample
    assert thin[0][1] == 13 and torch.equal(thin[0][0], torch_roles._samples(native.float())[0][0])
    bad = native.float()
    bad.view(-1)[12_345] = float("nan")  # NaN in the native forward alone, in a late chunk
    assert torch_roles.native_slack(torch_roles._samples(bad, True), truth, meta)[0] == (
        torch_roles.SLACK_MAX
    )


def test_the_native_forward_again_counts_only_where_it_repeats_the_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where the native outputs could not stay on the GPU beside the float64 forward, the
    native forward runs again after it; its outputs count whole only where they are, at the
    first run's sampled places, what the first run gave bit for bit (a forward that draws
    random numbers would widen the tolerance by its own noise), and not where the GPU runs
    out of memory."""
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch_roles, "SAMPLE_ELEMENTS", 1000)
    base = torch.rand(100, 128)

    class Runner:
        def __init__(self, forward: Any) -> None:
            self.forward = forward

        def inputs(self, seed: int, sizes: dict[str, int], scale: float) -> list[Any]:
            return [base.clone()]

        def build(self, seed: int, sizes: dict[str, int], keep: bool = False) -> Any:
            return self.forward

        def _rng(self, state: Any = None) -> Any:
            if state is None:
                return torch.get_rng_state()
            torch.set_rng_state(state)
            return None

    trial = {"seed": 3, "sizes": {}}
    first = torch_roles._samples(base * 2)
    twice = Runner(lambda x: x * 2)
    again = torch_roles._native_again(twice, 0, {}, trial, first)
    assert again is not None and again[0][1] == 1 and again[0][0].numel() == base.numel()
    noisy = Runner(lambda x: x * 2 + 1e-3 * torch.rand_like(x))
    assert torch_roles._native_again(noisy, 0, {}, trial, first) is None
    # a forward that draws random numbers repeats itself from the generators it found
    drawn = noisy._rng()
    first = torch_roles._samples(noisy.forward(base))
    assert torch_roles._native_again(noisy, 0, {}, trial, first, drawn) is not None
    # NaN where the first run had NaN is the same run
    holes = base.clone()
    holes[::7] = float("nan")
    first = torch_roles._samples(holes * 2)
    assert torch_roles._native_again(Runner(lambda x: holes * 2), 0, {}, trial, first)

    def oom(x: Any) -> Any:
        raise torch.cuda.OutOfMemoryError("out of memory")

    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    assert torch_roles._native_again(Runner(oom), 0, {}, trial, first) is None


def test_the_float64_outputs_nan_are_counted_where_sampled() -> None:
    """float64_nan: NaN in the sampled float64 outputs (a scaled trial where there are does
    not count: judge.scaled_trial); infinities (a mask's -inf) and integer outputs are not."""
    torch = pytest.importorskip("torch")
    truth = torch.rand(100, 128, dtype=torch.float64)
    ints = torch.arange(3)
    samples = torch_roles._samples((truth.float(), ints))
    assert torch_roles.float64_nan(samples, (truth, ints)) == 0
    bad = truth.clone()
    bad[3, 3], bad[50, 7], bad[9, 9] = float("nan"), float("nan"), float("-inf")
    assert torch_roles.float64_nan(samples, (bad, ints)) == 2


def test_each_float64_outputs_rms_is_read_from_its_sample() -> None:
    """float64_rms: the RMS of each floating-point output's float64 sample, its finite elements
    only (what the absolute tolerance is a share of: judge.output_atol); None for the rest."""
    torch = pytest.importorskip("torch")
    truth = torch.full((100, 128), 3e-5, dtype=torch.float64)
    truth[0, 0] = float("inf")
    ints = torch.arange(3)
    samples = torch_roles._samples((truth.float(), ints))
    rms = torch_roles.float64_rms(samples, (truth, ints))
    assert rms[0] == pytest.approx(3e-5) and rms[1] is None


def test_the_timings_scale_makes_every_rounds_inputs_in_both_workers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The warm-up's scale (serving.serve) reaches the rounds' inputs: every call, the warm-up's
    own included, makes get_inputs()'s set under its seed with a span scaled so; without a
    scale, get_inputs()'s own (the workers of a CUDA task are never told one)."""
    done: list[str] = []
    w = _Worker(trials=0)
    _fakes(monkeypatch, w, done)
    made: list[tuple[int, float]] = []

    class Runner:
        def forget(self) -> None:
            pass

        def build(self, seed: int, sizes: dict[str, int]) -> Any:
            return _Model()

        def fresh_inputs(self, seed: int, scale: float = 1.0) -> list[Any]:
            made.append((seed, scale))
            return []

    fake_torch = sys.modules["torch"]
    fake_torch.cuda.empty_cache = lambda: None  # type: ignore[attr-defined]
    timed = torch_roles._Timed(Runner(), types.SimpleNamespace(ready=lambda: None))
    monkeypatch.setattr(timed.rounds, "_one", lambda inputs, signs: {"ms": 0.1})
    timed.start(7, 128.0)
    timed.round(11, (1, 2))
    timed.round(12, (3, 4))
    assert made == [(11, 128.0), (12, 128.0)]
    timed.start(7)
    timed.round(13, (5, 6))
    assert made[-1] == (13, 1.0)
