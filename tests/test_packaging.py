"""The wheel ships every package: setuptools' explicit package list must name each folder that
holds an __init__.py under the mapped roots (an editable install hides a missing one)."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_package_folder_is_listed_for_the_wheel() -> None:
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(conf["packages"])
    found = set()
    for name, folder in conf["package-dir"].items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder)
            found.add(".".join([name, *rel.parts]))
    assert found - listed == set(), f"packages missing from pyproject: {sorted(found - listed)}"
    assert listed - found == set(), f"listed packages without a folder: {sorted(listed - found)}"


def test_package_data_globs_match_files() -> None:
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    for name, globs in conf["package-data"].items():
        folder = ROOT / conf["package-dir"][name]
        for glob in globs:
            assert list(folder.glob(glob)), f"{name}: package-data {glob!r} matches no file"
