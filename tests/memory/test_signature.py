"""Task signatures and op classes: what makes two tasks related for the memory."""

from __future__ import annotations

import pytest

from kernelwright.memory.signature import op_class, task_signature
from kernelwright.tools.spec import CudaTask
from kernelwright.tools.task import load_task
from tests.conftest import EXAMPLES


@pytest.mark.parametrize(
    ("name", "signature", "op"),
    [
        ("gelu", "gelu(f32[N])->f32[N]", "elementwise"),
        ("rowsum", "rowsum(f32[M,N])->f32[M]", "reduction"),
        ("softmax", "softmax(f32[M,N])->f32[M,N]", "reduction"),
        ("matmul", "matmul(f32[M,K], f32[K,N])->f32[M,N]", "gemm"),
        ("transpose", "transpose(f32[M,N])->f32[N,M]", "transpose"),
        ("stencil", "stencil(f32[H,W])->f32[H,W]", "stencil"),
    ],
)
def test_examples(name: str, signature: str, op: str) -> None:
    task = load_task(EXAMPLES / name)
    assert isinstance(task, CudaTask)
    assert task_signature(task) == signature
    assert op_class(task) == op


def test_words_decide_only_when_shapes_do_not() -> None:
    task = load_task(EXAMPLES / "gelu")
    assert isinstance(task, CudaTask)
    assert op_class(task.model_copy(update={"description": "layernorm of each row"})) == (
        "reduction"
    )
    assert op_class(task.model_copy(update={"description": "a 3x3 blur"})) == "stencil"
    assert op_class(task.model_copy(update={"description": "y = x * minimum(x, 1)"})) == (
        "elementwise"  # "minimum" is not "min"
    )
    rowsum = load_task(EXAMPLES / "rowsum")
    assert isinstance(rowsum, CudaTask)
    assert op_class(rowsum.model_copy(update={"description": "a blur"})) == "reduction"
