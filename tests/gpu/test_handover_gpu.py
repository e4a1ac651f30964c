"""A KernelBench timed call's inputs handed over on a real GPU (handover.py): packed in one
process's memory, mapped through a descriptor, the same tensors; a write through the mapping
is seen by the maker's checksum."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.gpu


def test_inputs_packed_here_and_mapped_through_their_descriptor_are_the_same_tensors() -> None:
    cupy = pytest.importorskip("cupy")
    torch = pytest.importorskip("torch")
    from kernelwright.tools import handover, vmm

    device = cupy.cuda.Device().id
    if not vmm.supported(device):
        pytest.skip("this GPU cannot share memory as descriptors")
    g = torch.Generator(device="cuda").manual_seed(3)
    a = torch.randn(300, 257, device="cuda", generator=g)
    b = torch.randn(64, 33, device="cuda", generator=g).to(torch.bfloat16).t()  # strided
    c = torch.arange(10, device="cuda", dtype=torch.int64)
    d = torch.ones(5, device="cuda", dtype=torch.float16).expand(4, 5)  # stride 0
    e = torch.tensor([True, False, True], device="cuda")
    f = torch.empty(0, 7, device="cuda")
    inputs = [a, 3, b, c, None, d, e, f, "mean"]
    packed = handover.pack(inputs, device)
    fd = packed.mapping.export()
    got, mapping = handover.unpack(packed.layout, packed.mapping.size, fd, device)
    for x, y in zip(inputs, got, strict=True):
        if isinstance(x, torch.Tensor):
            assert y.dtype == x.dtype and y.shape == x.shape and y.stride() == x.stride()
            assert torch.equal(y, x)
            assert x.numel() == 0 or y.data_ptr() != x.data_ptr()  # its own memory, not x's
        else:
            assert y == x
    assert handover.span_sums(packed.mapping.ptr, packed.layout) == packed.before
    got[0][0, 0] += 1  # written through the other mapping: the maker's checksum sees it
    torch.cuda.synchronize()
    del got
    mapping.unmap()
    after = handover.span_sums(packed.mapping.ptr, packed.layout)
    assert after[0] != packed.before[0] and after[1:] == packed.before[1:]
    packed.mapping.unmap()
