"""What makes two tasks related, for the memory: a task's signature (its entry point with the
dtypes and shapes of what it reads and writes) and its op class, read off the task file. A
KernelBench problem's are read off its source (never run): its name and sizes, and the torch
operations its Model uses."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from kernelwright.tools.kernelbench import KernelBenchTask
from kernelwright.tools.spec import ArgSpec, CudaTask
from kernelwright.tools.task import Task

OP_CLASSES = ("gemm", "transpose", "reduction", "stencil", "elementwise")
DTYPE_SHORT = {"float16": "f16", "float32": "f32", "float64": "f64", "bfloat16": "bf16"}
# Same-shape outputs hide what a kernel does; its name and description say it.
_REDUCTION_WORDS = re.compile(
    r"softmax|\b(norm|\w+norm|scan|prefix|reduc|sum\b|mean\b|max\b|min\b|argm|histogram)"
)
_STENCIL_WORDS = re.compile(r"stencil|jacobi|laplac|\bconv|blur|\bfilter|neighbo")
# What a KernelBench Model's torch calls say, heaviest first.
_TORCH_OPS = (
    ("gemm", re.compile(r"\b(Linear|matmul|mm|bmm|addmm|baddbmm|einsum|Bilinear)\b|\w\s*@\s*\w")),
    ("stencil", re.compile(r"\b(Conv\w*|conv\w*|\w*Pool\w*|\w*pool\w*)\b")),
    (
        "reduction",
        re.compile(r"\b(\w*[Ss]oftmax|\w*[Nn]orm\w*|sum|mean|amax|max|min|cumsum|prod)\b"),
    ),
    ("transpose", re.compile(r"\b(transpose|permute)\b|\.T\b")),
)


def _dtype(dtype: str) -> str:
    return DTYPE_SHORT.get(dtype, re.sub(r"^u?int", lambda m: m[0][0], dtype))


def _array(a: ArgSpec) -> str:
    return f"{_dtype(a.dtype)}[{','.join(a.shape)}]"


def task_signature(task: Task) -> str:
    """For example `rowsum(f32[M,N])->f32[M]`: inputs, then outputs (read-write on both sides);
    for a KernelBench problem `kernelbench:relu_mlp(batch_size=128,...)`."""
    return _SIGNATURES[task.kind](task)


def op_class(task: Task) -> str:
    """One of OP_CLASSES, from the shapes of inputs and outputs, then from the task's words;
    for a KernelBench problem from the torch operations in its source."""
    return _OP_CLASSES[task.kind](task)


def _problem_signature(task: KernelBenchTask) -> str:
    sizes = ",".join(f"{k}={v}" for k, v in task.size_globals.items())
    return f"kernelbench:{task.name}({sizes})"


def _problem_op_class(task: KernelBenchTask) -> str:
    return next((c for c, words in _TORCH_OPS if words.search(task.source)), "elementwise")


def _kernel_signature(task: CudaTask) -> str:
    ins = [_array(a) for a in task.args if a.role in ("in", "inout")]
    outs = [_array(a) for a in task.args if a.role in ("out", "inout")]
    return f"{task.entry}({', '.join(ins)})->{', '.join(outs)}"


def _is_gemm(ins: list[tuple[str, ...]], out: tuple[str, ...]) -> bool:
    """Two inputs [.., M, K] and [.., K, N] and an output [.., M, N]."""
    for a in ins:
        for b in ins:
            if a is b or len(a) < 2 or len(b) < 2:
                continue
            if a[-1] == b[-2] and out == (*a[:-1], b[-1]) and a[-1] not in out:
                return True
    return False


def _kernel_op_class(task: CudaTask) -> str:
    ins = [tuple(a.shape) for a in task.args if a.role in ("in", "inout")]
    outs = [tuple(a.shape) for a in task.args if a.role in ("out", "inout")]
    words = f"{task.name} {task.entry} {task.description}".lower()
    if any(_is_gemm(ins, out) for out in outs):
        return "gemm"
    widest = max(ins, key=len, default=())
    if any(set(out) < set(widest) for out in outs):
        return "reduction"
    if any(
        out != shape and sorted(out) == sorted(shape) and len(out) > 1
        for out in outs
        for shape in ins
    ):
        return "transpose"
    if _REDUCTION_WORDS.search(words):
        return "reduction"
    if _STENCIL_WORDS.search(words):
        return "stencil"
    return "elementwise"


# How each task kind's signature and op class are read, by `task.kind`.
# A cpp task has args, an entry and a description as a CUDA task does: its kernels are CUDA's.
_SIGNATURES: dict[str, Callable[[Any], str]] = {
    "cuda": _kernel_signature,
    "kernelbench": _problem_signature,
    "cpp": _kernel_signature,
}
_OP_CLASSES: dict[str, Callable[[Any], str]] = {
    "cuda": _kernel_op_class,
    "kernelbench": _problem_op_class,
    "cpp": _kernel_op_class,
}
