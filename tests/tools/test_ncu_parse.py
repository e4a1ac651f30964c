"""Reading Nsight Compute output (recorded on an H100) into a bottleneck label."""

from __future__ import annotations

import pytest

from kernelwright.tools import ncu
from tests.conftest import FIXTURES

PERM_ERROR = (
    "==PROF== Connected to process 4242 (/usr/bin/python3.12)\n"
    "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
    "Performance Counters on the target device 0. For instructions on enabling permissions and "
    "to get more information see https://developer.nvidia.com/ERR_NVGPUCTRPERM\n"
    "==PROF== Disconnected from process 4242\n"
)


def test_memory_bound_copy() -> None:
    result = ncu.parse((FIXTURES / "ncu_raw_copy.csv").read_text())
    assert result.available and result.reason == ""
    assert result.kernel_name == "kw_copy"
    assert result.bottleneck == "memory-bound"
    assert result.duration_ms == pytest.approx(0.2237, abs=1e-4)
    assert result.dram_pct == pytest.approx(69.47)
    assert result.registers_per_thread == 16
    assert 0 < result.achieved_occupancy_pct <= result.theoretical_occupancy_pct <= 100


def test_tiny_kernel_is_latency_bound() -> None:
    result = ncu.parse((FIXTURES / "ncu_raw_tiny.csv").read_text())
    assert result.available and result.kernel_name == "kw_tiny"
    assert result.bottleneck == "latency-bound"
    assert result.duration_ms is not None and result.duration_ms < 0.01


def test_no_kernel_profiled() -> None:
    result = ncu.parse((FIXTURES / "ncu_no_kernel.txt").read_text())
    assert not result.available
    assert result.reason.startswith("profiling unavailable")
    assert "No kernels were profiled" in result.reason
    assert result.duration_ms is None and result.bottleneck == "unknown"


def test_no_permission_for_counters() -> None:
    result = ncu.parse(PERM_ERROR)
    assert not result.available
    assert result.reason.startswith("profiling unavailable")
    assert "ERR_NVGPUCTRPERM" in result.reason and "https://developer.nvidia.com/" in result.reason


def test_other_ncu_error_is_passed_on() -> None:
    result = ncu.parse("==ERROR== Failed to connect to process 12.\n")
    assert not result.available
    assert result.reason == "profiling unavailable: Failed to connect to process 12."


def test_empty_output() -> None:
    result = ncu.parse("")
    assert not result.available and result.reason == "profiling unavailable: ncu printed no metrics"


@pytest.mark.parametrize(
    ("sm", "mem", "label"),
    [
        (None, None, "unknown"),
        (10.0, 20.0, "latency-bound"),
        (59.9, 59.9, "latency-bound"),
        (60.0, 30.0, "compute-bound"),
        (30.0, 60.0, "memory-bound"),
        (90.0, 80.0, "compute-bound"),
        (80.0, 90.0, "memory-bound"),
        (None, 75.0, "memory-bound"),
        (75.0, None, "compute-bound"),
    ],
)
def test_bottleneck_thresholds(sm: float | None, mem: float | None, label: str) -> None:
    assert ncu.bottleneck(sm, mem) == label


def test_command_profiles_one_launch_of_the_entry_only() -> None:
    cmd = ncu.command("gelu", "/tmp/x.log")
    assert cmd[cmd.index("-k") + 1] == "regex:^gelu$"
    assert cmd[cmd.index("-c") + 1] == "1"
    assert cmd[cmd.index("--clock-control") + 1] == "none"
