"""The worker of a cpp task's C++ reference: `python -m kernelwright.tools.cpp_worker build|run`.

It confines itself first (confine.py: its own namespaces, a view of the software it runs on and
nothing of the user's, a capped scratch), then serves one job from the controller
(cpp_reference.py), as protocol.py frames it:

  build  <- {"source", "filename", "std", "flags", "timeout_s", "compiler", "arch", "wrapper"?}
            ("wrapper": a drop-in host file's wrapper, compiled as a unit of its own)
         -> {"type": "built", "ok", "log", "notes"} + [the shared library, where it built]
  run    <- {"task", "trials": [{sizes, seed, inits, contract, repeats?}], "files"}
            + [the library]
         -> {"type": "started", "notes"} once the library and the input maker are loaded
         -> per trial {"type": "outputs", "trial", "seconds", "times"?, "unwritten"?, "read"?}
            + one array per out and inout argument, in the task's order; "times": the
            seconds of each repeated call, where the trial asks for repeats ({"min", "max",
            "seconds"}: at least min calls, more until that many seconds, at most max)
            then, where the job has "calls": true, timed calls the controller asks for one at
            a time, each on inputs made from a seed it sends only then:
         <- {"cmd": "make", "sizes", "seed"}  -> {"type": "made"}  (the inputs, made by the
            harness alone)
         <- {"cmd": "stage"}  -> {"type": "staged"}  (the arguments copied from them, outputs
            poisoned, and the wrapper's own built: kw_prepare; the controller's clock holds
            this step to the C++ function's)
         <- {"cmd": "call", "signs": [a, b]}  -> {"type": "called", "seconds"} (kw_invoke:
            the function's call alone), then the outputs copied back (kw_finish) and
            {"type": "sketch", "sketch": {output: sketch.sketch_of(its values, signs)}}
         <- {"cmd": "end"}
  either -> {"type": "done"}, or {"type": "error", "error"} (a C++ exception, a resize, an
            input maker's failure); a crash or a hang is the controller's to see.

The library is g++'s build of the user's function and the generated wrapper (kw_call), and no
GPU is touched; or nvcc's build of a drop-in host file (best_host.cu) and the same wrapper,
which runs its kernel on the GPU. Whatever either prints lands in the worker's log, never on
the channel.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import traceback
from typing import Any

from .confine import confine
from .protocol import FrameReader, write_message

LOG_CHARS = 6000  # what a build's log may say back


class Problem(Exception):
    """What went wrong, in one line the controller passes on as it is."""


def _build(job: dict[str, Any], out: int, notes: list[str]) -> None:
    import shutil
    import subprocess

    from .compile import include_problem

    filename = os.path.basename(str(job["filename"]))
    problem = include_problem(str(job["user_source"]))
    if problem:
        write_message(out, {"type": "built", "ok": False, "log": f"{filename}: error: {problem}"})
        return
    compiler = "nvcc" if job.get("compiler") == "nvcc" else "g++"
    found = shutil.which(compiler)
    if found is None:
        write_message(out, {"type": "built", "ok": False, "log": f"{compiler} not found on PATH"})
        return
    with open(filename, "w") as f:
        f.write(str(job["source"]))
    cmd = [found, "-O3", f"-std={job['std']}", *map(str, job["flags"])]
    if compiler == "nvcc":  # host code through nvcc: its options for the host compiler
        cmd = [found, "-O3", f"-std={job['std']}", f"-arch={job.get('arch', 'sm_90')}"]
        cmd += ["-Xcompiler", "-fPIC", "-shared", "-o", "kw_reference.so", filename]
        if job.get("wrapper"):  # a translation unit of its own, linked with the drop-in
            with open("kw_wrapper.cpp", "w") as f:
                f.write(str(job["wrapper"]))
            cmd.append("kw_wrapper.cpp")
    else:
        cmd += ["-shared", "-fPIC", "-o", "kw_reference.so", filename]
    timeout = float(job.get("timeout_s", 120))
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        log = f"{compiler} did not finish in {timeout:.0f} s"
        write_message(out, {"type": "built", "ok": False, "log": log})
        return
    log = (proc.stdout + proc.stderr).replace(os.getcwd() + "/", "")[-LOG_CHARS:]
    ok = proc.returncode == 0 and os.path.isfile("kw_reference.so")
    library = []
    if ok:
        with open("kw_reference.so", "rb") as f:
            library.append(f.read())
    write_message(out, {"type": "built", "ok": ok, "log": log, "notes": notes}, library)


class _Reference:
    """The loaded library and the task: inputs, outputs and one call of the function."""

    def __init__(self, task: Any, library: str, maker: Any) -> None:
        import ctypes

        self.task = task
        self.lib = ctypes.CDLL(library)
        self.lib.kw_call.restype = ctypes.c_int
        self.lib.kw_call.argtypes = [
            ctypes.POINTER(ctypes.c_void_p),
            ctypes.POINTER(ctypes.c_longlong),
            ctypes.POINTER(ctypes.c_double),
        ]
        self.lib.kw_error.restype = ctypes.c_char_p
        self.lib.kw_prepare.restype = ctypes.c_int
        self.lib.kw_prepare.argtypes = self.lib.kw_call.argtypes[:2]
        self.lib.kw_invoke.restype = ctypes.c_int
        self.lib.kw_invoke.argtypes = [ctypes.POINTER(ctypes.c_double)]
        self.lib.kw_finish.restype = ctypes.c_int
        self.lib.kw_finish.argtypes = []
        self.maker = maker
        self._staged: Any = None  # the pointers and counts kw_prepare was given, kept alive

    def inputs(self, sizes: dict[str, int], seed: int, inits: dict[str, str]) -> dict[str, Any]:
        from .cpp_inputs import arg_seed, generate
        from .makers import MakerError, made_inputs

        task = self.task
        made: dict[str, Any] = {}
        if self.maker is not None:
            func = task.inputs_python.rsplit(":", 1)[1]
            try:
                made = made_inputs(
                    self.maker, func, task.args, lambda a: task.shape(a, sizes), sizes, seed
                )
            except MakerError as exc:
                raise Problem(str(exc)) from exc
        return {
            a.name: made[a.name]
            if a.name in made and a.name not in inits
            else generate(
                a.dtype,
                task.shape(a, sizes),
                arg_seed(seed, i),
                inits.get(a.name, a.init),
            )
            for i, a in enumerate(task.args)
            if a.role in ("in", "inout")
        }

    def call(
        self, sizes: dict[str, int], ins: dict[str, Any], poison: int
    ) -> tuple[dict[str, Any], float]:
        """One call on copies of `ins`; its out and inout arrays and the seconds it took."""
        return self.invoke(self.prepare(sizes, ins, poison))

    def prepare(self, sizes: dict[str, int], ins: dict[str, Any], poison: int) -> dict[str, Any]:
        """A call's arguments: copies of `ins`, the outputs poisoned, the scalars."""
        import numpy as np

        from . import expr
        from .cpp_inputs import starting_output

        task = self.task
        arrays: dict[str, Any] = {}
        for a in task.args:
            if a.role == "scalar":
                value = expr.evaluate(a.value, sizes)
                arrays[a.name] = np.array(value, dtype=a.dtype)
            elif a.role == "out":
                arrays[a.name] = starting_output(a.dtype, task.shape(a, sizes), a.init, poison)
            else:
                arrays[a.name] = ins[a.name].copy()
        return arrays

    def _pointers(self, arrays: dict[str, Any]) -> tuple[Any, Any]:
        import ctypes
        import math

        args = self.task.args
        ptrs = (ctypes.c_void_p * len(args))(*(arrays[a.name].ctypes.data for a in args))
        counts = (ctypes.c_longlong * len(args))(*(math.prod(arrays[a.name].shape) for a in args))
        return ptrs, counts

    def _ok(self, code: int) -> None:
        if code != 0:
            message = (self.lib.kw_error() or b"").decode(errors="replace")
            raise Problem(f"{self.task.function}() {message}")

    def _outs(self, arrays: dict[str, Any]) -> dict[str, Any]:
        return {a.name: arrays[a.name] for a in self.task.args if a.role in ("out", "inout")}

    def invoke(self, arrays: dict[str, Any]) -> tuple[dict[str, Any], float]:
        """The call itself on prepared arguments: its out and inout arrays, its seconds."""
        import ctypes

        ptrs, counts = self._pointers(arrays)
        seconds = ctypes.c_double(0.0)
        self._ok(self.lib.kw_call(ptrs, counts, ctypes.byref(seconds)))
        return self._outs(arrays), float(seconds.value)

    def stage(self, arrays: dict[str, Any]) -> None:
        """The wrapper's arguments built from prepared arrays (its copies), before a call."""
        self._staged = self._pointers(arrays)
        self._ok(self.lib.kw_prepare(*self._staged))

    def run_staged(self) -> float:
        """The staged call, the function's own and nothing else: its seconds."""
        import ctypes

        seconds = ctypes.c_double(0.0)
        self._ok(self.lib.kw_invoke(ctypes.byref(seconds)))
        return float(seconds.value)

    def finish_staged(self, arrays: dict[str, Any]) -> dict[str, Any]:
        """The staged call's outputs, copied back into `arrays`."""
        self._ok(self.lib.kw_finish())
        self._staged = None
        return self._outs(arrays)


def _contract(ref: _Reference, first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    """Which outputs without a declared start (fill:V) came out differently for two poisons:
    left unwritten in places (still the poison), or read before written."""
    import numpy as np

    from .cpp_inputs import POISONS, poisoned
    from .fills import is_fill

    unwritten, read = {}, []
    for a in ref.task.args:
        if a.role != "out" or is_fill(a.init):
            continue
        x, y = first[a.name], second[a.name]
        bits = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[x.dtype.itemsize]
        xb, yb = x.view(bits).ravel(), y.view(bits).ravel()
        if np.array_equal(xb, yb):
            continue
        p0 = poisoned((1,), a.dtype, POISONS[0]).view(bits)[0]
        p1 = poisoned((1,), a.dtype, POISONS[1]).view(bits)[0]
        left = int(np.count_nonzero((xb == p0) & (yb == p1)))
        if left:
            unwritten[a.name] = left
        else:
            read.append(a.name)
    return {"unwritten": unwritten, "read": read}


def _run(
    job: dict[str, Any],
    arrays: list[Any],
    out: int,
    notes: list[str],
    reader: FrameReader | None = None,
) -> None:
    from .cpp import CppTask
    from .cpp_inputs import POISONS, distribution
    from .serving import flat

    distribution("uniform", "float32")  # its module loaded now, outside the trials' deadlines

    task = CppTask.model_validate(job["task"])
    for name, text in job.get("files", {}).items():  # the view shows none of the user's files
        with open(os.path.basename(name), "w") as f:
            f.write(text)
    with open("kw_reference.so", "wb") as f:
        f.write(bytes(arrays[0]))
    maker = None
    if task.inputs_python:
        from .makers import load_maker

        with open("kw_inputs.py") as f:
            maker = load_maker(f.read(), task.inputs_python.rsplit(":", 1)[1])
    ref = _Reference(task, os.path.abspath("kw_reference.so"), maker)
    write_message(out, {"type": "started", "notes": notes})
    for i, trial in enumerate(job["trials"]):
        sizes, seed, inits = trial["sizes"], int(trial["seed"]), trial.get("inits") or {}
        ins = ref.inputs(sizes, seed, inits)
        outs, seconds = ref.call(sizes, ins, POISONS[0])
        header: dict[str, Any] = {"type": "outputs", "trial": i, "seconds": seconds}
        if trial.get("contract"):
            again, _ = ref.call(sizes, ins, POISONS[1])
            header.update(_contract(ref, outs, again))
        if trial.get("repeats"):
            header["times"] = _repeat(ref, sizes, ins, trial["repeats"])
        write_message(out, header, [flat(outs[a.name]) for a in task.args if a.name in outs])
    if job.get("calls") and reader is not None:
        _serve_calls(ref, reader, out)


# Through the timed calls the worker polls for the controller's next command without sleeping
# for up to this long: the controller times each call from its command to the reply.
CALLS_SPIN_S = 0.005


def _serve_calls(ref: _Reference, reader: FrameReader, out: int) -> None:
    """Timed calls, one a command, each on inputs made from a seed sent only with it (module
    docstring); "called" goes out first, so the controller's clock ends at the call's end."""
    from .cpp_inputs import POISONS
    from .sketch import sketch_of

    names = [a.name for a in ref.task.args if a.role in ("out", "inout")]
    made: tuple[dict[str, int], dict[str, Any]] | None = None
    prepared: dict[str, Any] | None = None
    reader.spin_s = CALLS_SPIN_S
    while True:
        cmd, _ = reader.read_message(time.monotonic() + 3600)
        kind = cmd.get("cmd")
        if kind == "make":
            sizes = {str(k): int(v) for k, v in dict(cmd["sizes"]).items()}
            made, prepared = (sizes, ref.inputs(sizes, int(cmd["seed"]), {})), None
            write_message(out, {"type": "made"})
        elif kind == "stage" and made is not None:
            # from the moment the inputs exist, everything is timed: the arguments' copies
            # (here and the wrapper's), then the call; held to the C++ function's own
            prepared = ref.prepare(made[0], made[1], POISONS[0])
            made = None
            ref.stage(prepared)
            write_message(out, {"type": "staged"})
        elif kind == "call" and prepared is not None:
            seconds = ref.run_staged()
            write_message(out, {"type": "called", "seconds": seconds})
            outs = ref.finish_staged(prepared)
            signs = (int(cmd["signs"][0]), int(cmd["signs"][1]))
            sketches = {n: sketch_of(outs[n], signs) for n in names}
            prepared = None  # each set of inputs serves one call
            write_message(out, {"type": "sketch", "sketch": sketches})
        else:
            reader.spin_s = 0.0
            return


def _repeat(ref: _Reference, sizes: dict[str, int], ins: dict[str, Any], plan: Any) -> list[float]:
    """The seconds of each of several more calls on the same inputs (fresh copies each)."""
    from .cpp_inputs import POISONS

    least, most = int(plan.get("min", 3)), int(plan.get("max", 20))
    budget = float(plan.get("seconds", 2.0))
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < most and (len(times) < least or time.perf_counter() - start < budget):
        times.append(ref.call(sizes, ins, POISONS[0])[1])
    return times


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    null = os.open(os.devnull, os.O_RDWR)
    notes = confine([os.getcwd()])  # first: one thread, nothing of the task's loaded
    proto_in, proto_out = os.dup(0), os.dup(1)
    os.dup2(null, 0)
    os.dup2(2, 1)  # what the function prints goes to the log, never to the result channel
    try:
        reader = FrameReader(proto_in)
        job, arrays = reader.read_message(time.monotonic() + 3600)
        if mode == "build":
            _build(job, proto_out, notes)
        elif mode == "run":
            _run(job, arrays, proto_out, notes, reader)
        else:
            raise ValueError(f"unknown mode {mode!r} (build, run)")
        write_message(proto_out, {"type": "done"})
    except BaseException as exc:
        text = str(exc) if isinstance(exc, Problem) else traceback.format_exception_only(exc)[-1]
        text = " ".join(text.split())
        traceback.print_exc()
        with contextlib.suppress(OSError):
            write_message(proto_out, {"type": "error", "error": text[-2000:]})
    finally:
        sys.stderr.flush()
        os._exit(0)


if __name__ == "__main__":
    main()
