"""Run a task's kernel on the GPU. Imported only inside a sandboxed worker process.

`CudaRunner` compiles a CUDA kernel and launches it through CuPy; `TorchRunner` builds a
KernelBench Model or ModelNew. Inputs come from a seed, so two processes given the same seed
build the same inputs without sending them over the pipe.
"""

from __future__ import annotations

import copy
import hashlib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cupy
import numpy as np

from .compile import compile_kernel
from .results import CompileResult
from .spec import FLOAT_DTYPES, ArgSpec, CudaTask, LaunchSpec, launch_plan

_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}

_CHECKSUM_SRC = r"""
extern "C" __global__ void kw_checksum(const unsigned int* w, unsigned long long n,
                                       unsigned long long* out) {
    unsigned long long acc = 0;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        unsigned long long h = (unsigned long long)w[i] + i * 0x9E3779B97F4A7C15ull;
        h ^= h >> 33; h *= 0xff51afd7ed558ccdull; h ^= h >> 33;
        acc += h;
    }
    atomicAdd(out, acc);
}
"""
_checksum_kernel: Any = None


def checksum(array: Any) -> str:
    """A position-dependent 64-bit sum of an array's 32-bit words (bytes padded), on the GPU."""
    global _checksum_kernel
    if _checksum_kernel is None:
        _checksum_kernel = cupy.RawKernel(_CHECKSUM_SRC, "kw_checksum")
    raw = cupy.ascontiguousarray(array).view(cupy.uint8).ravel()
    if raw.size % 4:
        raw = cupy.concatenate([raw, cupy.zeros(4 - raw.size % 4, dtype=cupy.uint8)])
    words = raw.view(cupy.uint32)
    out = cupy.zeros(1, dtype=cupy.uint64)
    _checksum_kernel((264,), (256,), (words, np.uint64(words.size), out))
    return f"{int(out.get()[0]):016x}-{array.nbytes}"


def generate(arg: ArgSpec, shape: tuple[int, ...], seed: int) -> Any:
    """The input for one argument, from a seed; the same in every process on this machine."""
    data = _generate(arg, shape, seed)
    out = guarded(shape, arg.dtype, GUARD_BITS)
    out[...] = data
    return out


def _generate(arg: ArgSpec, shape: tuple[int, ...], seed: int) -> Any:
    rs = cupy.random.RandomState(seed)
    if arg.dtype in FLOAT_DTYPES:
        gen_dtype = cupy.float64 if arg.dtype == "float64" else cupy.float32
        if arg.init == "normal":
            data = rs.standard_normal(shape, dtype=gen_dtype)
        elif arg.init.startswith("uniform:"):
            lo, hi = (float(v) for v in arg.init.split(":")[1:])
            data = rs.uniform(lo, hi, shape, dtype=gen_dtype)
        elif arg.init == "positive":
            data = rs.uniform(0.5, 2.0, shape, dtype=gen_dtype)
        else:
            data = rs.uniform(-1.0, 1.0, shape, dtype=gen_dtype)
        return data.astype(arg.dtype, copy=False)
    if arg.init.startswith("randint:"):
        lo, hi = (int(v) for v in arg.init.split(":")[1:])
    else:
        lo, hi = (0, 100) if arg.dtype.startswith("u") else (-100, 100)
    return rs.randint(lo, hi, shape, dtype=np.int64).astype(arg.dtype)


# Every array a kernel gets sits between two guard bands holding a NaN pattern (at 8, 4 and 2
# bytes): a read just past either end reads NaN, and a write there is seen afterwards.
GUARD_BYTES = 256
GUARD_BITS = 0x7FF800017FC07E01
_guards: dict[int, tuple[Any, int, int]] = {}  # data pointer: (whole buffer, guard size, bits)


def guarded(shape: tuple[int, ...], dtype: str, bits: int) -> Any:
    """An array of `shape` filled with `bits`, inside guard bands filled with them too."""
    itemsize = np.dtype(dtype).itemsize
    n, g = int(np.prod(shape)), GUARD_BYTES // itemsize
    buf = cupy.empty(n + 2 * g, dtype=dtype)
    bits &= (1 << (8 * itemsize)) - 1
    buf.view(_UINT[itemsize]).fill(bits)
    arr = buf[g : g + n].reshape(shape)
    _guards[arr.data.ptr] = (buf, g, bits)
    return arr


def poisoned(shape: tuple[int, ...], dtype: str, bits: int) -> Any:
    return guarded(shape, dtype, bits)


def broken_guards(arrays: dict[str, Any]) -> list[str]:
    """Names of the arrays whose guard bands changed: something wrote outside them."""
    broken = []
    for name, arr in arrays.items():
        entry = _guards.get(arr.data.ptr)
        if entry is None:
            continue
        buf, g, bits = entry
        words = buf.view(_UINT[buf.dtype.itemsize])
        # Two copies of 256 bytes, compared here: no reduction kernels to load for so little.
        if (words[:g].get() != bits).any() or (words[-g:].get() != bits).any():
            broken.append(name)
    return broken


def release_guards() -> None:
    """Forget (and free) the guard bands of arrays no longer in use."""
    _guards.clear()


class CudaRunner:
    """One compiled kernel of a CUDA task, launched with the task's arguments."""

    def __init__(
        self,
        task: CudaTask,
        source: str,
        launch: LaunchSpec | None,
        scratch: Path,
        backend: str,
        arch: str,
        tag: str,
    ) -> None:
        self.task = task
        self.launch_spec = launch or task.launch
        self.compile_result: CompileResult
        self.compile_result, cubin = compile_kernel(backend, source, task.entry, arch, f"{tag}.cu")
        self.fn: Any = None
        if cubin is not None:
            path = scratch / f"{tag}.cubin"
            path.write_bytes(cubin)
            self.fn = cupy.RawModule(path=str(path)).get_function(task.entry)

    def inputs(self, sizes: dict[str, int], seed: int) -> dict[str, Any]:
        return {
            a.name: generate(a, self.task.shape(a, sizes), seed * 7919 + i)
            for i, a in enumerate(self.task.args)
            if a.role in ("in", "inout")
        }

    def outputs(self, sizes: dict[str, int], poison: int) -> dict[str, Any]:
        return {
            a.name: poisoned(self.task.shape(a, sizes), a.dtype, poison)
            for a in self.task.args
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


class TorchRunner:
    """A KernelBench Model or ModelNew, built with seeded weights."""

    def __init__(
        self,
        problem_path: str,
        module_path: str | None,
        class_name: str,
        before_candidate: Callable[[Any], None] | None = None,
    ) -> None:
        import torch

        self.torch = torch
        self.problem = load_module(problem_path, "kw_problem")
        if before_candidate is not None:  # the harness's last look before candidate code runs
            before_candidate(self.problem)
        self.module = load_module(module_path, "kw_candidate") if module_path else self.problem
        if not hasattr(self.module, class_name):
            raise AttributeError(
                f"{Path(module_path or problem_path).name} defines no {class_name}"
            )
        self.cls = getattr(self.module, class_name)
        # The problem's own sizes: a trial without overrides runs at these, whatever came before.
        self.defaults = {k: v for k, v in vars(self.problem).items() if type(v) is int}

    def _apply(self, overrides: dict[str, int]) -> None:
        for key, value in {**self.defaults, **overrides}.items():
            for mod in {id(self.problem): self.problem, id(self.module): self.module}.values():
                if hasattr(mod, key):
                    setattr(mod, key, value)

    def build(self, seed: int, overrides: dict[str, int], float64: bool = False) -> Any:
        torch = self.torch
        self._apply(overrides)
        torch.manual_seed(seed)
        model = self.cls(*self.problem.get_init_inputs())
        model = model.cuda().eval()
        return copy.deepcopy(model).double() if float64 else model

    def inputs(self, seed: int, overrides: dict[str, int]) -> list[Any]:
        torch = self.torch
        self._apply(overrides)
        torch.manual_seed(seed + 1)
        return [x.cuda() if isinstance(x, torch.Tensor) else x for x in self.problem.get_inputs()]

    def input_digest(self, inputs: list[Any]) -> list[str]:
        torch = self.torch
        return [
            hashlib.blake2b(x.detach().cpu().contiguous().numpy().tobytes()).hexdigest()[:16]
            if isinstance(x, torch.Tensor)
            else repr(x)
            for x in inputs
        ]

    def poison_allocator(self, nbytes: int) -> None:
        """Fill memory the caching allocator will hand out next with NaN, then free it."""
        torch = self.torch
        torch.cuda.empty_cache()
        block = torch.full((max(nbytes, 1 << 20) // 4 * 4,), float("nan"), device="cuda")
        del block
