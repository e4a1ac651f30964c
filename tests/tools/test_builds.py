"""The build cache: an unchanged candidate's cubin is reused, anything that decides the build
changes the key, and only whole, successful builds come back (no GPU: NVRTC and nvcc run on
the CPU)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelwright.tools.builds import BuildCache, compiler_identity
from kernelwright.tools.compile import compile_in_sandbox

SOURCE = 'extern "C" __global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }'


@pytest.fixture
def nvrtc() -> None:
    if compiler_identity("nvrtc") is None:
        pytest.skip("NVRTC is not installed")


def test_the_key_is_everything_that_decides_the_build(tmp_path: Path, nvrtc: None) -> None:
    cache = BuildCache(tmp_path)
    key = cache.key(SOURCE, "k", "sm_90", "nvrtc")
    assert key and key == cache.key(SOURCE, "k", "sm_90", "nvrtc")
    others = {
        cache.key(SOURCE + " ", "k", "sm_90", "nvrtc"),
        cache.key(SOURCE, "k2", "sm_90", "nvrtc"),
        cache.key(SOURCE, "k", "sm_80", "nvrtc"),
    }
    assert key not in others and len(others) == 3


def test_a_build_comes_back_whole_and_marked_cached(tmp_path: Path, nvrtc: None) -> None:
    result, cubin = compile_in_sandbox(SOURCE, "k", "sm_90")
    assert result.ok and cubin
    cache = BuildCache(tmp_path)
    key = cache.key(SOURCE, "k", "sm_90", "nvrtc")
    assert key and cache.get(key) is None
    cache.put(key, result, cubin)
    hit = cache.get(key)
    assert hit is not None and hit[1] == cubin and hit[0].cached and not result.cached
    assert BuildCache(tmp_path).get(key) is not None  # a later run finds it too
    (cubin_file,) = tmp_path.rglob("*.cubin")
    torn = bytearray(cubin)
    torn[len(torn) // 2] ^= 0xFF  # torn or tampered: not what was written
    cubin_file.write_bytes(bytes(torn))
    assert cache.get(key) is None


def test_a_failed_build_is_not_kept(tmp_path: Path, nvrtc: None) -> None:
    result, cubin = compile_in_sandbox("this is not CUDA", "k", "sm_90")
    assert not result.ok
    cache = BuildCache(tmp_path)
    key = cache.key("this is not CUDA", "k", "sm_90", "nvrtc")
    assert key
    cache.put(key, result, cubin or b"")
    assert cache.get(key) is None and not list(tmp_path.rglob("*.json"))


def test_a_cache_of_its_own_goes_with_close() -> None:
    cache = BuildCache(None)
    assert cache.root.is_dir()
    cache.close()
    assert not cache.root.exists()


def test_the_loops_compile_node_fills_the_cache_the_verifier_reads(
    tmp_path: Path, nvrtc: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A loop's candidate is built once: by the compile node, into the cache the verifier
    reads (same source, arch, compiler); a second look is a hit, with no compile worker."""
    from types import SimpleNamespace

    from kernelwright.agent.nodes import compile as node

    ctx = SimpleNamespace(builds=BuildCache(tmp_path), arch="sm_90", compile_backend="nvrtc")
    first = node._build(ctx, SOURCE, "k")  # type: ignore[arg-type]
    assert first.ok and not first.cached

    def no_worker(*args: object, **kwargs: object) -> None:
        raise AssertionError("built again")

    monkeypatch.setattr(node, "compile_in_sandbox", no_worker)
    assert node._build(ctx, SOURCE, "k").cached  # type: ignore[arg-type]
    verifier_side = BuildCache(tmp_path).get(
        BuildCache(tmp_path).key(SOURCE, "k", "sm_90", "nvrtc") or ""
    )
    assert verifier_side is not None and verifier_side[0].cached
