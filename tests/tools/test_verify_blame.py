"""Whose fault a reference's failure is, where the candidate's workers ran beside it (pure)."""

from __future__ import annotations

from kernelwright.tools.results import DeviceInfo
from kernelwright.tools.verify import crowded_out, out_of_memory_beside

GIB = 1 << 30
H100 = DeviceInfo(name="H100", arch="sm_90", driver_version="580", memory_total_bytes=80 * GIB)


def test_a_reference_that_fails_beside_a_candidate_holding_half_the_gpu_is_the_candidates() -> None:
    """The candidate's workers (every process a side) held half the GPU's memory or more when
    the reference failed: out of memory, the candidate's; less, or no device known: the task's
    (the caller's 'error')."""
    hog = {"reference": 2 * GIB, "candidate": 30 * GIB, "candidate 2": 10 * GIB}
    reason = crowded_out(hog, H100)
    assert reason.startswith("out of memory: the candidate's workers held 40.0 GiB")
    assert "80.0 GiB" in reason
    assert crowded_out({"reference": 60 * GIB, "candidate": 39 * GIB}, H100) == ""
    assert crowded_out({"candidate": 79 * GIB}, None) == ""
    assert crowded_out({"compile": 79 * GIB}, H100) == ""  # not a candidate's worker


def test_a_reference_out_of_memory_in_a_check_that_fits_is_the_candidates() -> None:
    """Where the check's estimate said its trials fit, a reference that runs out of GPU memory
    ran out for what the candidate's workers took, however little they held when sampled (a
    candidate may take it for milliseconds at a time); any other failure, or no estimate,
    stays the task's."""
    oom = "reference trial at as given: torch.OutOfMemoryError: CUDA out of memory. Tried to"
    reason = out_of_memory_beside(oom, 3 * GIB, H100)
    assert reason.startswith("out of memory: the check needs 3.0 GiB of the GPU's 80.0 GiB")
    assert out_of_memory_beside("CUBLAS_STATUS_ALLOC_FAILED when calling", 3 * GIB, None)
    assert out_of_memory_beside(oom, None, H100) == ""
    assert out_of_memory_beside("RuntimeError: shape mismatch", 3 * GIB, H100) == ""
