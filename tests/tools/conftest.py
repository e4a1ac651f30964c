"""Fixtures shared by the tools' tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kernelwright.tools.verify import Verifier, VerifyOptions


@pytest.fixture
def verifier(tmp_path: Path) -> Iterator[Verifier]:
    """A verifier on the CPU side (no pinning), its C++ references kept under tmp_path."""
    with Verifier(VerifyOptions(pin_cpus=False, reference_cache_dir=str(tmp_path / "c"))) as v:
        yield v
