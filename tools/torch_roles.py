"""The worker's roles for KernelBench problems: functions of the `worker.Worker` they serve.

The candidate's `ModelNew` is Python: it runs in the candidate's worker, beside the timing loop,
so the timing primitives are bound and the harness's attributes noted (guard.py) before the
candidate's module is loaded. The problem's `Model` is timed beside it in that worker, the two
alternated in rounds, so both pay the same host costs. The expected outputs never come from
there: the reference worker, where no candidate code runs, computes them, and once the
candidate's worker is gone it runs the same rounds on the same inputs, so the candidate's last
timed outputs are checked against outputs it could not touch.
"""

from __future__ import annotations

import time
import traceback
from typing import Any

from .rounds import perturb_torch
from .timing import RoundHooks

# A forward timed with its host dispatch (tens of microseconds of Python and PyTorch) varies by
# 10 to 20% from call to call, so the median of 300 per-round ratios still wanders by about 2%
# (measured on the H200: a Model against itself read 0.99 to 1.03x, ratio IQR 0.26 to 0.52).
# Ten times the rounds narrow that about threefold; they cost a second or two per check.
MAX_ROUNDS = 3000
BUDGET_SCALE = 4.0
CAP_S = 5.0  # the estimate leaves out the rounds' hooks: at most this long, whatever it says


class _Rounds(RoundHooks):
    """Both sides of a round are treated alike inside the timed window: each call only parks its
    output. Outside it, the kept side's output replaces the last one of its input set (freeing
    the old tensor there, not in the window: a tensor's release costs microseconds of host time,
    which a 40 us forward would read as a 6% slowdown), and the other side's is scrubbed."""

    def __init__(self, sets: list[list[Any]], seed: int, keep: str) -> None:
        self.sets, self.seed, self.keep = sets, seed, keep
        self.parked: list[tuple[str, int, Any]] = []
        self.last: dict[int, Any] = {}

    def call(self, name: str, model: Any) -> Any:
        park, sets = self.parked.append, self.sets
        return lambda k: park((name, k, model(*sets[k])))

    def start(self, r: int, k: int, order: Any) -> None:
        perturb_torch(self.sets[k], self.seed, r)

    def after(self, name: str, r: int, k: int, order: Any) -> None:
        self.settle()

    def settle(self) -> None:
        held = []
        while self.parked:
            name, k, out = self.parked.pop()
            if name == self.keep:
                self.last[k] = out
            else:
                held.append(out)
        _scrub(held)


def outputs(out: Any) -> tuple[list[memoryview], list[dict[str, Any]]]:
    import torch

    from .worker import _raw

    outs = out if isinstance(out, tuple | list) else (out,)
    arrays, meta = [], []
    for o in outs:
        if type(o) is not torch.Tensor:
            raise TypeError(f"forward() returned {type(o).__name__}, not a torch.Tensor")
        arrays.append(_raw(o.detach().contiguous().cpu().numpy()))
        meta.append({"dtype": str(o.dtype).replace("torch.", ""), "shape": list(o.shape)})
    return arrays, meta


def torch_reference(w: Any) -> None:
    import torch

    from .runners import TorchRunner

    runner = TorchRunner(w.task.path, None, "Model")
    with torch.no_grad():
        for i, trial in enumerate(w.job["trials"]):
            sizes, seed = trial["sizes"], trial["seed"]
            inputs = runner.inputs(seed, sizes)
            sums = runner.input_digest(inputs)
            native = runner.build(seed, sizes)(*inputs)
            _, native_meta = outputs(native)
            precision = "PyTorch eager"
            try:
                model64 = runner.build(seed, sizes, float64=True)
                ins64 = [
                    x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x
                    for x in inputs
                ]
                out = model64(*ins64)
                precision = "PyTorch eager in float64"
            except (RuntimeError, TypeError):
                out = native
            arrays, meta = outputs(out)
            w.send(
                {
                    "type": "expected",
                    "trial": i,
                    "checksums": sums,
                    "meta": meta,
                    "native": native_meta,
                    "reference": precision,
                },
                arrays,
            )
    if w.reader is None:
        return
    command, _ = w.reader.read_message(time.monotonic() + 3600)
    if command.get("cmd") == "time":  # once the candidate's worker is gone: the same rounds
        torch_timing(w, command, runner)


def torch_candidate(w: Any) -> None:
    import torch

    from .guard import Guard
    from .runners import TorchRunner
    from .timing import Clock

    cand = w.job["candidate"]
    w.clock = Clock(w.job["device"]["l2_bytes"])  # bound before the candidate loads
    guards: list[Guard] = []

    t0 = time.perf_counter()
    reference = TorchRunner(w.task.path, None, "Model")  # timed beside the candidate

    def note_harness(problem: Any) -> None:
        owners = {"kw_problem": problem, "kw_problem.Model": problem.Model}
        owners |= {"reference": reference.problem, "reference.Model": reference.cls}
        guards.append(Guard(owners))

    try:
        runner = TorchRunner(
            w.task.path, cand["path"], cand.get("class_name", "ModelNew"), note_harness
        )
        runner.build(0, {})
        result = {"ok": True, "log": ""}
    except Exception as exc:
        result = {"ok": False, "log": "".join(traceback.format_exception_only(exc)).strip()}
    guard = guards[0] if guards else Guard()
    compiled = {**result, "backend": "python", "arch": ""}
    w.send(
        {
            "type": "compiled",
            "result": {**compiled, "duration_ms": (time.perf_counter() - t0) * 1e3},
            "tampered": guard.tampered(),
        }
    )
    if not result["ok"]:
        return
    out_bytes = w.job.get("output_bytes", 1 << 24)

    def trial_run(label: Any, trial: dict[str, Any]) -> None:
        sizes, seed = trial["sizes"], trial["seed"]
        with torch.no_grad():
            model = runner.build(seed, sizes)
            for run, _ in enumerate(trial["poisons"]):
                inputs = runner.inputs(seed, sizes)
                runner.poison_allocator(4 * out_bytes)
                out = model(*inputs)
                w.sync()
                header = {"type": "outputs", "trial": label, "run": run}
                try:
                    arrays, meta = outputs(out)
                except TypeError as exc:  # a proxy or lazy object instead of a tensor
                    arrays, meta = [], []
                    header["problem"] = str(exc)
                header.update(checksums=runner.input_digest(inputs), meta=meta)
                w.send({**header, "tampered": guard.tampered()}, arrays)

    for i, trial in enumerate(w.job["trials"]):
        trial_run(i, trial)
    assert w.reader is not None
    command, _ = w.reader.read_message(time.monotonic() + 3600)
    if command.get("cmd") != "time":
        return
    torch_timing(w, command, reference, runner, guard)
    trial_run("post", command["post_trial"])


def torch_timing(
    w: Any, command: dict[str, Any], reference: Any, candidate: Any = None, guard: Any = None
) -> None:
    """Time the reference (and the candidate, alternated in rounds) over the controller's input
    sets, changing a few input elements each round; send the samples and the last output of
    each set (the candidate's, or the reference's when it is timed alone).

    Between calls, the memory of the reference's output is overwritten before the candidate
    runs: a candidate that returns an uninitialised tensor must not find the answer there.
    """
    import torch

    with torch.no_grad():
        seed = command["seeds"][0]
        models = {"ref": reference.build(seed, {})}
        if candidate is not None:
            models["cand"] = candidate.build(seed, {})
        keep = "cand" if candidate is not None else "ref"
        sets = [reference.inputs(s, {}) for s in command["seeds"]]
        rounds = _Rounds(sets, command.get("perturb_seed", 0), keep)

        def finals() -> tuple[dict[str, Any], list[Any]]:
            arrays: list[Any] = []
            more: dict[str, Any] = {"final_meta": []}
            try:
                for k in range(len(sets)):
                    got, meta = outputs(rounds.last[k])
                    arrays += got
                    more["final_meta"].append(meta)
            except TypeError as exc:
                arrays, more["problem"] = [], str(exc)
            if guard is not None:
                more["tampered"] = guard.tampered(timing=True)
            return more, arrays

        if guard is not None:
            guard.start_timing()
        w.timing(
            {name: rounds.call(name, model) for name, model in models.items()},
            len(sets),
            rounds=command.get("rounds"),
            hooks=rounds,
            extra=finals,
            budget_scale=BUDGET_SCALE,
            max_rounds=MAX_ROUNDS,
            cap_s=CAP_S,
        )
        sets.clear()
        rounds.last.clear()


def _scrub(held: list[Any]) -> None:
    """Free the held outputs and fill the blocks they leave with NaN bits (0xFF bytes)."""
    import torch

    sizes = []
    while held:
        out = held.pop()
        for t in out if isinstance(out, tuple | list) else (out,):
            if isinstance(t, torch.Tensor):
                sizes.append((t.numel() * t.element_size(), t.device))
        del out, t
    for nbytes, device in sizes:  # the caching allocator hands the same blocks back
        torch.full((nbytes,), 0xFF, dtype=torch.uint8, device=device)
