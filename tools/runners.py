"""Run a task's kernel on the GPU. Imported only inside a sandboxed worker process.

`CudaRunner` compiles a CUDA kernel and launches it through CuPy; `TorchRunner` builds a
KernelBench Model or ModelNew. Inputs come from a seed, so two processes given the same seed
build the same inputs without sending them over the pipe.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import importlib.util
import random
import sys
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cupy
import numpy as np

from . import kernels
from .compile import compile_kernel
from .fills import fill_value
from .makers import load_maker, made_inputs
from .results import CompileResult
from .spec import FLOAT_DTYPES, ArgSpec, CudaTask, LaunchSpec, launch_plan

_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_MASK64 = (1 << 64) - 1


def checksum(array: Any) -> str:
    """A position-dependent 64-bit sum of an array's 32-bit words (bytes padded), on the GPU."""
    raw = cupy.ascontiguousarray(array).view(cupy.uint8).ravel()
    if raw.size % 4:
        raw = cupy.concatenate([raw, cupy.zeros(4 - raw.size % 4, dtype=cupy.uint8)])
    words = raw.view(cupy.uint32)
    out = cupy.zeros(1, dtype=cupy.uint64)
    kernels.function("kw_checksum")((264,), (256,), (words, np.uint64(words.size), out))
    return f"{int(out.get()[0]):016x}-{array.nbytes}"


def distribution(init: str, dtype: str) -> tuple[int, float, float]:
    """(kind, a, b) of kernels.py's generator for an argument's `init`."""
    if dtype in FLOAT_DTYPES:
        if init == "normal":
            return 1, 0.0, 1.0
        if init.startswith("normal:"):
            return 1, 0.0, float(init.split(":")[1])
        if init.startswith("uniform:"):
            lo, hi = (float(v) for v in init.split(":")[1:])
            return 0, lo, hi
        if init == "positive":
            return 0, 0.5, 2.0
        return 0, -1.0, 1.0
    if init.startswith("randint:"):
        lo, hi = (int(v) for v in init.split(":")[1:])
        return 2, float(lo), float(hi)
    return (2, 0.0, 100.0) if dtype.startswith("u") else (2, -100.0, 100.0)


def generate(
    arg: ArgSpec, shape: tuple[int, ...], seed: int, init: str | None = None, lead: int = 0
) -> Any:
    """The input for one argument, from a seed: the same bits in every process on this GPU,
    made by a stateless kernel (nothing left in device memory can change them). `init`
    "fill:V": every element V, as the C++ function's inputs are made (an `in` or `inout`
    argument declared so had been drawn uniform here: the function and the kernel were given
    different inputs, a red-team review); "mixed:K:DIST": the argument's own distribution,
    but one element in K (at places a hash of the seed and the index picks) from DIST
    (plan.MIXED_EVERY)."""
    fill = fill_value(init or arg.init)
    if fill is not None:  # "fill:V", as cpp_inputs.generate makes it for the C++ function
        out = guarded(shape, arg.dtype, GUARD_BITS, lead)
        out.fill(fill)
        return out
    if init and init.startswith("mixed:"):
        _, every, dist = init.split(":", 2)
        out = generate(arg, shape, seed, None, lead)
        if out.size:
            wide = generate(arg, shape, seed ^ 0x5DEECE66D, dist)
            picked = scattered(out.size, int(every), seed)
            out.reshape(-1)[picked] = wide.reshape(-1)[picked]
        return out
    out = guarded(shape, arg.dtype, GUARD_BITS, lead)
    kind, a, b = distribution(init or arg.init, arg.dtype)
    if out.size:
        kernels.function(kernels.GENERATE[arg.dtype])(
            (528,),
            (256,),
            (
                out,
                np.uint64(out.size),
                np.uint64(seed & _MASK64),
                np.int32(kind),
                np.float64(a),
                np.float64(b),
            ),
        )
    return out


def scattered(n: int, every: int, seed: int) -> Any:
    """Which of n places hold a mixed input's wide values: a boolean mask with about one in
    `every` set, from a hash of the seed and the place (the same in every process)."""
    h = cupy.arange(n, dtype=cupy.uint64) ^ cupy.uint64(seed & _MASK64)
    h = h * cupy.uint64(0x9E3779B97F4A7C15)
    h ^= h >> cupy.uint64(31)
    h = h * cupy.uint64(0xBF58476D1CE4E5B9)
    h ^= h >> cupy.uint64(29)
    return (h % cupy.uint64(max(1, every))) == 0


# Every array a kernel gets sits between two guard bands holding a NaN pattern (at 8, 4 and 2
# bytes): a read just past either end reads NaN, and a write there is seen afterwards.
GUARD_BYTES = 256
GUARD_BITS = 0x7FF800017FC07E01
# Timing rounds place each array at an offset drawn from the round's seed (the same in both
# workers): where a strided kernel's arrays land moves its time (transpose's read 1.19 to 1.25
# ms over placements on an H100), and a process reusing one placement round after round would
# carry its luck into every round.
SPREAD_BYTES = 8 << 20
_guards: dict[int, tuple[Any, int, int, int]] = {}  # pointer: (buffer, guard size, bits, lead)


def guarded(shape: tuple[int, ...], dtype: str, bits: int, lead: int = 0) -> Any:
    """An array of `shape` filled with `bits`, inside guard bands filled with them too, `lead`
    bytes (a multiple of GUARD_BYTES) into its buffer."""
    itemsize = np.dtype(dtype).itemsize
    n, g, skip = int(np.prod(shape)), GUARD_BYTES // itemsize, lead // itemsize
    buf = cupy.empty(skip + n + 2 * g, dtype=dtype)
    bits &= (1 << (8 * itemsize)) - 1
    buf[skip:].view(_UINT[itemsize]).fill(bits)
    arr = buf[skip + g : skip + g + n].reshape(shape)
    _guards[arr.data.ptr] = (buf, g, bits, skip)
    return arr


def poisoned(shape: tuple[int, ...], dtype: str, bits: int, lead: int = 0) -> Any:
    return guarded(shape, dtype, bits, lead)


def leads(spread: int, count: int) -> list[int]:
    """Offsets for `count` arrays from a round's seed (0 for no spread), GUARD_BYTES apart."""
    return list(_leads(spread, count))


@functools.lru_cache(maxsize=2)  # a round asks twice, for its inputs and its outputs
def _leads(spread: int, count: int) -> tuple[int, ...]:
    if not spread:
        return (0,) * count
    rng = np.random.default_rng(spread & _MASK64)
    return tuple(int(v) * GUARD_BYTES for v in rng.integers(0, SPREAD_BYTES // GUARD_BYTES, count))


def broken_guards(arrays: dict[str, Any]) -> list[str]:
    """Names of the arrays whose guard bands changed: something wrote outside them."""
    broken = []
    for name, arr in arrays.items():
        entry = _guards.get(arr.data.ptr)
        if entry is None:
            continue
        buf, g, bits, skip = entry
        if g == 0:
            continue
        words = buf.view(_UINT[buf.dtype.itemsize])
        # Two copies of 256 bytes, compared here: no reduction kernels to load for so little.
        if (words[skip : skip + g].get() != bits).any() or (words[-g:].get() != bits).any():
            broken.append(name)
    return broken


def release_guards() -> None:
    """Forget (and free) the guard bands of arrays no longer in use."""
    _guards.clear()


# The share of an input a scaled trial multiplies (half of it negated, _scaled): a span at an
# offset drawn from the trial's seed, never the whole input, so that code looking at a few
# elements (the first row, the last) to choose a careful path for wide inputs is seen taking its
# careless one on the rest.
SPAN_FRACTIONS = (2, 8, 64)


def scaled_span(n: int, seed: int, index: int) -> tuple[int, int]:
    """[start, stop) of the n elements (or rows) of a trial's input `index` that its scale
    multiplies: 1/2, 1/8 or 1/64 of them (at least one), drawn from the trial's seed alike in
    both workers; all of them for n of 1."""
    rng = random.Random(seed * 1_000_003 + index)
    count = max(1, n // rng.choice(SPAN_FRACTIONS))
    start = rng.randrange(n - count + 1)
    return start, start + count


def _scaled(x: Any, scale: float, seed: int, index: int) -> Any:
    """Input `index` of a scaled trial: its span (scaled_span) multiplied by `scale`, in place,
    the span's first half by `scale` and its second by `-scale` (a strided input: whole rows of
    its first dimension of more than one). Negated too because many problems draw only
    non-negative inputs (torch.rand): code that leaves out an abs or a relu there is right on
    every one of them.
    An expanded tensor, whose elements share memory (a written row would change them all), is
    made whole first. Alike in both workers: the same tensors from the same seed take the same
    path."""
    if any(step == 0 and n > 1 for step, n in zip(x.stride(), x.shape, strict=True)):
        x = x.contiguous()
    part = x.view(-1) if x.is_contiguous() else x
    while len(part) == 1 and part.dim() > 1:  # strided with one row: the rows of that row
        part = part[0]
    start, stop = scaled_span(len(part), seed, index)
    mid = start + (stop - start + 1) // 2
    part[start:mid].mul_(scale)
    part[mid:stop].mul_(-scale)
    return x


class CudaRunner:
    """One compiled kernel of a CUDA task, launched with the task's arguments."""

    def __init__(
        self,
        task: CudaTask,
        launch: LaunchSpec | None,
        scratch: Path,
        tag: str,
        cubin: bytes | None = None,
        source: tuple[str, str, str] | None = None,
    ) -> None:
        """From a cubin built by the compile worker, or (the task's own kernel only) from
        `source` = (code, backend, arch), compiled here."""
        self.task = task
        self.launch_spec = launch or task.launch
        self.compile_result: CompileResult | None = None
        if source is not None:
            code, backend, arch = source
            self.compile_result, cubin = compile_kernel(
                backend, code, task.entry, arch, f"{tag}.cu"
            )
        self.maker = (
            load_maker(task.inputs_source, task.inputs_maker) if task.inputs_maker else None
        )
        self.fn: Any = None
        if cubin is not None:
            path = scratch / f"{tag}.cubin"
            path.write_bytes(cubin)
            self.fn = cupy.RawModule(path=str(path)).get_function(task.entry)

    def inputs(
        self,
        sizes: dict[str, int],
        seed: int,
        inits: dict[str, str] | None = None,
        spread: int = 0,
    ) -> dict[str, Any]:
        """The task's inputs from `seed`; `spread`: each placed at an offset drawn from it.
        Those the task's input maker makes (unless a trial draws them from a wider `init`) are
        its arrays, made on the host as the C++ reference's worker makes them, then copied in."""
        task, inits = self.task, inits or {}
        lead = leads(spread, len(task.args))
        made = {}
        if self.maker is not None:
            made = made_inputs(
                self.maker,
                task.inputs_maker,
                task.args,
                lambda a: task.shape(a, sizes),
                sizes,
                seed,
            )
        arrays = {}
        for i, a in enumerate(task.args):
            if a.role not in ("in", "inout"):
                continue
            shape = task.shape(a, sizes)
            if a.name in made and a.name not in inits:
                arrays[a.name] = guarded(shape, a.dtype, GUARD_BITS, lead[i])
                arrays[a.name].set(made[a.name])
            else:
                arrays[a.name] = generate(a, shape, seed * 7919 + i, inits.get(a.name), lead[i])
        return arrays

    def outputs(self, sizes: dict[str, int], poison: int, spread: int = 0) -> dict[str, Any]:
        lead = leads(spread, len(self.task.args))
        return {
            a.name: poisoned(self.task.shape(a, sizes), a.dtype, poison, lead[i])
            for i, a in enumerate(self.task.args)
            if a.role == "out"
        }

    def bind(self, arrays: dict[str, Any], sizes: dict[str, int]) -> Callable[[], None]:
        """A call that launches the kernel on these arrays: nothing left to evaluate in it."""
        grid, block, smem, args = launch_plan(self.task, self.launch_spec, arrays, sizes)
        if smem > 48 * 1024:
            self.fn.max_dynamic_shared_size_bytes = smem
        fn = self.fn

        def call() -> None:
            fn(grid, block, args, shared_mem=smem)

        return call

    def launch(self, arrays: dict[str, Any], sizes: dict[str, int]) -> None:
        self.bind(arrays, sizes)()


def load_module(path: str, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


# A twin (TorchRunner.build) is a host copy of a model's weights: kept only up to this size
TWIN_MAX_BYTES = 2 << 30


def names_read(paths: Any) -> frozenset[str] | None:
    """Every name the code of these source files reads or writes (globals, attributes) in their
    functions and classes, but in get_inputs and get_init_inputs (whose values the construction
    key holds), and not the files' own top-level statements (which assign the sizes once, at
    import): what building a model might depend on. None where a file cannot be read or parsed
    (pure but for reading the files)."""
    import types

    names: set[str] = set()

    def walk(code: types.CodeType) -> None:
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                if const.co_name not in ("get_inputs", "get_init_inputs"):
                    names.update(const.co_names)
                walk(const)

    for path in paths:
        try:
            walk(compile(Path(path).read_text(errors="replace"), str(path), "exec"))
        except (OSError, SyntaxError, ValueError):
            return None
    return frozenset(names)


def _plain(value: Any) -> Any:
    """A hashable copy of get_init_inputs()'s values where they are plain (numbers, strings,
    None, and lists or tuples of them), else None (pure)."""
    if value is None or isinstance(value, bool | int | str):
        return (type(value).__name__, value)
    if isinstance(value, float):
        return ("float", value.hex())
    if isinstance(value, list | tuple):
        items = [_plain(v) for v in value]
        return None if any(i is None for i in items) else ("seq", tuple(items))
    return None


def tensor_bytes(values: Any) -> tuple[int, int]:
    """The bytes of the tensors among `values` (a tensor, or a tuple or list of them), as they
    are and with their floating ones in float64 (pure but for reading the tensors' sizes)."""
    import torch

    items = values if isinstance(values, tuple | list) else (values,)
    now = wide = 0
    for x in items:
        if isinstance(x, torch.Tensor):
            n = x.numel()
            now += n * x.element_size()
            wide += n * (8 if x.is_floating_point() else x.element_size())
    return now, wide


def _host_bytes(model: Any) -> int:
    """The bytes of a module's parameters and buffers (0 for anything else)."""
    try:
        return tensor_bytes([*model.parameters(), *model.buffers()])[0]
    except (AttributeError, TypeError):
        return 0


class TorchRunner:
    """A KernelBench Model or ModelNew, built with seeded weights."""

    def __init__(
        self,
        problem_path: str,
        module_path: str | None,
        class_name: str,
        share: bool = False,
    ) -> None:
        """`share`: a model kept (build's keep) serves every later trial whose construction is
        the same (construction), whatever its sizes: for the reference's own Model, whose
        forward takes any sizes. Otherwise each sizes get a model of their own."""
        import torch

        self.torch = torch
        self.problem = load_module(problem_path, "kw_problem")
        self.module = load_module(module_path, "kw_candidate") if module_path else self.problem
        if not hasattr(self.module, class_name):
            raise AttributeError(f"the candidate defines no {class_name}")
        self.cls = getattr(self.module, class_name)
        # The problem's own sizes: a trial without overrides runs at these, whatever came before.
        self.defaults = {k: v for k, v in vars(self.problem).items() if type(v) is int}
        self.share = share
        # what building a model may read: the sizes among them are in its construction key
        self._reads = names_read({problem_path, module_path or problem_path})
        self._kept: dict[tuple[Any, ...], Any] = {}  # models built with keep=True
        self._twins: dict[tuple[Any, ...], Any] = {}  # CPU copies as built (twin=True)
        self._keeps: frozenset[int] | None = None  # get_inputs()'s tensors the problem keeps

    def _apply(self, overrides: dict[str, int]) -> None:
        for key, value in {**self.defaults, **overrides}.items():
            for mod in {id(self.problem): self.problem, id(self.module): self.module}.values():
                if hasattr(mod, key):
                    setattr(mod, key, value)

    def _seed(self, seed: int) -> None:
        """Every generator a problem's code might draw from, alike in every process: torch's
        CPU and CUDA generators (what torch.manual_seed seeds here, without its checks of other
        backends, which cost ~100 us: a timing round's harness work is kept small, since what
        two processes take for it differs in proportion), Python's and NumPy's."""
        import random

        torch = self.torch
        torch.default_generator.manual_seed(seed)
        torch.cuda.manual_seed_all(seed)
        random.seed(seed)
        np.random.seed(seed & 0xFFFFFFFF)

    def _rng(self, state: Any = None) -> Any:
        """Every generator _seed seeds: their states now, or (given `state`) set to it."""
        import random

        torch = self.torch
        if state is None:
            return (
                torch.get_rng_state(),
                torch.cuda.get_rng_state_all(),
                random.getstate(),
                np.random.get_state(),
            )
        torch.set_rng_state(state[0])
        torch.cuda.set_rng_state_all(state[1])
        random.setstate(state[2])
        np.random.set_state(state[3])
        return None

    def construction(self, seed: int, overrides: dict[str, int]) -> tuple[Any, ...]:
        """What a model built under `seed` at these sizes is made from: get_init_inputs()'s
        values and the sizes the files' code reads outside get_inputs (names_read), with the
        sizes applied. Two sizes with the same key build the same model, weights and all (a
        batch size that only get_inputs reads changes nothing of it). Where the files cannot
        be read or the init inputs are not plain values, the sizes themselves."""
        self._apply(overrides)
        own = (seed, "sizes", tuple(sorted(overrides.items())))
        if self._reads is None:
            return own
        try:
            init = _plain(self.problem.get_init_inputs())
        except Exception:  # what the problem's code raises: the sizes are the key
            return own
        if init is None:
            return own
        sizes = {**self.defaults, **overrides}
        read = tuple(sorted((k, v) for k, v in sizes.items() if k in self._reads))
        return (seed, "init", init, read)

    def build(
        self,
        seed: int,
        overrides: dict[str, int],
        float64: bool = False,
        keep: bool = False,
        twin: bool = False,
    ) -> Any:
        """The model, its weights drawn under `seed` on the CPU (as KernelBench's harness
        builds it) and moved to the GPU. `keep`: kept for the next trial that asks for the same
        seed, sizes and precision (or, with `share`, the same construction), until `forget` (a
        67M-weight model took 0.7 s to build on the lent H100's host). `twin`: a copy of the
        model as built (on the CPU, before it runs) is kept for the runner's life, and every
        later build of the same construction (other sizes, float64, after the timing) is made
        from it instead of drawn again: the same weights, for a copy of them instead of a build, and
        the generators' states as the build left them."""
        made_as = self.construction(seed, overrides)  # the sizes applied
        key = (made_as if self.share else (seed, tuple(sorted(overrides.items()))), float64)
        if keep and key in self._kept:
            return self._kept[key]
        kept = self._twins.get(made_as)
        made = None
        if kept is not None:  # the generators left as the build left them: a forward may draw
            with contextlib.suppress(Exception):  # a copy that cannot be copied: built again
                made = copy.deepcopy(kept[0])
                self._rng(kept[1])
        if made is None:
            self._seed(seed)
            made = self.cls(*self.problem.get_init_inputs())
            if twin and made_as not in self._twins and _host_bytes(made) <= TWIN_MAX_BYTES:
                with contextlib.suppress(Exception):  # a model that cannot be copied: built again
                    self._twins[made_as] = (copy.deepcopy(made), self._rng())
        model = made.cuda().eval()
        model = model.double() if float64 else model
        if keep:
            self._kept[key] = model
        return model

    def prepare(self, seed: int) -> None:
        """The model at the problem's own sizes under `seed`, drawn now on the host and kept as
        a host copy (twin) for the build that asks for it later (the timing's warm-up), where
        it fits TWIN_MAX_BYTES."""
        made_as = self.construction(seed, {})
        if made_as in self._twins:
            return
        self._seed(seed)
        made = self.cls(*self.problem.get_init_inputs())
        if _host_bytes(made) <= TWIN_MAX_BYTES:
            self._twins[made_as] = (made, self._rng())

    def forget(self) -> None:
        """No model kept on the GPU: what the trials built is not held through the timing (the
        host copies stay, for the trials after it)."""
        self._kept.clear()

    def inputs(self, seed: int, overrides: dict[str, int], scale: float = 1.0) -> list[Any]:
        """A trial's inputs: get_inputs() at these sizes under `seed`, made on the GPU as a
        round's are. Both workers call the problem's own get_inputs(), so both make the same
        inputs from either generator; today's problems make up to 14 GB of them, which the CPU
        generator took seconds to draw, again for every run of every trial. `scale`: a span of
        each floating-point tensor multiplied by it, in place (plan.SCALES; scaled_span)."""
        self._apply(overrides)
        return self._scaled_all(self._made(seed + 1), scale, seed)

    def fresh_inputs(self, seed: int, scale: float = 1.0) -> list[Any]:
        """A timing round's inputs at the problem's own sizes: get_inputs() under `seed`, its
        tensors made on the GPU (a round's inputs never come from a CPU generator). `scale`:
        as a scaled trial's, a span drawn from the round's own seed (verify.py scales every
        timed call where the check's scaled trial counted)."""
        self._apply({})
        return self._scaled_all(self._made(seed), scale, seed)

    def _scaled_all(self, made: list[Any], scale: float, seed: int) -> list[Any]:
        """`made` with a span of each floating-point tensor multiplied by `scale` (_scaled), in
        place (every tensor `_made` gives is its own), outside autograd as the forward is."""
        if scale == 1.0:
            return made
        with self.torch.no_grad():
            for i, x in enumerate(made):
                if isinstance(x, self.torch.Tensor) and x.is_floating_point() and x.numel():
                    made[i] = _scaled(x, scale, seed, i)
        return made

    def _made(self, seed: int) -> list[Any]:
        """get_inputs() under `seed`, its tensors on the GPU, each one of its own: a tensor
        get_inputs() keeps between calls (or a view of one) is copied, so nothing handed to a
        call, or scaled in place, is handed out again (which ones: found once a process)."""
        if self._keeps is None:
            self._keeps = self._kept_by_problem(seed)
        made = self._get_inputs(seed)
        return [x.clone() if i in self._keeps else x for i, x in enumerate(made)]

    def _get_inputs(self, seed: int) -> list[Any]:
        torch = self.torch
        self._seed(seed)
        with torch.device("cuda"):
            made = self.problem.get_inputs()
        return [x.cuda() if isinstance(x, torch.Tensor) else x for x in made]

    def _kept_by_problem(self, seed: int) -> frozenset[int]:
        """Which of get_inputs()'s tensors outlive the set they came in: one set made and let
        go; a tensor (or the base of a view) still alive then is held by the problem."""
        probe = self._get_inputs(seed)
        refs = {
            i: [weakref.ref(x), *([weakref.ref(x._base)] if x._base is not None else [])]
            for i, x in enumerate(probe)
            if isinstance(x, self.torch.Tensor)
        }
        del probe
        return frozenset(i for i, held in refs.items() if any(r() is not None for r in held))

    def poison_allocator(self, nbytes: int) -> None:
        """Fill memory the caching allocator will hand out next with NaN, then free it."""
        torch = self.torch
        torch.cuda.empty_cache()
        block = torch.full((max(nbytes, 1 << 20) // 4 * 4,), float("nan"), device="cuda")
        del block
