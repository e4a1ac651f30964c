"""Builds an unchanged candidate never repeats: compiled cubins, content-addressed.

A key is the hash of everything that decides the cubin: the source, the entry, the GPU arch,
the backend, the compiler's own identity (NVRTC's version, or `nvcc --version`'s text) and the
options kernelwright passes it (compile.OPTIONS_TAG). Only the controller writes an entry, from
what its compile worker (which runs no candidate host code) built; workers never see the cache.
Only successful builds are kept: a failure may be the machine's, not the source's. An entry is
read back only if its cubin hashes to what was written beside it.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from . import compile as compile_mod
from .results import CompileResult


@functools.cache
def compiler_identity(backend: str) -> str | None:
    """Which compiler would build: NVRTC's version, or nvcc's --version text; None when it
    cannot be told (then nothing is cached)."""
    try:
        if backend == "nvcc":
            nvcc = shutil.which("nvcc")
            if nvcc is None:
                return None
            out = subprocess.run(
                [nvcc, "--version"], capture_output=True, text=True, timeout=30, check=True
            )
            return f"nvcc {os.path.realpath(nvcc)} {out.stdout.strip()}"
        from cupy_backends.cuda.libs import nvrtc

        major, minor = nvrtc.getVersion()
        return f"nvrtc {major}.{minor}"
    except (OSError, ImportError, subprocess.SubprocessError, RuntimeError):
        return None


class BuildCache:
    def __init__(self, root: Path | None) -> None:
        """`root`: where entries live; None, a directory of this process's own, removed by
        close()."""
        self._own = root is None
        self.root = Path(root or tempfile.mkdtemp(prefix="kw-builds-"))

    def close(self) -> None:
        if self._own:
            shutil.rmtree(self.root, ignore_errors=True)

    def key(
        self, source: str, entry: str, arch: str, backend: str, flags: tuple[str, ...] = ()
    ) -> str | None:
        identity = compiler_identity(backend)
        if identity is None:
            return None
        parts = {
            "source": source,
            "entry": entry,
            "arch": arch,
            "backend": backend,
            "compiler": identity,
            "options": compile_mod.OPTIONS_TAG,
        }
        if flags:  # a candidate's own options (tune's); none keeps the keys made before them
            parts["flags"] = " ".join(flags)
        return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()

    def find(
        self, source: str, entry: str, arch: str, backend: str, flags: tuple[str, ...] = ()
    ) -> tuple[str | None, tuple[CompileResult, bytes] | None]:
        """The key for this build (None: not cacheable here) and the cached build, if any."""
        key = self.key(source, entry, arch, backend, flags)
        return key, self.get(key) if key else None

    def get(self, key: str) -> tuple[CompileResult, bytes] | None:
        """The cached build, or None (missing, or its cubin not what was written)."""
        meta_path, cubin_path = self._paths(key)
        try:
            meta = json.loads(meta_path.read_text())
            cubin = cubin_path.read_bytes()
            result = CompileResult.model_validate(meta["result"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if hashlib.sha256(cubin).hexdigest() != meta.get("cubin_sha256") or not result.ok:
            return None
        return result.model_copy(update={"cached": True}), cubin

    def put(self, key: str, result: CompileResult, cubin: bytes) -> None:
        """Keep a successful build (written whole or not at all; a full disk loses nothing)."""
        if not result.ok:
            return
        meta_path, cubin_path = self._paths(key)
        meta = {"result": result.model_dump(), "cubin_sha256": hashlib.sha256(cubin).hexdigest()}
        with contextlib.suppress(OSError):
            meta_path.parent.mkdir(parents=True, exist_ok=True)
            for path, data in ((cubin_path, cubin), (meta_path, json.dumps(meta).encode())):
                fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                os.replace(tmp, path)

    def _paths(self, key: str) -> tuple[Path, Path]:
        base = self.root / key[:2] / key
        return base.with_suffix(".json"), base.with_suffix(".cubin")


Compiler = Callable[..., tuple[CompileResult, bytes | None]]


def cached_build(
    builds: BuildCache | None,
    source: str,
    entry: str,
    arch: str,
    backend: str,
    flags: tuple[str, ...] = (),
    compiler: Compiler | None = None,
) -> tuple[CompileResult, bytes | None]:
    """A build from the cache, else from the compile worker (`compiler`, by default
    compile.compile_in_sandbox) and then kept: the controller's builds (the loop's compile
    node, tune) land where the verifier looks, so a check never builds the same thing again."""
    key, hit = builds.find(source, entry, arch, backend, flags) if builds else (None, None)
    if hit:
        return hit
    build = compiler or compile_mod.compile_in_sandbox
    result, cubin = build(source, entry, arch, backend, flags=flags)
    if builds and key and cubin:
        builds.put(key, result, cubin)
    return result, cubin
