"""KernelBench's own timing, imported from a user's clone at run time, in a sandboxed worker.

`eval kernelbench` sets its figures beside the field's: a problem's eager and torch.compile
baselines timed by KernelBench's `measure_ref_program_time` (what its baseline files hold), and
a final kernel timed by its `eval_kernel_against_ref` (what its eval_results.json holds). Each
runs in a worker of its own (`python -m kernelwright.tools.worker --kb-time --readable SRC`),
confined as any worker is, with the clone's `src/` shown read-only: a kernel is a candidate's
code, and the eager baseline is never timed in the same process as it. Nothing of KernelBench is
copied here; what runs is the clone's. These times are only reported, never a verdict.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import math
import sys
import time
import traceback
import types
from pathlib import Path
from typing import Any

from .errors import KernelwrightError
from .protocol import Expect, write_message
from .sandbox import Sandbox

WHAT = ("eager", "compile", "kernel")
STATS = ("mean", "std", "min", "max", "num_trials")  # KernelBench's get_timing_stats keys
TRIALS = 100  # as its eval script and baseline script time
SEED = 42  # its eval's and measure_ref_program_time's seed


class KbTimeError(KernelwrightError):
    """KernelBench's timing did not give a time; the message says why in one line."""


def stand_ins() -> None:
    """Empty modules in place of the clients KernelBench's package imports for its generation
    scripts (openai, litellm, dotenv, tqdm, requests) where they are not installed: its eval
    and timing call none of them."""
    for name, attrs in (
        ("openai", ("OpenAI",)),
        ("litellm", ("completion",)),
        ("dotenv", ("load_dotenv",)),
        ("tqdm", ("tqdm",)),
        ("requests", ()),
    ):
        try:
            importlib.import_module(name)
        except ImportError:
            stub = types.ModuleType(name)
            for attr in attrs:
                value: Any = None
                if attr == "load_dotenv":
                    value = lambda *a, **k: None  # noqa: E731
                elif attr == "tqdm":
                    value = lambda it=None, *a, **k: it  # noqa: E731
                setattr(stub, attr, value)
            sys.modules[name] = stub


def has_timing(src: Path) -> bool:
    """Whether this is a clone's `src/` with KernelBench's timing and eval in it."""
    return (src / "kernelbench" / "timing.py").is_file() and (
        src / "kernelbench" / "eval.py"
    ).is_file()


def kb_time(
    src: Path,
    what: str,
    name: str,
    reference: str,
    candidate: str = "",
    trials: int = TRIALS,
    timeout_s: float = 900.0,
    host_memory_bytes: int = 32 << 30,
) -> tuple[dict[str, float], int | None]:
    """One program timed by the clone's KernelBench in a sandboxed worker: `eager` and `compile`
    time the problem's Model (`reference`, its source) as measure_ref_program_time does;
    `kernel` times `candidate` (a ModelNew's source) as eval_kernel_against_ref does, after its
    own correctness trials. Returns KernelBench's timing stats (ms) and the GPU memory torch
    held at its peak (None where torch could not say); KbTimeError says why there is no time."""
    if what not in WHAT:
        raise ValueError(f"what: one of {WHAT}, not {what!r}")
    command = [
        sys.executable, "-m", "kernelwright.tools.worker", "--kb-time",
        "--readable", str(src.resolve()),
    ]  # fmt: skip
    job = {
        "src": str(src.resolve()),
        "what": what,
        "name": name,
        "reference": reference,
        "candidate": candidate,
        "trials": trials,
    }
    with Sandbox(f"kernelbench-{what}", host_memory_bytes, command=command) as box:
        box.send(job)
        header, _ = box.receive(timeout_s, f"KernelBench's timing ({what})", Expect(sizes=()))
    if header.get("type") != "kbtime":
        raise KbTimeError(f"KernelBench's timing ({what}): the worker sent no times")
    if not header.get("ok"):
        why = (str(header.get("error") or "").strip().splitlines() or ["failed"])[-1]
        raise KbTimeError(f"KernelBench's timing ({what}): {why[:400]}")
    return _stats(header.get("stats"), what), _bytes(header.get("peak_bytes"))


def _stats(raw: Any, what: str) -> dict[str, float]:
    if not isinstance(raw, dict) or any(k not in raw for k in STATS):
        raise KbTimeError(f"KernelBench's timing ({what}): no {', '.join(STATS)} in its stats")
    out = {}
    for k in STATS:
        v = raw[k]
        if type(v) not in (int, float) or not math.isfinite(v) or v < 0:
            raise KbTimeError(f"KernelBench's timing ({what}): {k} is {v!r}")
        out[k] = float(v)
    if out["mean"] <= 0 or out["num_trials"] < 1:
        raise KbTimeError(f"KernelBench's timing ({what}): no trial took time")
    return out


def _bytes(raw: Any) -> int | None:
    return raw if type(raw) is int and raw >= 0 else None


# --- the worker's side (python -m kernelwright.tools.worker --kb-time) ------------------------


def worker_main(reader: Any, out_fd: int) -> None:
    """The worker's whole life: one job in, KernelBench's stats (or why not) out."""
    job, _ = reader.read_message(time.monotonic() + 3600)
    try:
        stats, peak = _measure(job)
    except BaseException as exc:  # its failure is the answer, said in one line
        traceback.print_exc()
        text = "".join(traceback.format_exception_only(exc)).strip()
        write_message(out_fd, {"type": "kbtime", "ok": False, "error": text[-2000:]})
        return
    write_message(out_fd, {"type": "kbtime", "ok": True, "stats": stats, "peak_bytes": peak})


def _measure(job: dict[str, Any]) -> tuple[dict[str, Any], int | None]:
    stand_ins()
    sys.path.insert(0, str(job["src"]))
    what, trials = job["what"], int(job["trials"])
    if what in ("eager", "compile"):
        from kernelbench import timing  # the clone's

        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            stats = timing.measure_ref_program_time(
                job["name"],
                job["reference"],
                num_trials=trials,
                use_torch_compile=what == "compile",
                torch_compile_backend="inductor",
                torch_compile_options="default",
                verbose=False,  # on its own default device, cuda:0: the worker's one GPU
            )
        sys.stdout.write(printed.getvalue())  # to the worker's log
        if stats is None:  # it printed why ("[Eval] Error in Measuring Performance: ...")
            said = [x.strip() for x in printed.getvalue().splitlines() if "error" in x.lower()]
            raise RuntimeError(
                "measure_ref_program_time gave no times" + (f": {said[-1]}" if said else "")
            )
    else:
        from kernelbench.eval import eval_kernel_against_ref  # the clone's

        build = Path.cwd() / "build"
        build.mkdir(exist_ok=True)
        result = eval_kernel_against_ref(
            job["reference"],
            job["candidate"],
            seed_num=SEED,
            num_correct_trials=5,
            num_perf_trials=trials,
            measure_performance=True,
            build_dir=str(build),
        )
        meta = {k: str(v)[:200] for k, v in dict(getattr(result, "metadata", {}) or {}).items()}
        if result is None or not getattr(result, "compiled", False):
            raise RuntimeError(f"did not compile in KernelBench's eval {meta}")
        if not getattr(result, "correctness", False):
            raise RuntimeError(f"not correct in KernelBench's eval {meta}")
        stats = getattr(result, "runtime_stats", None)
        if not stats:
            raise RuntimeError(f"KernelBench's eval timed nothing {meta}")
    return {k: stats.get(k) for k in STATS}, _peak()


def _peak() -> int | None:
    try:
        import torch

        return int(torch.cuda.max_memory_allocated()) if torch.cuda.is_available() else None
    except Exception:
        return None
