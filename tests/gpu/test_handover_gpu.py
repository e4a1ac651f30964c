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


@pytest.mark.xfail(
    strict=True,
    reason="read 0.26x against itself on an H200 (thirty-first session): the hand-over is off by "
    "default (VerifyOptions.hand_over_inputs) until the asymmetry is found",
)
def test_a_problems_own_model_reads_one_against_itself_on_handed_over_inputs() -> None:
    """With the hand-over on, every timed call's inputs made by the reference's worker: the
    problem's own Model against itself must still read 1.00x within 2%, and say it was."""
    import dataclasses

    from kernelwright.tools.task import load_task, reference_candidate
    from kernelwright.tools.verify import Verifier
    from kernelwright.tools.verify_options import VerifyOptions
    from tests.conftest import EXAMPLES

    task = load_task(EXAMPLES / "kernelbench" / "relu_mlp.py")
    with Verifier(dataclasses.replace(VerifyOptions(), hand_over_inputs=True)) as verifier:
        report = verifier.check(task, reference_candidate(task))
    assert report.verdict == "correct", report.reason
    assert report.timing is not None and report.timing.inputs_handed_over
    assert 0.98 <= report.timing.speedup <= 1.02, report.timing
