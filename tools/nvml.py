"""NVML through nvidia-ml-py: the device's name, architecture, clocks, temperature and the
reasons its clocks are held down. The controller reads these itself: a candidate cannot fake
them."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .errors import NoGpuError
from .results import ClockSample, DeviceInfo

# Clock event ("throttle") reasons, bit -> name, from nvml.h.
THROTTLE_REASONS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}


def decode_throttle_reasons(mask: int) -> tuple[str, ...]:
    """Names of the bits set in an NVML clocks-event-reasons mask (pure)."""
    return tuple(name for bit, name in THROTTLE_REASONS.items() if mask & bit)


_initialised = False


@contextmanager
def nvml() -> Iterator[Any]:
    """NVML, initialised once per process (nvmlInit costs hundreds of ms on a large GPU)."""
    global _initialised
    try:
        import pynvml  # provided by the nvidia-ml-py distribution

        if not _initialised:
            pynvml.nvmlInit()
            _initialised = True
    except Exception as exc:  # NVMLError_LibraryNotFound, DriverNotLoaded, ...
        raise NoGpuError(
            f"no NVIDIA GPU here: NVML unavailable ({exc}); kernelwright needs an "
            "NVIDIA GPU and its driver"
        ) from None
    yield pynvml


# The driver's device nodes: Linux's (/dev/nvidiactl, /dev/nvidia0) and WSL's (/dev/dxg).
DEVICE_NODES = ("/dev/nvidiactl", "/dev/nvidia0", "/dev/dxg")


def nodes_present() -> bool:
    """Whether a GPU driver's device node is here: a look at /dev, no NVML (whose start
    takes hundreds of ms). Not a promise that a GPU works: `device_info` says that."""
    return any(os.path.exists(node) for node in DEVICE_NODES)


def _handle(n: Any, pci_bus_id: str | None) -> Any:
    if n.nvmlDeviceGetCount() == 0:
        raise NoGpuError("no NVIDIA GPU found")
    if pci_bus_id:
        try:
            return n.nvmlDeviceGetHandleByPciBusId(pci_bus_id.encode())
        except n.NVMLError:
            pass
    return n.nvmlDeviceGetHandleByIndex(0)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def device_info(
    pci_bus_id: str | None = None, sm_count: int | None = None, l2_bytes: int | None = None
) -> DeviceInfo:
    with nvml() as n:
        h = _handle(n, pci_bus_id)
        major, minor = n.nvmlDeviceGetCudaComputeCapability(h)
        peak_gbps = None
        try:
            mem_mhz = n.nvmlDeviceGetMaxClockInfo(h, n.NVML_CLOCK_MEM)
            bus_bits = n.nvmlDeviceGetMemoryBusWidth(h)
            peak_gbps = mem_mhz * 1e6 * 2 * bus_bits / 8 / 1e9
        except n.NVMLError:
            pass
        peak_tflops = None
        if sm_count:
            sm_mhz = n.nvmlDeviceGetMaxClockInfo(h, n.NVML_CLOCK_SM)
            fp32_per_sm = 128 if major >= 8 and (major, minor) != (8, 0) else 64
            peak_tflops = sm_count * fp32_per_sm * 2 * sm_mhz * 1e6 / 1e12
        return DeviceInfo(
            name=_text(n.nvmlDeviceGetName(h)),
            arch=f"sm_{major}{minor}",
            driver_version=_text(n.nvmlSystemGetDriverVersion()),
            memory_total_bytes=int(n.nvmlDeviceGetMemoryInfo(h).total),
            sm_count=sm_count,
            l2_bytes=l2_bytes,
            peak_dram_gbps=peak_gbps,
            peak_fp32_tflops=peak_tflops,
        )


def clock_sample(pci_bus_id: str | None = None) -> ClockSample | None:
    """Current clocks, temperature, power and throttle reasons; None where NVML is missing."""
    try:
        with nvml() as n:
            h = _handle(n, pci_bus_id)

            def get(fn: str, *args: Any) -> Any:
                try:
                    return getattr(n, fn)(h, *args)
                except (n.NVMLError, AttributeError):
                    return None

            mask = get("nvmlDeviceGetCurrentClocksEventReasons")
            if mask is None:
                mask = get("nvmlDeviceGetCurrentClocksThrottleReasons")
            power = get("nvmlDeviceGetPowerUsage")
            return ClockSample(
                sm_mhz=get("nvmlDeviceGetClockInfo", n.NVML_CLOCK_SM),
                mem_mhz=get("nvmlDeviceGetClockInfo", n.NVML_CLOCK_MEM),
                temperature_c=get("nvmlDeviceGetTemperature", n.NVML_TEMPERATURE_GPU),
                power_w=power / 1000 if power is not None else None,
                throttle_reasons=decode_throttle_reasons(mask or 0),
            )
    except NoGpuError:
        return None


def process_memory(pci_bus_id: str | None = None) -> dict[int, int]:
    """GPU memory each process holds on the device (its context, its allocator's pools and
    arrays), by pid, as the driver counts it: read here, where no worker can change it. Empty
    where NVML cannot say (no GPU, or a driver that hides other processes' use)."""
    try:
        with nvml() as n:
            h = _handle(n, pci_bus_id)
            procs = n.nvmlDeviceGetComputeRunningProcesses(h)
    except Exception:  # NoGpuError, NVMLError and its kin: nothing known
        return {}
    used: dict[int, int] = {}
    for p in procs:
        pid, mem = getattr(p, "pid", None), getattr(p, "usedGpuMemory", None)
        if type(pid) is int and type(mem) is int and mem >= 0:
            used[pid] = used.get(pid, 0) + mem
    return used


def free_bytes(pci_bus_id: str | None = None) -> int | None:
    """The device's free memory now, as the driver counts it (every process's use out of it):
    read here, where no worker can change what it says; None where NVML cannot say."""
    try:
        with nvml() as n:
            free = n.nvmlDeviceGetMemoryInfo(_handle(n, pci_bus_id)).free
    except Exception:  # NoGpuError, NVMLError and its kin: nothing known
        return None
    return int(free) if type(free) is int and free >= 0 else None
