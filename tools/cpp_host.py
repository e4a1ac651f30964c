"""The drop-in host function of a cpp task (best_host.cu), as data: what it copies, how it finds
the sizes from the function's own parameters, and how it launches the kernel. The file itself
is a template (agent/doors/templates/best_host.cu.j2) filled with `host_values`.

The same copies are what a check's end-to-end figure counts (`copies`): every array the function
reads goes to the device (its inputs, and the outputs it reads before writing: init =
"fill:V"), every array it writes comes back, each allocated and freed, as best_host.cu does.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Sequence
from typing import Any

from . import expr
from .cpp import CppParam, CppTask
from .errors import TaskError
from .fills import fill_value, is_fill
from .signature import find_params
from .spec import ArgSpec, LaunchSpec

# The C spelling of each dtype's element on the device, where the kernel's own is not known.
C_ELEMENT = {
    "float32": "float",
    "float64": "double",
    "int8": "signed char",
    "uint8": "unsigned char",
    "int16": "short",
    "uint16": "unsigned short",
    "int32": "int",
    "uint32": "unsigned int",
    "int64": "long long",
    "uint64": "unsigned long long",
}


def copies(args: Sequence[ArgSpec]) -> list[tuple[ArgSpec, bool, bool]]:
    """Each array argument with whether it is copied to the device (the function reads it) and
    back (the function writes it)."""
    return [
        (a, a.role in ("in", "inout") or is_fill(a.init), a.role in ("out", "inout"))
        for a in args
        if a.role != "scalar"
    ]


def copy_bytes(task: Any, sizes: dict[str, int]) -> list[tuple[str, int, bool, bool]]:
    """(name, bytes, to the device, back) for each array at `sizes`."""
    import numpy as np

    return [
        (a.name, math.prod(task.shape(a, sizes)) * np.dtype(a.dtype).itemsize, h2d, d2h)
        for a, h2d, d2h in copies(task.args)
    ]


# --- expressions over the sizes, in C++ ---------------------------------------------------------

_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}


def cxx(text: str | int | float, names: dict[str, str]) -> str:
    """An expression over the sizes (expr.py's language) as C++ over doubles; `names` maps each
    size to the C++ that holds it."""

    def go(node: ast.expr) -> str:
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return f"{float(node.value)!r}"
        if isinstance(node, ast.Name):
            return names[node.id]
        if isinstance(node, ast.UnaryOp):
            return f"(-{go(node.operand)})" if isinstance(node.op, ast.USub) else go(node.operand)
        if isinstance(node, ast.BinOp):
            a, b = go(node.left), go(node.right)
            if type(node.op) in _OPS:
                return f"({a} {_OPS[type(node.op)]} {b})"
            if isinstance(node.op, ast.FloorDiv):
                return f"std::floor({a} / {b})"
            if isinstance(node.op, ast.Mod):
                return f"std::fmod({a}, {b})"
            return f"std::pow({a}, {b})"
        if isinstance(node, ast.Call):
            assert isinstance(node.func, ast.Name)
            xs = [go(a) for a in node.args]
            fn = node.func.id
            if fn == "ceil_div":
                return f"std::ceil(std::trunc({xs[0]}) / std::trunc({xs[1]}))"
            if fn in ("min", "max"):
                out = xs[0]
                for x in xs[1:]:
                    out = f"std::f{fn}({out}, {x})"
                return out
            return f"std::{fn}({xs[0]})"
        raise expr.ExprError(f"{type(node).__name__} is not allowed")

    return go(expr.parse(text))


def _plain_name(text: str) -> str | None:
    node = expr.parse(text)
    return node.id if isinstance(node, ast.Name) else None


def _count(p: CppParam) -> str | None:
    """C++ for how many values (of the argument's dtype) the parameter holds, where it says."""
    if p.kind == "vector":
        return f"static_cast<double>({p.name}.size()){' * 2' if p.complex else ''}"
    if p.kind == "array":
        return f"{p.extent * (2 if p.complex else 1)}.0"
    return None


def sizes_from_params(task: CppTask) -> dict[str, str]:
    """C++ for each size, from the function's parameters: a scalar whose value is the size, or
    a std::vector or std::array whose shape gives it. TaskError naming what cannot be told."""
    params = {p.name: p for p in task.params}
    known: dict[str, str] = {}
    for a in task.args:
        name = _plain_name(a.value) if a.role == "scalar" else None
        if name in task.bench and name not in known and a.name in params:
            known[name] = f"static_cast<double>({a.name})"
    changed = True
    while changed:
        changed = False
        for a in task.args:
            p = params.get(a.name)
            count = _count(p) if p is not None and a.role != "scalar" else None
            unknown = [
                n for e in a.shape for n in expr.names(e) if n in task.bench and n not in known
            ]
            if count is None or len(set(unknown)) != 1:
                continue
            (size,) = set(unknown)
            dims = [d for d in a.shape if _plain_name(d) == size]
            if len(dims) != 1 or any(size in expr.names(d) for d in a.shape if d != dims[0]):
                continue
            rest = " * ".join(cxx(d, known) for d in a.shape if d != dims[0]) or "1.0"
            known[size] = f"({count} / ({rest}))"
            changed = True
    missing = [s for s in task.bench if s not in known]
    if missing:
        raise TaskError(
            task.source_path,
            f"{task.function}()",
            f"best_host.cu cannot tell {missing[0]} from the parameters: no scalar has the value "
            f"{missing[0]}, and no std::vector or std::array has it in its shape",
        )
    return known


# --- the values the template takes -------------------------------------------------------------


def _buffer_type(p: CppParam | None, dtype: str) -> str:
    """The host element type of an argument's buffer."""
    if p is None:
        return C_ELEMENT[dtype]
    if p.complex:
        return p.component
    return "unsigned char" if p.elem == "bool" else p.elem


def host_values(task: CppTask, kernel: str, launch: LaunchSpec | None) -> dict[str, Any]:
    """What best_host.cu is made of, for `kernel` (device code, its entry named as the function)
    at `launch` (None: the task's). TaskError where it cannot be written."""
    sizes = sizes_from_params(task)
    names = {s: f"kw_{s}" for s in sizes}
    declared = {p.name: p.ctype for p in find_params(kernel, task.function) or []}
    params = {p.name: p for p in task.params}
    moves = {a.name: (h2d, d2h) for a, h2d, d2h in copies(task.args)}
    buffers, kernel_args = [], []
    for i, a in enumerate(task.kernel_args):
        p = params.get(a.name)
        if a.role == "scalar":  # a parameter, or a size the kernel is given beside them
            size = f"static_cast<long long>(kw_int({names.get(a.value, '0.0')}))"
            kernel_args.append(a.name if p is not None else size)
            continue
        device = declared.get(a.name) or C_ELEMENT[a.dtype]
        host = _buffer_type(p, a.dtype)
        if p is None:  # the returned value
            kind, data, count = "result", f"&kw_r{i}", "1.0"
        elif p.kind == "vector" and p.elem == "bool":
            kind, data, count = "bools", f"kw_b{i}.data()", _count(p) or "0.0"
        elif p.kind in ("vector", "array"):
            kind, data, count = p.kind, f"{a.name}.data()", _count(p) or "0.0"
        elif p.kind == "scalar":  # a reference: one element
            kind, data, count = "reference", f"&kw_v{i}", "1.0"
        else:
            kind, data = "pointer", a.name
            count = " * ".join(cxx(d, names) for d in a.shape)
        h2d, d2h = moves[a.name]
        fill = fill_value(a.init) if is_fill(a.init) else None
        buffers.append(
            {
                "index": i,
                "name": a.name,
                "kind": kind,
                "host": host,
                "device": device,
                "data": data,
                "count": count,
                "to_device": h2d,
                "back": d2h,
                "fill": None if fill is None else _literal(fill),
                "param": p.name if p else "",
            }
        )
        kernel_args.append(f"reinterpret_cast<{device}*>(kw_d{i})")
    spec = launch or task.launch
    dims = [[cxx(e, names) for e in es] for es in (spec.grid, spec.block)]
    return {
        "function": task.function,
        "namespaces": [n for n in task.scope.split("::") if n],
        "returns": task.returns or "void",
        "result": next((b for b in buffers if b["kind"] == "result"), None),
        "params": [p.decl for p in task.params],
        "sizes": [(names[s], code) for s, code in sizes.items()],
        "buffers": buffers,
        "kernel": kernel,
        "kernel_args": kernel_args,
        "grid": dims[0],
        "block": dims[1],
        "shared_mem_bytes": cxx(spec.shared_mem_bytes, names),
        "source_name": task.source_path.rsplit("/", 1)[-1],
    }


def _literal(value: float | int) -> str:
    if isinstance(value, int):
        return str(value)
    if math.isinf(value):
        return "-INFINITY" if value < 0 else "INFINITY"
    if math.isnan(value):
        return "NAN"
    return repr(value)
