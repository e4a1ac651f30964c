"""The few-shot kernels are real CUDA: each compiles with NVRTC and nvcc, with no spills."""

from __future__ import annotations

import re
import shutil

import pytest

from kernelwright.prompts import render
from kernelwright.tools.compile import compile_nvcc, compile_nvrtc
from kernelwright.tools.signature import find_params

NAMES = render.fewshot_names()
_ENTRY = re.compile(r'extern\s+"C"\s+__global__\s+void\s+(\w+)\s*\(')
TRIVIAL = 'extern "C" __global__ void k(float* x) { x[0] = 1.0f; }'


def entry_of(name: str) -> str:
    entries = _ENTRY.findall(render.fewshot(name))
    assert len(entries) == 1, f'{name}.cu: expected one extern "C" __global__ kernel'
    return entries[0]


def test_the_three_techniques_ship() -> None:
    assert NAMES == ["tiled_transpose", "vectorized_copy_scale", "warp_shuffle_rowsum"]


@pytest.mark.parametrize("name", NAMES)
def test_header_names_the_technique_and_the_launch(name: str) -> None:
    source = render.fewshot(name)
    assert source.startswith("// Technique: ")
    assert "// Launch: " in source
    assert find_params(source, entry_of(name)), 'the entry point must be extern "C" __global__'


@pytest.mark.parametrize("name", NAMES)
def test_compiles_with_nvrtc(nvrtc: None, name: str) -> None:
    result, cubin = compile_nvrtc(render.fewshot(name), entry_of(name), "sm_90", f"{name}.cu")
    assert result.ok, result.log
    assert cubin and cubin[:4] == b"\x7fELF"
    assert result.registers and result.registers > 0
    assert result.spill_stores_bytes == 0 and result.spill_loads_bytes == 0


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
@pytest.mark.parametrize("name", NAMES)
def test_compiles_with_nvcc(name: str) -> None:
    result, cubin = compile_nvcc(render.fewshot(name), entry_of(name), "sm_90", f"{name}.cu")
    assert result.ok, result.log
    assert cubin and cubin[:4] == b"\x7fELF"
    assert result.spill_stores_bytes == 0 and result.spill_loads_bytes == 0
