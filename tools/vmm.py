"""GPU memory one process hands to another as a file descriptor (the CUDA driver's virtual
memory management, through ctypes: CuPy does not wrap it).

A candidate's worker allocates a large trial's outputs here, runs the kernel, unmaps them from
its own address space and hands the allocation's file descriptor to the controller, which
passes it to the reference's worker. That worker maps it and compares it with its own outputs
on the GPU (devcompare.py): a 256 MB output never crosses the host. The descriptor is a real
one (SCM_RIGHTS over a Unix socket), so it crosses PID namespaces, which CUDA's legacy IPC
handles cannot. Once the candidate's worker has unmapped the allocation, no code of its process
can reach it again: the reference's worker reads what the kernel left, and nothing later.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
from dataclasses import dataclass
from typing import Any

_ALLOCATION_PINNED = 1
_HANDLE_POSIX_FD = 1
_LOCATION_DEVICE = 1
_ACCESS_READWRITE = 3
_GRANULARITY_MINIMUM = 0
_ATTR_POSIX_FD_SUPPORTED = 103  # CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED
_ATTR_VMM_SUPPORTED = 102  # CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED


class _Location(ctypes.Structure):
    _fields_ = (("type", ctypes.c_int), ("id", ctypes.c_int))


class _AllocFlags(ctypes.Structure):
    _fields_ = (
        ("compressionType", ctypes.c_ubyte),
        ("gpuDirectRDMACapable", ctypes.c_ubyte),
        ("usage", ctypes.c_ushort),
        ("reserved", ctypes.c_ubyte * 4),
    )


class _Prop(ctypes.Structure):
    _fields_ = (
        ("type", ctypes.c_int),
        ("requestedHandleTypes", ctypes.c_int),
        ("location", _Location),
        ("win32HandleMetaData", ctypes.c_void_p),
        ("allocFlags", _AllocFlags),
    )


class _Access(ctypes.Structure):
    _fields_ = (("location", _Location), ("flags", ctypes.c_int))


class VmmError(RuntimeError):
    """A driver call failed (its name and CUresult)."""


_lib: Any = None


def _driver() -> Any:
    global _lib
    if _lib is None:
        _lib = ctypes.CDLL("libcuda.so.1")
        for name in ("cuMemAddressReserve", "cuMemAddressFree", "cuMemMap", "cuMemUnmap"):
            getattr(_lib, name).restype = ctypes.c_int
    return _lib


def _call(name: str, *args: Any) -> None:
    rc = getattr(_driver(), name)(*args)
    if rc != 0:
        raise VmmError(f"{name} failed (CUresult {rc})")


def _prop(device: int) -> _Prop:
    prop = _Prop()
    prop.type = _ALLOCATION_PINNED
    prop.requestedHandleTypes = _HANDLE_POSIX_FD
    prop.location = _Location(_LOCATION_DEVICE, device)
    return prop


def supported(device: int = 0) -> bool:
    """Whether this GPU can share memory as file descriptors (VMM with POSIX handles)."""
    try:
        lib = _driver()
        for attr in (_ATTR_VMM_SUPPORTED, _ATTR_POSIX_FD_SUPPORTED):
            value = ctypes.c_int(0)
            if lib.cuDeviceGetAttribute(ctypes.byref(value), attr, device) != 0 or not value.value:
                return False
        return True
    except (OSError, AttributeError):
        return False


def granularity(device: int = 0) -> int:
    size = ctypes.c_size_t(0)
    _call(
        "cuMemGetAllocationGranularity",
        ctypes.byref(size),
        ctypes.byref(_prop(device)),
        _GRANULARITY_MINIMUM,
    )
    return int(size.value)


def padded(nbytes: int, device: int = 0) -> int:
    """`nbytes` rounded up to the allocation granularity (at least one granule)."""
    g = granularity(device)
    return max(g, -(-nbytes // g) * g)


@dataclass
class Mapping:
    """An allocation mapped into this process: `ptr` for `size` bytes."""

    handle: int
    ptr: int
    size: int
    device: int
    mapped: bool = True

    def unmap(self) -> None:
        """Unmap and release it here: from now on no code of this process can reach it (an
        exported descriptor, or another process's mapping, keeps the memory alive)."""
        if not self.mapped:
            return
        self.mapped = False
        _call("cuMemUnmap", ctypes.c_uint64(self.ptr), ctypes.c_size_t(self.size))
        _call("cuMemAddressFree", ctypes.c_uint64(self.ptr), ctypes.c_size_t(self.size))
        _call("cuMemRelease", ctypes.c_uint64(self.handle))

    def export(self) -> int:
        """A new file descriptor for the allocation (the caller closes it)."""
        fd = ctypes.c_int(-1)
        _call(
            "cuMemExportToShareableHandle",
            ctypes.byref(fd),
            ctypes.c_uint64(self.handle),
            _HANDLE_POSIX_FD,
            ctypes.c_ulonglong(0),
        )
        return int(fd.value)


def _map(handle: int, size: int, device: int) -> Mapping:
    ptr = ctypes.c_uint64(0)
    _call(
        "cuMemAddressReserve",
        ctypes.byref(ptr),
        ctypes.c_size_t(size),
        ctypes.c_size_t(0),
        ctypes.c_uint64(0),
        ctypes.c_ulonglong(0),
    )
    try:
        _call(
            "cuMemMap",
            ptr,
            ctypes.c_size_t(size),
            ctypes.c_size_t(0),
            ctypes.c_uint64(handle),
            ctypes.c_ulonglong(0),
        )
    except VmmError:
        _call("cuMemAddressFree", ptr, ctypes.c_size_t(size))
        raise
    access = _Access(_Location(_LOCATION_DEVICE, device), _ACCESS_READWRITE)
    try:
        _call(
            "cuMemSetAccess", ptr, ctypes.c_size_t(size), ctypes.byref(access), ctypes.c_size_t(1)
        )
    except VmmError:
        _call("cuMemUnmap", ptr, ctypes.c_size_t(size))
        _call("cuMemAddressFree", ptr, ctypes.c_size_t(size))
        raise
    return Mapping(handle, int(ptr.value), size, device)


def allocate(nbytes: int, device: int = 0) -> Mapping:
    """A fresh, exportable allocation of at least `nbytes`, mapped here (read and write)."""
    size = padded(nbytes, device)
    handle = ctypes.c_uint64(0)
    _call(
        "cuMemCreate", ctypes.byref(handle), ctypes.c_size_t(size), ctypes.byref(_prop(device)), 0
    )
    try:
        return _map(int(handle.value), size, device)
    except VmmError:
        _call("cuMemRelease", handle)
        raise


def open_fd(fd: int, size: int, device: int = 0) -> Mapping:
    """Map another process's allocation from its descriptor: exactly `size` bytes from its
    start (the size both sides work out from the trial; a smaller allocation fails to map).
    The descriptor is closed here either way."""
    handle = ctypes.c_uint64(0)
    try:
        _call(
            "cuMemImportFromShareableHandle",
            ctypes.byref(handle),
            ctypes.c_void_p(fd),
            _HANDLE_POSIX_FD,
        )
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)
    try:
        return _map(int(handle.value), size, device)
    except VmmError:
        _call("cuMemRelease", handle)
        raise


class Allocator:
    """A CuPy allocator whose every allocation is its own exportable one: arrays made inside
    `cupy.cuda.using_allocator(allocator)` can be handed to another process."""

    def __init__(self, device: int = 0) -> None:
        self.device = device
        self.mappings: list[Mapping] = []

    def __call__(self, nbytes: int) -> Any:
        import cupy

        mapping = allocate(max(nbytes, 1), self.device)
        self.mappings.append(mapping)
        mem = cupy.cuda.UnownedMemory(mapping.ptr, mapping.size, mapping)
        return cupy.cuda.MemoryPointer(mem, 0)

    def holding(self, ptr: int) -> tuple[Mapping, int]:
        """The allocation holding device address `ptr`, and ptr's offset in it."""
        for m in self.mappings:
            if m.mapped and m.ptr <= ptr < m.ptr + m.size:
                return m, ptr - m.ptr
        raise VmmError("no shared allocation holds this array")

    def release(self) -> None:
        for m in self.mappings:
            m.unmap()
        self.mappings.clear()
