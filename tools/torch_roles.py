"""The worker's roles for KernelBench problems: functions of the `serving.Worker` they serve.

The candidate's `ModelNew` is Python in the candidate's worker, so nothing in that process can
be believed: what it reports is only ever checked against what the reference's worker (the
problem's `Model`, in a process no candidate code reaches) computes and times on the same
inputs, and against the controller's own clock (see verify.py). Both workers run the same
rounds (rounds.py): the problem's get_inputs() under a fresh seed for each timed call, the
call, a sketch of every output.
"""

from __future__ import annotations

import contextlib
import os
import time
import traceback
from pathlib import Path
from typing import Any

PROBLEM, CANDIDATE = "kw_problem.py", "kw_candidate.py"


def outputs(out: Any) -> tuple[list[memoryview], list[dict[str, Any]]]:
    import torch

    from .serving import flat

    outs = out if isinstance(out, tuple | list) else (out,)
    arrays, meta = [], []
    for o in outs:
        if type(o) is not torch.Tensor:
            raise TypeError(f"forward() returned {type(o).__name__}, not a torch.Tensor")
        arrays.append(flat(o.detach().contiguous().cpu().numpy()))
        meta.append({"dtype": str(o.dtype).replace("torch.", ""), "shape": list(o.shape)})
    return arrays, meta


def tensor_checksums(inputs: list[Any]) -> list[str]:
    """A checksum of each input tensor's bytes, on the GPU (repr for what is not a tensor)."""
    import cupy
    import numpy as np
    import torch

    from . import kernels

    sums = []
    for x in inputs:
        if not isinstance(x, torch.Tensor):
            sums.append(repr(x)[:200])
            continue
        t = x.detach().contiguous()
        words = t.numel() * t.element_size() // 4
        out = cupy.zeros(1, dtype=cupy.uint64)
        if words:
            kernels.function("kw_checksum")(
                (264,), (256,), (np.uint64(t.data_ptr()), np.uint64(words), out)
            )
        tail = t.view(-1).view(torch.uint8)[words * 4 :].cpu().tolist() if t.numel() else []
        sums.append(f"{int(out.get()[0]):016x}-{tail}-{t.numel() * t.element_size()}")
    return sums


class _Timed:
    """The rounds' model, built at the problem's own sizes when the controller says which
    seed its weights come from (the same in both workers)."""

    def __init__(self, runner: Any, clock: Any) -> None:
        from .rounds import TorchRounds

        self.runner, self.rounds = runner, TorchRounds(runner, None, clock)

    def start(self, seed: int, scale: float = 1.0) -> None:
        """Before the warm-up, in both workers alike: the trials' cached blocks go back, so
        the timed model and arrays are placed afresh (the reference's worker, which held
        float64 copies, had read up to 4% slower against itself on a 0.15 ms forward).
        `scale`: every round's inputs scaled so (TorchRounds), the warm-up's included."""
        import gc

        import torch

        self.rounds.scale = scale
        self.runner.forget()  # the trials' models: not held through the timing
        gc.collect()
        torch.cuda.empty_cache()
        with torch.no_grad():
            self.rounds.model = self.runner.build(seed, {})

    def round(self, seed: int, signs: tuple[int, int]) -> dict[str, Any]:
        return self.rounds.round(seed, signs)

    def make(self, token: int, seed: int) -> tuple[dict[str, Any], int]:
        return self.rounds.make(token, seed)

    def handed(self, spec: dict[str, Any], fd: int, signs: tuple[int, int]) -> dict[str, Any]:
        return self.rounds.handed(spec, fd, signs)

    def witness(self, token: int) -> tuple[list[str], list[str]]:
        return self.rounds.witness(token)


def prepare_timing(runner: Any, job: dict[str, Any]) -> None:
    """The timing's model drawn now, on the host, where the job says its seed: its warm-up
    then copies it. Every worker of a side built it in the warm-up, all pinned to the timing's
    two CPUs: 6.2 and 6.9 s of 2/76's and 2/12's warm-ups on the H100 (67M weights each); now
    the further reference processes draw it as they start, beside the first pair's trials, and
    the first after its trials, before it is pinned. The reference's only: a candidate's model
    is never copied (torch_candidate)."""
    seed = job.get("timing_model_seed")
    if type(seed) is int:
        runner.prepare(seed)


def described(out: Any) -> list[dict[str, Any]]:
    """Each returned tensor's dtype and shape, read where it is (nothing copied). Raises
    TypeError for what is not a tensor, as `outputs` does."""
    import torch

    outs = out if isinstance(out, tuple | list) else (out,)
    meta = []
    for o in outs:
        if type(o) is not torch.Tensor:
            raise TypeError(f"forward() returned {type(o).__name__}, not a torch.Tensor")
        meta.append({"dtype": str(o.dtype).replace("torch.", ""), "shape": list(o.shape)})
    return meta


def sized(runner: Any, trials: list[dict[str, Any]]) -> list[dict[str, int] | None]:
    """Each trial's tensors, in bytes, worked out without memory: the problem's get_inputs(),
    its Model and its forward run on PyTorch's meta device (shapes and dtypes only). None for
    a trial whose problem cannot run so (a tensor made on a named device, a data-dependent
    op): its check then learns what it takes as it runs."""
    import torch

    from .runners import tensor_bytes

    out: list[dict[str, int] | None] = []
    for trial in trials:
        try:
            with torch.device("meta"), torch.no_grad():
                runner._apply(trial["sizes"])
                inputs = runner.problem.get_inputs()
                model = runner.cls(*runner.problem.get_init_inputs())
                result = model(*inputs)
                weights = [*model.parameters(), *model.buffers()]
            if any(
                isinstance(x, torch.Tensor) and not x.is_meta
                for x in [
                    *inputs,
                    *weights,
                    *(result if isinstance(result, tuple | list) else [result]),
                ]
            ):
                raise TypeError("made off the meta device")
            (i, i64), (o, o64), (w_, w64) = (tensor_bytes(v) for v in (inputs, result, weights))
            out.append({"in": i, "in64": i64, "out": o, "out64": o64, "w": w_, "w64": w64})
        except Exception:  # what the problem's code raises on meta tensors: any exception
            out.append(None)
    return out


def _float64(runner: Any, seed: int, sizes: dict[str, int], inputs: list[Any]) -> Any:
    """The problem's forward in float64 on float64 copies of its inputs, or None where it
    cannot run so (an op without float64, or no room on the GPU): its temporaries die here."""
    import torch

    try:
        model64 = runner.build(seed, sizes, float64=True, keep=True)
        ins64 = [
            x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x
            for x in inputs
        ]
        return model64(*ins64)
    except (RuntimeError, TypeError):
        return None


SAMPLE_ELEMENTS = 1 << 24  # of each native output where the whole of it cannot stay on the GPU
CHUNK_ELEMENTS = 1 << 24  # compared at a time: no float64 temporary as large as an output
SLACK_MAX = 1e9  # what native_slack says for a run that gave NaN or inf where float64 did not


def _samples(out: Any, whole: bool = False) -> list[Any]:
    """Of each floating-point output, its elements as (values, step): with `whole`, or where it
    has at most SAMPLE_ELEMENTS, every element (step 1, the output itself: no copy); else
    every p-th element, p prime (so the sample falls on every row and column alike), copied in
    float32. None for other outputs. A sample is the fallback where the whole output cannot
    stay on the GPU beside the float64 forward: its worst element can miss a peak the sample
    steps over (a cumsum's error where its running sum cancels to near zero: KernelBench's
    1/89 on an H200, whose own Model then read wrong against itself)."""
    import torch

    picked: list[tuple[Any, int] | None] = []
    for o in out if isinstance(out, tuple | list) else (out,):
        if not (isinstance(o, torch.Tensor) and o.is_floating_point()):
            picked.append(None)
            continue
        flat = o.detach().reshape(-1)
        step = 1 if whole else _prime_at_least(-(-flat.numel() // SAMPLE_ELEMENTS))
        picked.append((flat, 1) if step == 1 else (flat[::step].float().clone(), step))
    return picked


def _thinned(picked: list[Any]) -> list[Any]:
    """Whole outputs (_samples' `whole`) cut down to the sample a smaller GPU would have kept,
    the whole let go."""
    out = []
    for p in picked:
        if p is not None and p[1] == 1 and p[0].numel() > SAMPLE_ELEMENTS:
            step = _prime_at_least(-(-p[0].numel() // SAMPLE_ELEMENTS))
            p = (p[0][::step].float().clone(), step)
        out.append(p)
    return out


def _prime_at_least(n: int) -> int:
    n = max(n, 1)
    if n <= 2:
        return n
    while any(n % d == 0 for d in range(2, int(n**0.5) + 1)):
        n += 1
    return n


def _pairs(picked: Any, o64: Any) -> Any:
    """(native, float64) chunks of an output's picked elements, both as double, CHUNK_ELEMENTS
    at a time; nothing where the output was not picked or is not floating-point, or its
    float64 twin does not match it element for element."""
    import torch

    if picked is None or not isinstance(o64, torch.Tensor) or not o64.is_floating_point():
        return
    values, step = picked
    truth = o64.detach().reshape(-1)[::step]
    if truth.numel() != values.numel():
        return
    for a in range(0, truth.numel(), CHUNK_ELEMENTS):
        yield values[a : a + CHUNK_ELEMENTS].double(), truth[a : a + CHUNK_ELEMENTS].double()


def native_slack(
    samples: list[Any],
    out64: Any,
    meta: list[dict[str, Any]],
    rms: list[float | None] | None = None,
) -> list[float]:
    """How far the forward in the problem's own dtypes fell from the float64 truth, for each
    output: the most any of its picked elements' error took of that dtype's tolerance (every
    element where the output stayed on the GPU; 1.0: at its edge; 0 for an output not picked;
    SLACK_MAX where it gave NaN or inf and float64 did not). PyTorch's own float32
    convolutions run in TF32 by default, and missed float64 by 5.5 times float32's tolerance
    (KernelBench's 2/1 on an H100): the controller widens the tolerance from this
    (judge.native_scale), never the candidate's process."""
    import torch

    from .judge import kernelbench_tolerance, output_atol

    outs = out64 if isinstance(out64, tuple | list) else (out64,)
    slack = []
    rms = float64_rms(samples, out64) if rms is None else rms  # each output's, for its atol
    for picked, o64, m, each in zip(samples, outs, meta, rms, strict=False):
        atol, rtol = kernelbench_tolerance(str(m["dtype"]))
        atol = output_atol(atol, each)  # as the controller will hold the candidate to
        worst = None  # kept on the GPU: one read of it an output, not one a chunk
        for native, truth in _pairs(picked, o64):
            err = torch.where(
                torch.isfinite(truth), (native - truth).abs() / (atol + rtol * truth.abs()), 0.0
            )
            if err.numel():  # NaN where the native forward alone gave NaN: it carries on
                top = err.amax()
                worst = top if worst is None else torch.maximum(worst, top)
        e = 0.0 if worst is None else float(worst)
        slack.append(SLACK_MAX if e != e else min(e, SLACK_MAX))
    return slack


def float64_rms(samples: list[Any], out64: Any) -> list[float | None]:
    """Each output's RMS over the finite elements picked of its float64 twin (None for an
    output not picked): what its absolute tolerance is a share of (judge.output_atol)."""
    import torch

    outs = out64 if isinstance(out64, tuple | list) else (out64,)
    rms: list[float | None] = []
    for picked, o64 in zip(samples, outs, strict=False):
        total, count = None, None  # on the GPU until the output's last chunk
        for _, truth in _pairs(picked, o64):
            finite = torch.isfinite(truth)
            part, n = torch.where(finite, truth.square(), 0.0).sum(), finite.sum()
            total, count = (part, n) if total is None else (total + part, count + n)
        n_finite = 0 if count is None else int(count)
        rms.append((float(total) / n_finite) ** 0.5 if total is not None and n_finite else None)
    return rms


def float64_nan(samples: list[Any], out64: Any) -> int:
    """How many picked elements of the float64 outputs are NaN: where the float64 forward
    itself gives NaN on a trial's inputs, the op is not defined there (a log or a square root
    of negated inputs), and a trial on inputs scaled up (judge.scaled_trial) does not count.
    Infinities are left out: an output may hold them by design (a mask's -inf), and their
    places are compared exactly."""
    import torch

    outs = out64 if isinstance(out64, tuple | list) else (out64,)
    counts = [
        torch.isnan(truth).sum()  # read once, at the end
        for picked, o64 in zip(samples, outs, strict=False)
        for _, truth in _pairs(picked, o64)
    ]
    return int(torch.stack(counts).sum()) if counts else 0


def _candidates(need: dict[str, int]) -> int:
    """The candidate's run of a trial sized `need`: its weights, inputs, outputs, and two runs'
    copies handed over."""
    return need["w"] + need["in"] + 3 * need["out"]


def _room_for_float64(need: dict[str, int] | None) -> bool:
    """Whether the GPU holds the float64 forward of a trial sized `need` (its float64 weights,
    inputs and outputs beside the native inputs and model held), and then, beside its float64
    outputs kept, the candidate's run of it (weights, inputs, outputs, and two runs' copies
    handed over). Where it would not, the trial's expected outputs are the native forward's: a
    candidate is never left without room by the reference's precision. Judged against the
    GPU's whole memory, not what is free now, which the candidate's worker (its imports, its
    forward's cache) decides: what it holds cannot choose the reference's precision (where it
    leaves the float64 forward short anyway, that forward fails and the native one stands, as
    before). True where the size is unknown."""
    import torch

    if not need:
        return True
    held = need["w"] + need["in"] + (2 << 30)  # the native trial's, two contexts, flush buffers
    wanted = held + need["out64"] + max(need["w64"] + need["in64"], _candidates(need))
    return int(torch.cuda.mem_get_info()[1]) >= wanted


def _expected(
    w: Any,
    runner: Any,
    i: int,
    trial: dict[str, Any],
    on_gpu: bool,
    need: dict[str, int] | None = None,
) -> None:
    """Trial i's expected outputs: sent, or, for a trial marked `device`, kept on the GPU and
    compared here with the candidate's runs, which arrive as memory handles
    (devcompare.compare_here): only facts reach the controller. As the candidate's trial_run,
    nothing of it outlives the call (a last trial's float64 model and inputs were held through
    the timing). The native forward's outputs are freed before the float64 one runs (a 6 GiB
    output need not be held twice), and made again where float64 cannot run."""
    import torch

    sizes, seed = trial["sizes"], trial["seed"]
    weights = trial.get("model_seed", seed)
    torch.cuda.reset_peak_memory_stats()
    with torch.no_grad():
        inputs = runner.inputs(seed, sizes, trial.get("scale", 1.0))
        sums = tensor_checksums(inputs)
        room = _room_for_float64(need)
        # the native outputs kept whole through the float64 forward where the GPU holds both,
        # and the candidate's run of the trial beside them (it runs its next trial meanwhile)
        whole = room and _room_whole(need)
        model = runner.build(weights, sizes, keep=True, twin=True)
        drawn = runner._rng()  # as the forward found them: a run again draws what it drew
        native = model(*inputs)
        native_meta = described(native)
        samples = _samples(native, whole) if room else []  # for their distance from float64
        del native
        torch.cuda.synchronize()
        native_peak = int(torch.cuda.max_memory_allocated())  # a timing process's, about
        precision = "PyTorch eager in float64"
        out = _float64(runner, weights, sizes, inputs) if room else None
        if out is None and whole:  # short of memory with them kept: again, with a sample
            samples, whole = _thinned(samples), False
            torch.cuda.empty_cache()
            out = _float64(runner, weights, sizes, inputs)
        if out is not None and not whole:  # its temporaries gone: the native forward again
            inputs = None  # made afresh there (the forward may have written them)
            samples = _native_again(runner, weights, sizes, trial, samples, drawn) or samples
        rms64, slack, nan64 = None, None, None
        if out is not None:
            try:
                rms64, slack, nan64 = _measures(samples, out, native_meta)
            except torch.cuda.OutOfMemoryError:  # a chunk's temporaries: with the sample
                samples = _thinned(samples)
                torch.cuda.empty_cache()
                rms64, slack, nan64 = _measures(samples, out, native_meta)
        del samples
        if out is None:
            torch.cuda.empty_cache()
            precision = "PyTorch eager"
            # as they were: the forward may write them
            inputs = runner.inputs(seed, sizes, trial.get("scale", 1.0))
            out = runner.build(weights, sizes, keep=True)(*inputs)
        torch.cuda.synchronize()
        header = {
            "type": "expected",
            "trial": i,
            "checksums": sums,
            "meta": described(out),
            "native": native_meta,
            "reference": precision,
            # what the trial took on the GPU, and what is left: how many processes a side
            # the timing can have (verify.Verifier._ready)
            "gpu_peak_bytes": int(torch.cuda.max_memory_allocated()),
            "gpu_native_peak_bytes": native_peak,  # the native forward's: inputs, model, outputs
            "gpu_free_bytes": int(torch.cuda.mem_get_info()[0]),
        }
        if slack is not None:
            header["native_slack"] = slack
            header["float64_nan"] = nan64
            header["rms64"] = rms64
        if not (on_gpu and trial.get("device")):
            arrays, _ = outputs(out)
            del out
            w.send(header, arrays)
            return
        del inputs
        kept = _on_device(out)
        del out
        torch.cuda.empty_cache()  # what the trial freed, back to the GPU for the candidate
    w.send({**header, "device": True})
    from .devcompare import compare_here

    compare_here(w, i, kept)


def _measures(samples: list[Any], out: Any, meta: list[dict[str, Any]]) -> tuple[Any, Any, int]:
    """float64_rms, native_slack and float64_nan of a trial's picked outputs."""
    rms64 = float64_rms(samples, out)
    return rms64, native_slack(samples, out, meta, rms64), float64_nan(samples, out)


def _room_whole(need: dict[str, int] | None) -> bool:
    """Whether the native outputs can stay whole on the GPU through the float64 forward with
    everything beside them at once, added up (not the larger of the float64 forward's and the
    candidate's needs, as _room_for_float64 allows): the native trial's model, inputs and
    outputs, the float64 forward's model, inputs and outputs, the candidate's run of the trial
    meanwhile (its model, inputs and three copies of its outputs), and a float64 chunk's
    temporaries (native_slack). Else the native forward runs again after the float64 one
    (_native_again)."""
    import torch

    if not need:  # sizes unknown: kept whole, and where the float64 forward then runs out
        return True  # of memory, it runs again with a sample (_expected)
    chunks = 8 * CHUNK_ELEMENTS * 8  # a few float64 temporaries of a chunk at a time
    wanted = need["w"] + need["in"] + need["out"] + (2 << 30)
    wanted += need["w64"] + need["in64"] + need["out64"] + _candidates(need) + chunks
    return int(torch.cuda.mem_get_info()[1]) >= wanted


def _native_again(
    runner: Any,
    weights: int,
    sizes: dict[str, int],
    trial: dict[str, Any],
    first: list[Any],
    drawn: Any = None,
) -> Any:
    """The native forward run again on the trial's inputs made afresh (the generators as the
    first run found them, `drawn`), its outputs picked whole (_samples), beside the float64
    outputs once the float64 forward's inputs and temporaries are gone. None (the first
    run's sample stands) where even that runs out of GPU memory, or where it did not give what
    the first run gave at the sample's places, bit for bit (NaN where NaN was; a forward that
    sums in no fixed order): only the forward the float64 one was measured against may widen
    a tolerance."""
    import torch

    try:
        inputs = runner.inputs(trial["seed"], sizes, trial.get("scale", 1.0))
        model = runner.build(weights, sizes, keep=True)
        if drawn is not None:
            runner._rng(drawn)
        again = _samples(model(*inputs), whole=True)
    except torch.cuda.OutOfMemoryError:
        torch.cuda.empty_cache()
        return None
    del inputs
    for was, now in zip(first, again, strict=True):
        if (was is None) != (now is None):
            return None
        if was is not None and not _same(now[0][:: was[1]].to(was[0].dtype), was[0]):
            return None
    return again


def _same(a: Any, b: Any) -> bool:
    """Bit for bit but NaN, which is NaN in both (torch.equal says NaN differs from itself)."""
    import torch

    return a.shape == b.shape and bool(
        torch.all((a == b) | (torch.isnan(a) & torch.isnan(b))).item()
    )


def _on_device(out: Any) -> list[Any]:
    """The expected outputs as CuPy arrays over the same memory (bfloat16, which CuPy has no
    type for, widened to float32: exact; bool as uint8)."""
    import cupy
    import torch

    kept = []
    for o in out if isinstance(out, tuple | list) else (out,):
        t = o.detach().contiguous()
        if t.dtype == torch.bfloat16:
            t = t.float()
        elif t.dtype == torch.bool:
            t = t.to(torch.uint8)
        kept.append(cupy.asarray(t))
    return kept


def _handed_over(w: Any, header: dict[str, Any], out: Any) -> None:
    """A run's outputs, copied into memory this process can hand over (vmm.py), unmapped here
    and sent as handles with `header`: the reference's worker compares them where they are."""
    import cupy
    import torch

    from . import vmm

    shared = vmm.Allocator(cupy.cuda.Device().id)
    places, fds = [], []
    try:
        for o in out if isinstance(out, tuple | list) else (out,):
            t = o.detach().contiguous()
            if t.dtype == torch.bool:
                t = t.to(torch.uint8)
            nbytes = t.numel() * t.element_size()
            with cupy.cuda.using_allocator(shared):
                buf = cupy.empty(max(nbytes, 1), dtype=cupy.uint8)
            if nbytes:
                cupy.cuda.runtime.memcpy(
                    buf.data.ptr, t.data_ptr(), nbytes, cupy.cuda.runtime.memcpyDeviceToDevice
                )
            mapping, offset = shared.holding(buf.data.ptr)
            fds.append(mapping.export())
            places.append({"size": mapping.size, "offset": offset})
            del t, buf
        cupy.cuda.runtime.deviceSynchronize()
        shared.release()  # unmapped here before the handles leave
        w.send({**header, "device": places})
        w.send_fds(fds)
    finally:
        shared.release()
        for fd in fds:
            os.close(fd)
    w.handed_over()


def torch_reference(w: Any) -> None:
    from .cuda_roles import after_rounds
    from .runners import TorchRunner
    from .timing import Clock

    # The clock first, as the candidate's worker makes it: the two then set up alike, and the
    # flush buffer and events sit where they do in the other. Made after the float64 trials,
    # the problem's Model read 1.018x against itself on average over ten self-checks; made
    # first, 1.004x (an H100, eighth session).
    w.clock = Clock(w.job["device"]["l2_bytes"])
    # one model for every trial built alike (TorchRunner.construction), whatever its sizes
    runner = TorchRunner(str(w.scratch / PROBLEM), None, "Model", share=True)
    on_gpu = bool(w.job["device"].get("vmm"))  # trials marked `device` compared here
    needs: list[dict[str, int] | None] = [None] * len(w.job["trials"])
    if w.job.get("sized"):  # what each trial takes, said before any runs (fit.kernelbench)
        import torch

        needs = sized(runner, w.job["trials"])
        free, total = torch.cuda.mem_get_info()
        w.send({"type": "sized", "trials": needs, "gpu_free_bytes": int(free),
                "gpu_total_bytes": int(total)})  # fmt: skip
    before, after = after_rounds(w.job, on_gpu)
    for i, trial in before:  # its models, inputs and outputs die with it
        _expected(w, runner, i, trial, on_gpu, needs[i])
    runner.forget()  # the trials' models are not held through the timing
    prepare_timing(runner, w.job)
    w.serve(_Timed(runner, w.clock))
    for i, trial in after:  # after the timing, as the candidate runs them
        _expected(w, runner, i, trial, on_gpu, needs[i])


def torch_candidate(w: Any) -> None:
    import torch

    from .extbuild import install
    from .runners import TorchRunner
    from .timing import Clock

    cand = w.job["candidate"]
    w.clock = Clock(w.job["device"]["l2_bytes"])  # bound before the candidate loads
    t0 = time.perf_counter()
    path = str(w.scratch / (PROBLEM if cand.get("class_name") == "Model" else CANDIDATE))
    with contextlib.suppress(OSError):  # its load_inline builds, by the controller, kept
        install(w, Path(path).read_text(errors="replace"))
    try:
        runner = TorchRunner(str(w.scratch / PROBLEM), path, cand.get("class_name", "ModelNew"))
        # built now: the first trial's model, kept for it. Never a copy of a candidate's model
        # (no twin): a copy keeps what its closures hold (a compiled function of the original
        # layer, a method bound to it), which stays on the CPU while the copy moves to the GPU
        first = (w.job.get("trials") or [{}])[0]
        runner.build(first.get("model_seed", first.get("seed", 0)), first.get("sizes", {}),
                     keep=bool(first))  # fmt: skip
        result = {"ok": True, "log": ""}
    except Exception as exc:  # its message may be any size: the frame's limit is not for it
        text = "".join(traceback.format_exception_only(exc)).strip()
        result = {"ok": False, "log": text if len(text) <= 8000 else text[:4000] + " ..."}
    compiled = {**result, "backend": "python", "arch": ""}
    w.send(
        {
            "type": "compiled",
            "result": {**compiled, "duration_ms": (time.perf_counter() - t0) * 1e3},
        }
    )
    if not result["ok"]:
        return
    out_bytes = w.job.get("output_bytes", 1 << 24)
    on_gpu = bool(w.job["device"].get("vmm"))  # trials marked `device`: outputs handed over

    def trial_run(label: Any, trial: dict[str, Any]) -> None:
        sizes, seed = trial["sizes"], trial["seed"]
        with torch.no_grad():
            model = runner.build(trial.get("model_seed", seed), sizes, keep=True)
            for run, _ in enumerate(trial["poisons"]):
                inputs = runner.inputs(seed, sizes, trial.get("scale", 1.0))
                runner.poison_allocator(4 * out_bytes)
                out = model(*inputs)
                w.sync()
                header: dict[str, Any] = {"type": "outputs", "trial": label, "run": run}
                try:
                    meta = described(out)
                except TypeError as exc:  # a proxy or lazy object instead of a tensor
                    out, meta = (), []
                    header["problem"] = str(exc)
                header.update(checksums=tensor_checksums(inputs), meta=meta)
                if on_gpu and trial.get("device") and "problem" not in header:
                    del inputs
                    _handed_over(w, header, out)  # compared where they are
                    del out
                    continue
                arrays = outputs(out)[0] if "problem" not in header else []
                del out
                w.send(header, arrays)

    for i, trial in enumerate(w.job["trials"]):
        trial_run(i, trial)
    runner.forget()  # the trials' models are not held through the timing
    w.serve(_Timed(runner, w.clock), post=trial_run)


def torch_once(w: Any) -> None:
    """The forwards the controller drew (`launches`: sizes and seed each, sanitize.watched),
    each built and fed as a trial's is from its seed, for compute-sanitizer to watch (no
    channel)."""
    import torch

    from .runners import TorchRunner

    cand = w.job["candidate"]
    path = str(w.scratch / (PROBLEM if cand.get("class_name") == "Model" else CANDIDATE))
    runner = TorchRunner(str(w.scratch / PROBLEM), path, cand.get("class_name", "ModelNew"))
    with torch.no_grad():
        for one in w.job["launches"]:
            sizes, seed = one["sizes"], int(one["seed"])
            model = runner.build(seed, sizes)
            model(*runner.inputs(seed, sizes))
    torch.cuda.synchronize()
