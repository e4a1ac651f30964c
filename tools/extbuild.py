"""PyTorch extensions a KernelBench candidate builds with `load_inline`, built once and kept.

A candidate's `load_inline(...)` call, in its own worker, does not build there: the harness's
stand-in (installed before the candidate's module loads) sends the call's arguments, as data, to
the controller. The controller keys them (sources, functions, options, torch, CUDA, Python, the
GPU's architecture) and answers from its cache, or has them built first by a build worker of
their own: a confined process that runs no code of the candidate's, only torch's build of those
sources, and sends back the built library. The controller alone writes the cache; the candidate's
worker is sent the library's bytes, writes them into its scratch and imports them. So an
unchanged candidate never rebuilds, and no candidate can put into the cache anything but what
its own sources build to.

A call the stand-in cannot send as plain data (arguments of another kind, or of a torch newer than
it knows) is built by the real `load_inline` in the candidate's worker, as before. A build that
fails raises in the candidate, as load_inline does; if the candidate goes on without it (a
fallback it catches), the check's reason says so.

The messages (protocol.py), while the controller waits for the candidate's import:
  W -> C  {"type": "build", "spec": {...}}
  C -> W  {"cmd": "built", "ok": bool, "log": text, "cached": bool} + [library] when ok
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import json
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# load_inline's arguments that shape what is built, and the kinds of value each may take here
_TEXTS = ("cpp_sources", "cuda_sources")  # a string or a list of strings
_LISTS = ("extra_cflags", "extra_cuda_cflags", "extra_ldflags", "extra_include_paths")
_FLAGS = ("with_cuda", "is_python_module", "with_pytorch_error_handling", "use_pch",
          "no_implicit_headers")  # fmt: skip
# what changes nothing in the result: dropped from the key (the build directory is the builder's)
_IGNORED = ("build_directory", "verbose", "keep_intermediates")
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")
# an option never needs these; torch joins options into a ninja file run by a shell
_UNSAFE = re.compile(r"[\s;&|`$<>\\\"'(){}*?!#~]")
SOURCE_BYTES = 3 << 20  # all of one call's sources (a message's header holds 4 MiB)
LIBRARY_BYTES = 512 << 20
CACHE_BYTES = 4 << 30  # the cache keeps its newest entries within this
MAX_BUILDS = 8  # build requests one check answers; more are refused


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _kind_problem(key: str, value: Any) -> str:
    """Why a spec's value is not of a kind load_inline takes here ("" when it is)."""
    if key == "name":
        return "" if isinstance(value, str) else "name must be a string"
    if key in _TEXTS or key in _LISTS:
        return "" if value is None or _strings(value) else f"{key} must be a list of strings"
    if key == "functions":
        named = isinstance(value, dict) and all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()
        )
        return (
            "" if value is None or _strings(value) or named else "functions must name C++ functions"
        )
    if key in _FLAGS:
        return "" if value is None or isinstance(value, bool) else f"{key} must be true or false"
    return f"load_inline argument {key[:40]!r} is not one this build knows"


def spec_of(real: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any] | None:
    """A `load_inline` call's arguments as plain data (worker side), or None when the call has
    anything else: then the real load_inline builds it, as before."""
    try:
        bound = inspect.signature(real).bind(*args, **kwargs)
    except TypeError:
        return None
    bound.apply_defaults()
    known = {"name", "functions", *_TEXTS, *_LISTS, *_FLAGS}
    spec: dict[str, Any] = {}
    for key, value in bound.arguments.items():
        if key in _IGNORED:
            continue
        if key in (*_TEXTS, "functions") and isinstance(value, str):
            value = [value]  # torch takes one string for a list of one
        elif isinstance(value, tuple):
            value = list(value)
        if _kind_problem(key, value):
            if key not in known and (value is None or value is False):
                continue  # an argument this code does not know, unused
            return None
        spec[key] = value
    return spec if "name" in spec else None


def problem(spec: Any) -> str:
    """Why the controller will not build this spec ("" when it will): it came from the
    candidate's process and is checked as such."""
    if not isinstance(spec, dict):
        return "the build request is not an object"
    name = spec.get("name")
    if not isinstance(name, str) or not NAME.match(name):
        return f"extension name {str(name)[:60]!r} is not a Python identifier"
    for key, value in spec.items():
        if why := _kind_problem(key, value):
            return why
    functions = spec.get("functions")
    if not all(NAME.match(f) for f in functions or []):  # a list, or a dict's keys
        return "functions must name C++ functions"
    for key in _LISTS:
        bad = next((v for v in spec.get(key) or [] if not v or _UNSAFE.search(v)), None)
        if bad is not None:
            return f"{key} holds {bad[:60]!r}, which no compiler option needs"
    if not spec.get("cpp_sources") and not spec.get("cuda_sources"):
        return "no sources"
    size = sum(len(v) for key in (*_TEXTS, *_LISTS) for v in spec.get(key) or [])
    size += len(json.dumps(functions))
    if size > SOURCE_BYTES:
        return f"sources of {size:,} bytes (at most {SOURCE_BYTES:,})"
    return ""


def key(spec: dict[str, Any], identity: dict[str, str]) -> str:
    """The cache's key: the spec and what the build depends on besides (torch, CUDA, Python,
    the architecture, the compilers)."""
    text = json.dumps({"spec": spec, "identity": identity}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


class ExtensionCache:
    """Built libraries by key, written by the controller only (each entry a directory holding
    one `NAME.so`, read-only, moved into place whole); the newest kept within CACHE_BYTES."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def get(self, key: str, name: str) -> bytes | None:
        path = self.root / key / f"{name}.so"
        try:
            data = path.read_bytes()
        except OSError:
            return None
        os.utime(path.parent)  # used: the newest are kept
        return data

    def put(self, key: str, name: str, data: bytes) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".tmp-", dir=self.root))
        lib = staging / f"{name}.so"
        lib.write_bytes(data)
        lib.chmod(0o444)
        try:
            staging.rename(self.root / key)
        except OSError:  # another check put it first
            shutil.rmtree(staging, ignore_errors=True)
        self._trim()

    def _trim(self) -> None:
        entries = []
        for d in self.root.iterdir():
            if d.is_dir() and not d.name.startswith(".tmp-"):
                size = sum(f.stat().st_size for f in d.iterdir() if f.is_file())
                entries.append((d.stat().st_mtime, size, d))
        total = sum(size for _, size, _ in entries)
        for _, size, d in sorted(entries, key=lambda e: e[0]):
            if total <= CACHE_BYTES:
                break
            shutil.rmtree(d, ignore_errors=True)
            total -= size


@dataclass
class Built:
    name: str
    ok: bool
    cached: bool
    seconds: float
    log: str = ""


class Builds:
    """The controller's side for one check: answers the candidate workers' build requests from
    the cache, or by a build worker; remembers what happened for the report."""

    def __init__(self, cache: ExtensionCache, arch: Callable[[], str], timeout_s: float) -> None:
        """`arch`: the GPU's architecture, asked for only when a build is."""
        self.cache, self._arch, self.timeout_s = cache, arch, timeout_s
        self.done: list[Built] = []
        self._identity: dict[str, str] | None = None

    @property
    def arch(self) -> str:
        return self._arch()

    @property
    def identity(self) -> dict[str, str]:
        if self._identity is None:
            self._identity = machine_identity(self.arch)
        return self._identity

    def answer(self, box: Any, header: dict[str, Any]) -> None:
        """Reply to one {"type": "build"} message from `box`."""
        from .sandbox import cap

        spec = header.get("spec")
        t0 = time.perf_counter()
        why = problem(spec) or (
            f"more than {MAX_BUILDS} builds in one check" if len(self.done) >= MAX_BUILDS else ""
        )
        name = spec.get("name", "?") if isinstance(spec, dict) else "?"
        if why:
            self._reply(box, Built(str(name)[:60], False, False, 0.0, f"refused: {why}"), None)
            return
        assert isinstance(spec, dict)  # problem() said so
        k = key(spec, self.identity)
        data = self.cache.get(k, name)
        if data is not None:
            self._reply(box, Built(name, True, True, time.perf_counter() - t0), data)
            return
        ok, log, data = build_in_sandbox(spec, self.arch, self.timeout_s)
        if ok and data is not None:
            with contextlib.suppress(OSError):  # a cache that cannot be written keeps nothing
                self.cache.put(k, name, data)
        elapsed = time.perf_counter() - t0
        self._reply(box, Built(name, ok and data is not None, False, elapsed, cap(log, 4000)), data)

    def _reply(self, box: Any, built: Built, data: bytes | None) -> None:
        self.done.append(built)
        box.send(
            {"cmd": "built", "ok": built.ok, "cached": built.cached, "log": built.log},
            [data] if built.ok and data is not None else [],
        )

    def note(self) -> str:
        """What the report says of this check's builds that failed ("" when none did)."""
        failed = [b for b in self.done if not b.ok]
        if not failed:
            return ""
        first = failed[0]
        lines = first.log.splitlines()
        line = next((ln for ln in lines if "error:" in ln.lower()), "")  # a compiler's diagnostic
        line = line or next((ln for ln in lines if "error" in ln.lower()), "")
        line = line or (lines or ["no log"])[0]
        return f"its load_inline build {first.name!r} failed ({line.strip()[:200]})"


def machine_identity(arch: str) -> dict[str, str]:
    """What a build depends on besides its spec, as this machine has it (controller side)."""
    from .builds import compiler_identity

    return {
        "python": sys.version.split()[0],
        "arch": arch,
        "nvcc": compiler_identity("nvcc") or "",
        "torch": _torch_version(),
    }


def _torch_version() -> str:
    try:
        from importlib.metadata import version

        return version("torch")
    except Exception:
        return ""


def build_in_sandbox(
    spec: dict[str, Any], arch: str, timeout_s: float
) -> tuple[bool, str, bytes | None]:
    """Build the spec in a build worker: confined, running torch's build of these sources and
    nothing of the candidate's. Returns (ok, log, library)."""
    from .protocol import Expect
    from .sandbox import Sandbox, WorkerFailure

    command = [sys.executable, "-m", "kernelwright.tools.worker", "--build-extension"]
    box = Sandbox("extension", command=command)
    try:
        with box:
            box.send({"spec": spec, "arch": arch})
            header, arrays = box.receive(
                timeout_s, "building the extension", Expect(count=1, total=LIBRARY_BYTES)
            )
    except WorkerFailure as failure:
        return False, f"build worker: {failure.reason}", None
    if header.get("type") != "built":
        return False, str(header.get("error", "the build worker sent no result"))[:4000], None
    ok = bool(header.get("ok")) and len(arrays) == 1
    return ok, str(header.get("log", ""))[:4000], bytes(arrays[0]) if ok else None


def build_worker(reader: Any, out_fd: int) -> None:
    """The build worker's whole life (worker side): one spec in, its library out. torch's own
    build runs; the import that would end load_inline does not."""
    import traceback

    import torch.utils.cpp_extension as ce

    from .protocol import write_message

    job, _ = reader.read_message(time.monotonic() + 3600)
    spec = dict(job["spec"])
    name = spec["name"]
    where = Path.cwd() / "build"
    where.mkdir()
    cc = str(job.get("arch", "")).removeprefix("sm_")
    if cc.isdigit() and len(cc) >= 2:  # the GPU's architecture, as the controller knows it
        os.environ["TORCH_CUDA_ARCH_LIST"] = f"{cc[:-1]}.{cc[-1]}"
    ce._import_module_from_library = lambda *a, **k: None
    try:
        ce.load_inline(**spec, build_directory=str(where), verbose=False)
        library = (where / f"{name}.so").read_bytes()
    except Exception as exc:
        text = "".join(traceback.format_exception_only(exc)).strip()
        write_message(out_fd, {"type": "built", "ok": False, "log": text[-4000:]})
        return
    write_message(out_fd, {"type": "built", "ok": True, "log": ""}, [library])


def install(worker: Any, source: str) -> None:
    """The stand-in for torch's load_inline in a candidate's worker (before its module loads):
    the controller builds, or has built, what the call asks for. Only where the candidate's
    source names load_inline: torch's cpp_extension takes a while to import."""
    if "load_inline" not in source:
        return
    import itertools

    import torch.utils.cpp_extension as ce

    real = getattr(ce, "load_inline", None)
    if real is None or not hasattr(ce, "_import_module_from_library") or worker.reader is None:
        return  # a torch this does not know, or no channel: the candidate builds as before
    count = itertools.count(1)

    def load_inline(*args: Any, **kwargs: Any) -> Any:
        spec = spec_of(real, args, kwargs)
        if spec is None:
            return real(*args, **kwargs)
        worker.send({"type": "build", "spec": spec})
        reply, arrays = worker.reader.read_message(time.monotonic() + 3600)
        name = spec["name"]
        if reply.get("cmd") != "built" or not reply.get("ok") or len(arrays) != 1:
            raise RuntimeError(f"Error building extension '{name}': {reply.get('log', '')}")
        where = Path.cwd() / "kw_extensions" / f"{name}-{next(count)}"
        where.mkdir(parents=True)
        (where / f"{name}.so").write_bytes(bytes(arrays[0]))
        is_module = spec.get("is_python_module", True) is not False
        return ce._import_module_from_library(name, str(where), is_module)

    load_inline.__doc__ = real.__doc__
    ce.load_inline = load_inline
