"""Every front door builds the verifier's options from the settings the same way: a setting
that reaches `check` also reaches `optimize`, `batch`, chat and MCP."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from kernelwright.agent.settings import Settings


def _settings(tmp_path: Path) -> Settings:
    return Settings(
        run_timeout_s=7.0,
        compile_timeout_s=33.0,
        timing_budget_s=0.9,
        worker_host_memory_gib=3.0,
        cache_dir=tmp_path / "cache",
    )


def test_optimize_and_the_doors_get_every_setting_check_gets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kernelwright.agent import optimize
    from kernelwright.agent.doors import jobs
    from kernelwright.agent.options import verify_options
    from kernelwright.tools import backend, nvml

    settings = _settings(tmp_path)
    seen: list[Any] = []

    class Spy:
        def __init__(
            self, options: Any, compile_backend: str, progress: Any = None, pool: Any = None
        ) -> None:
            assert pool is None  # made here, not handed in
            seen.append(options)

    monkeypatch.setattr(backend, "LocalGpu", Spy)
    optimize.local_gpu(settings)
    monkeypatch.setattr(nvml, "device_info", lambda *a: type("D", (), {"arch": "sm_90"})())
    jobs.Machine(settings).gpu()
    want = verify_options(settings, prestart=True)
    assert len(seen) == 2 and all(o == want for o in seen)
    jobs.Machine(settings, prestart=False).gpu()  # `kernelwright check`: one check, no spares
    assert seen[2] == dataclasses.replace(want, prestart=False)
    assert want.run_timeout_s == 7.0 and want.compile_timeout_s == 33.0
    assert want.timing_budget_s == 0.9 and want.host_memory_bytes == 3 << 30
    assert want.build_cache_dir == str(tmp_path / "cache" / "builds")
    # the workers `kernelwright check` starts first are its verifier's: the same options
    from kernelwright.agent.options import head_start
    from kernelwright.tools import pool

    made: list[Any] = []

    class Early:
        def head_start(self, kind: str) -> None:
            made.append(kind)

    monkeypatch.setattr(pool, "for_options", lambda o: made.append(o) or Early())
    assert isinstance(head_start(settings, tmp_path / "19_ReLU.py"), Early)
    assert isinstance(head_start(settings, tmp_path / "gelu.toml"), Early)
    off = dataclasses.replace(want, prestart=False)
    assert made == [off, "kernelbench", off, "cuda"]


def test_a_head_start_asks_nvml_nothing_where_the_drivers_device_nodes_are_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """NVML's start takes hundreds of ms: where /dev holds the driver's nodes the workers
    start first, and NVML is left to the door (beside their imports); where it holds none,
    NVML decides, and no GPU means no workers."""
    from kernelwright.agent.options import head_start
    from kernelwright.tools import nvml, pool
    from kernelwright.tools.errors import NoGpuError

    settings = _settings(tmp_path)
    asked: list[str] = []

    def no_gpu(*a: Any) -> Any:
        asked.append("nvml")
        raise NoGpuError("no NVIDIA GPU here: NVML unavailable (stand-in)")

    class Early:
        def head_start(self, kind: str) -> None:
            asked.append(kind)

    monkeypatch.setattr(nvml, "device_info", no_gpu)
    monkeypatch.setattr(pool, "for_options", lambda o: Early())
    monkeypatch.setattr(nvml, "nodes_present", lambda: True)
    assert isinstance(head_start(settings, tmp_path / "19_ReLU.py"), Early)
    assert asked == ["kernelbench"]  # started, and NVML not waited for
    monkeypatch.setattr(nvml, "nodes_present", lambda: False)
    assert head_start(settings, tmp_path / "gelu.toml") is None
    assert asked == ["kernelbench", "nvml"]  # NVML asked, and no workers


def test_device_nodes_are_looked_for_in_dev(monkeypatch: pytest.MonkeyPatch) -> None:
    from kernelwright.tools import nvml

    seen: list[str] = []
    monkeypatch.setattr(nvml.os.path, "exists", lambda p: seen.append(p) or p == "/dev/dxg")
    assert nvml.nodes_present() is True
    assert seen == ["/dev/nvidiactl", "/dev/nvidia0", "/dev/dxg"]
    monkeypatch.setattr(nvml.os.path, "exists", lambda p: False)
    assert nvml.nodes_present() is False
