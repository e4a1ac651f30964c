"""load_inline builds kept by the controller (extbuild.py), without torch or a GPU: stand-ins
for torch's cpp_extension and for the build worker; the real messages over real pipes."""

from __future__ import annotations

import os
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from kernelwright.tools import extbuild
from kernelwright.tools.protocol import FrameReader, write_message


def _torch_load_inline(
    name,  # type: ignore[no-untyped-def]
    cpp_sources,
    cuda_sources=None,
    functions=None,
    extra_cflags=None,
    extra_cuda_cflags=None,
    extra_ldflags=None,
    extra_include_paths=None,
    build_directory=None,
    verbose=False,
    with_cuda=None,
    is_python_module=True,
    with_pytorch_error_handling=True,
    keep_intermediates=True,
    use_pch=False,
    no_implicit_headers=False,
):
    """load_inline's signature as torch 2.x has it."""
    raise AssertionError("the real load_inline was called")


SPEC = {
    "name": "relu_ext",
    "cpp_sources": ["torch::Tensor relu(torch::Tensor x);"],
    "cuda_sources": ["__global__ void k() {}"],
    "functions": ["relu"],
    "extra_cflags": ["-O3"],
    "extra_cuda_cflags": ["-O3", "--use_fast_math"],
    "extra_ldflags": None,
    "extra_include_paths": None,
    "with_cuda": True,
    "is_python_module": True,
    "with_pytorch_error_handling": True,
    "use_pch": False,
    "no_implicit_headers": False,
}


def test_a_call_is_sent_as_plain_data_or_left_to_torch() -> None:
    args = ("relu_ext", "torch::Tensor relu(torch::Tensor x);")
    kwargs = {
        "cuda_sources": "__global__ void k() {}",
        "functions": ["relu"],
        "extra_cflags": ["-O3"],
        "extra_cuda_cflags": ["-O3", "--use_fast_math"],
        "with_cuda": True,
        "verbose": True,  # changes nothing built: not in the spec
        "build_directory": "/tmp/x",
    }
    assert extbuild.spec_of(_torch_load_inline, args, kwargs) == SPEC
    # anything but plain data, or arguments torch would refuse: torch's own load_inline builds
    assert extbuild.spec_of(_torch_load_inline, args, {"functions": [len]}) is None
    assert extbuild.spec_of(_torch_load_inline, args, {"extra_cflags": "-O3"}) is None
    assert extbuild.spec_of(_torch_load_inline, args, {"nonsense": 1}) is None
    assert extbuild.spec_of(_torch_load_inline, (b"name", "x"), {}) is None


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"name": "../x"}, "not a Python identifier"),
        ({"extra_cuda_cflags": ["-O3; curl evil"]}, "which no compiler option needs"),
        ({"extra_ldflags": ["$(id)"]}, "which no compiler option needs"),
        ({"extra_cflags": [""]}, "which no compiler option needs"),
        ({"functions": ["relu(); system"]}, "must name C++ functions"),
        ({"cpp_sources": "x"}, "must be a list of strings"),
        ({"with_cuda": "yes"}, "must be true or false"),
        ({"sycl_sources": ["x"]}, "not one this build knows"),
        ({"cpp_sources": [], "cuda_sources": None}, "no sources"),
        ({"cpp_sources": ["x" * (extbuild.SOURCE_BYTES + 1)]}, "at most"),
    ],
)
def test_the_controller_refuses_what_no_honest_build_asks_for(
    change: dict[str, Any], why: str
) -> None:
    assert extbuild.problem(SPEC) == ""
    assert why in extbuild.problem({**SPEC, **change})
    assert extbuild.problem("spec") == "the build request is not an object"


def test_the_key_follows_every_input_of_the_build() -> None:
    ident = {"python": "3.12.1", "arch": "sm_90", "nvcc": "V13.0", "torch": "2.11.0"}
    k = extbuild.key(SPEC, ident)
    assert k == extbuild.key(dict(reversed(list(SPEC.items()))), dict(ident))
    assert k != extbuild.key({**SPEC, "extra_cuda_cflags": ["-O2"]}, ident)
    assert k != extbuild.key({**SPEC, "cuda_sources": ["__global__ void k2() {}"]}, ident)
    assert k != extbuild.key(SPEC, {**ident, "arch": "sm_80"})
    assert k != extbuild.key(SPEC, {**ident, "torch": "2.10.0"})


def test_the_cache_keeps_whole_read_only_entries_and_the_newest_within_its_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = extbuild.ExtensionCache(tmp_path / "ext")
    assert cache.get("a" * 64, "relu_ext") is None
    cache.put("a" * 64, "relu_ext", b"\x7fELF one")
    assert cache.get("a" * 64, "relu_ext") == b"\x7fELF one"
    lib = tmp_path / "ext" / ("a" * 64) / "relu_ext.so"
    assert not os.access(lib, os.W_OK) or os.geteuid() == 0
    assert lib.stat().st_mode & 0o222 == 0
    cache.put("a" * 64, "relu_ext", b"another")  # a second check put it first: kept as it was
    assert cache.get("a" * 64, "relu_ext") == b"\x7fELF one"
    monkeypatch.setattr(extbuild, "CACHE_BYTES", 20)
    old = tmp_path / "ext" / ("a" * 64)
    os.utime(old, (1, 1))
    cache.put("b" * 64, "relu_ext", b"x" * 15)
    assert cache.get("a" * 64, "relu_ext") is None  # the oldest went
    assert cache.get("b" * 64, "relu_ext") == b"x" * 15
    assert not [p for p in (tmp_path / "ext").iterdir() if p.name.startswith(".tmp-")]


class _Box:
    """A worker as the controller sees it: what it was sent."""

    def __init__(self) -> None:
        self.sent: list[tuple[dict[str, Any], list[bytes]]] = []

    def send(self, header: dict[str, Any], arrays: list[bytes] | None = None) -> None:
        self.sent.append((header, list(arrays or [])))


def test_an_unchanged_extension_is_built_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[dict[str, Any]] = []

    def build(spec: dict[str, Any], arch: str, timeout_s: float) -> tuple[bool, str, bytes]:
        built.append(spec)
        assert arch == "sm_90"
        return True, "", b"\x7fELF relu"

    monkeypatch.setattr(extbuild, "build_in_sandbox", build)
    monkeypatch.setattr(extbuild, "machine_identity", lambda arch: {"arch": arch})
    cache = extbuild.ExtensionCache(tmp_path)
    for check in range(2):  # two checks of the same candidate
        ext = extbuild.Builds(cache, lambda: "sm_90", 60.0)
        box = _Box()
        ext.answer(box, {"type": "build", "spec": SPEC})
        ((header, arrays),) = box.sent
        assert header == {"cmd": "built", "ok": True, "cached": check == 1, "log": ""}
        assert arrays == [b"\x7fELF relu"] and ext.note() == ""
    assert len(built) == 1
    ext = extbuild.Builds(cache, lambda: "sm_90", 60.0)
    box = _Box()
    ext.answer(box, {"type": "build", "spec": {**SPEC, "extra_cflags": ["-O2"]}})
    assert len(built) == 2 and box.sent[0][0]["cached"] is False


def test_a_failed_or_refused_build_is_said_and_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        extbuild,
        "build_in_sandbox",
        lambda spec, arch, t: (False, 'kernel.cu(3): error: identifier "x" is undefined', None),
    )
    monkeypatch.setattr(extbuild, "machine_identity", lambda arch: {"arch": arch})
    ext = extbuild.Builds(extbuild.ExtensionCache(tmp_path), lambda: "sm_90", 60.0)
    box = _Box()
    ext.answer(box, {"type": "build", "spec": SPEC})
    assert box.sent[0] == (
        {"cmd": "built", "ok": False, "cached": False,
         "log": "kernel.cu(3): error: identifier \"x\" is undefined"},
        [],
    )  # fmt: skip
    assert ext.note() == (
        "its load_inline build 'relu_ext' failed (kernel.cu(3): error: identifier \"x\" is "
        "undefined)"
    )
    assert not list(tmp_path.iterdir())  # nothing cached
    ext.answer(box, {"type": "build", "spec": {**SPEC, "extra_ldflags": ["-Wl,--x;y"]}})
    assert box.sent[1][0]["ok"] is False and box.sent[1][0]["log"].startswith("refused: ")
    for _ in range(extbuild.MAX_BUILDS):
        ext.answer(box, {"type": "build", "spec": SPEC})
    assert "more than 8 builds" in box.sent[-1][0]["log"]


def _fake_torch(monkeypatch: pytest.MonkeyPatch, imported: list[tuple[str, str, bool]]) -> Any:
    ce = types.ModuleType("torch.utils.cpp_extension")
    ce.load_inline = _torch_load_inline  # type: ignore[attr-defined]

    def import_from(name: str, path: str, is_python_module: bool) -> Any:
        imported.append((name, Path(path, f"{name}.so").read_text(), is_python_module))
        return types.SimpleNamespace(relu=lambda x: x)

    ce._import_module_from_library = import_from  # type: ignore[attr-defined]
    torch = types.ModuleType("torch")
    utils = types.ModuleType("torch.utils")
    torch.utils = utils  # type: ignore[attr-defined]
    utils.cpp_extension = ce  # type: ignore[attr-defined]
    for name, mod in (("torch", torch), ("torch.utils", utils), ("torch.utils.cpp_extension", ce)):
        monkeypatch.setitem(sys.modules, name, mod)
    return ce


def test_the_candidates_load_inline_asks_the_controller_and_imports_what_comes_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In the candidate's worker: the call goes to the controller as a message, the library
    that comes back is written into scratch and imported; a failure raises as torch's does."""
    imported: list[tuple[str, str, bool]] = []
    ce = _fake_torch(monkeypatch, imported)
    monkeypatch.chdir(tmp_path)
    to_worker_r, to_worker_w = os.pipe()
    from_worker_r, from_worker_w = os.pipe()
    worker = types.SimpleNamespace(
        reader=FrameReader(to_worker_r),
        send=lambda header, arrays=(): write_message(from_worker_w, header, list(arrays)),
    )
    extbuild.install(worker, "from torch.utils.cpp_extension import load_inline")
    from torch.utils.cpp_extension import load_inline  # as a candidate imports it

    write_message(to_worker_w, {"cmd": "built", "ok": True, "cached": True, "log": ""}, [b"lib"])
    module = load_inline(
        "relu_ext",
        "torch::Tensor relu(torch::Tensor x);",
        cuda_sources="__global__ void k() {}",
        functions=["relu"],
        extra_cflags=["-O3"],
        extra_cuda_cflags=["-O3", "--use_fast_math"],
        with_cuda=True,
    )
    assert module.relu(3) == 3 and imported == [("relu_ext", "lib", True)]
    request, _ = FrameReader(from_worker_r).read_message(1e12)
    assert request == {"type": "build", "spec": SPEC, "arrays": []}

    write_message(to_worker_w, {"cmd": "built", "ok": False, "log": "error: no"}, [])
    with pytest.raises(RuntimeError, match="Error building extension 'relu_ext': error: no"):
        load_inline("relu_ext", "x")
    with pytest.raises(AssertionError, match="the real load_inline"):  # not plain data
        ce.load_inline("relu_ext", "x", functions=[len])
    for fd in (to_worker_r, to_worker_w, from_worker_r, from_worker_w):
        os.close(fd)


def test_without_a_channel_the_candidate_builds_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    ce = _fake_torch(monkeypatch, [])
    extbuild.install(types.SimpleNamespace(reader=None), "load_inline(...)")
    assert ce.load_inline is _torch_load_inline
    channel = types.SimpleNamespace(reader=object())
    extbuild.install(channel, "import cupy  # no extension built")  # torch's not even imported
    assert ce.load_inline is _torch_load_inline


_FAKE_CPP_EXTENSION = """
import os

def _import_module_from_library(module_name, path, is_python_module):
    raise AssertionError("the build worker imported what it built")

def load_inline(name, cpp_sources, cuda_sources=None, functions=None, build_directory=None,
                verbose=False, with_cuda=None):
    text = "".join(cpp_sources)
    if "FAIL" in text:
        raise RuntimeError(f"Error building extension '{name}': main.cpp(1): error: FAIL here")
    arch = os.environ.get("TORCH_CUDA_ARCH_LIST", "")
    with open(os.path.join(build_directory, name + ".so"), "wb") as f:
        f.write(f"built for {arch} in {os.getcwd() != '/'}: {text}".encode())
    return _import_module_from_library(name, build_directory, True)  # as torch's ends
"""


def _torch_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A stand-in torch package on the path the workers get (their view shows sys.path)."""
    site = tmp_path / "site"
    (site / "torch" / "utils").mkdir(parents=True)
    (site / "torch" / "__init__.py").write_text("")
    (site / "torch" / "utils" / "__init__.py").write_text("")
    (site / "torch" / "utils" / "cpp_extension.py").write_text(_FAKE_CPP_EXTENSION)
    monkeypatch.syspath_prepend(str(site))


def test_the_build_worker_builds_in_a_process_of_its_own_and_sends_the_library(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real build worker (`worker --build-extension`, confined), with a stand-in torch
    whose load_inline writes NAME.so: the library comes back over the channel, its import is
    never run there, and a failed build comes back as its log."""
    _torch_site(tmp_path, monkeypatch)
    spec = {"name": "relu_ext", "cpp_sources": ["int f();"], "with_cuda": False}
    ok, log, data = extbuild.build_in_sandbox(spec, "sm_90", 120.0)
    assert (ok, log) == (True, "") and data == b"built for 9.0 in True: int f();"
    ok, log, data = extbuild.build_in_sandbox({**spec, "cpp_sources": ["FAIL"]}, "sm_90", 120.0)
    assert not ok and data is None and "main.cpp(1): error: FAIL here" in log


def test_the_controller_keeps_what_the_build_worker_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _torch_site(tmp_path, monkeypatch)
    monkeypatch.setattr(extbuild, "machine_identity", lambda arch: {"arch": arch})
    cache = extbuild.ExtensionCache(tmp_path / "builds" / "extensions")
    spec = {"name": "relu_ext", "cpp_sources": ["int f();"], "with_cuda": False}
    for check in range(2):
        ext = extbuild.Builds(cache, lambda: "sm_90", 120.0)
        box = _Box()
        ext.answer(box, {"type": "build", "spec": spec})
        ((header, arrays),) = box.sent
        assert header["ok"] and header["cached"] == (check == 1)
        assert arrays == [b"built for 9.0 in True: int f();"]
    (entry,) = cache.root.iterdir()
    assert (entry / "relu_ext.so").read_bytes() == arrays[0]
