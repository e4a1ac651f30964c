"""The catalogue of CUDA techniques (techniques.yaml): the reasoning graph's tags and prior."""

from __future__ import annotations

import re
from functools import cache
from importlib import resources
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

Bottleneck = Literal["memory-bound", "compute-bound", "latency-bound"]
BOTTLENECKS: tuple[Bottleneck, ...] = ("memory-bound", "compute-bound", "latency-bound")


class Technique(BaseModel):
    """One technique: when it helps, what goes wrong, its prior mean log-speedup per bottleneck."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tag: str = Field(pattern=r"^[a-z0-9]+(-[a-z0-9]+)*$")
    name: str
    when: str
    pitfalls: str
    helps: tuple[Bottleneck, ...]
    prior: dict[Bottleneck, float]
    requires: tuple[str, ...] = ()
    # Offered only where it can apply: the kernel's source matches `needs` (a regex), and the
    # task's op class is one of `ops` (empty: any). "Fewer atomics" for a kernel with none
    # would waste a candidate.
    needs: str = ""
    ops: tuple[str, ...] = ()

    def applies(self, source: str, op: str) -> bool:
        """Whether this technique can apply to a kernel with this source and op class."""
        if self.ops and op not in self.ops:
            return False
        return not self.needs or re.search(self.needs, source) is not None

    def prior_for(self, bottleneck: str) -> float:
        """The prior for a bottleneck class; the mean over classes when it is unknown."""
        if bottleneck in self.prior:
            return self.prior[bottleneck]
        return sum(self.prior.values()) / len(self.prior) if self.prior else 0.0


@cache
def catalogue() -> dict[str, Technique]:
    """All techniques by tag, read once from the package data."""
    text = resources.files("kernelwright.memory").joinpath("techniques.yaml").read_text()
    items = [Technique.model_validate(raw) for raw in yaml.safe_load(text)["techniques"]]
    found = {t.tag: t for t in items}
    if len(found) != len(items):
        raise ValueError("techniques.yaml repeats a tag")
    return found


def technique(tag: str) -> Technique:
    """The technique with this tag (KeyError if the catalogue has none)."""
    return catalogue()[tag]


def _loose(text: str) -> str:
    """Lower case, words joined by "-", a plural "s" dropped: "Grid-stride loops" and
    "grid_stride_loop" read the same."""
    words = re.findall(r"[a-z0-9]+", text.lower())
    return "-".join(w[:-1] if len(w) > 3 and w.endswith("s") else w for w in words)


@cache
def _by_spelling() -> dict[str, str]:
    found: dict[str, str] = {}
    for t in catalogue().values():
        found.setdefault(_loose(t.name), t.tag)
    for t in catalogue().values():
        found[_loose(t.tag)] = t.tag  # a tag wins over another technique's name
    return found


def resolve(tag: str) -> str | None:
    """The catalogue tag that a model's tag means: the tag or the technique's name, however
    spelled (case, spaces, underscores, plural); None when the catalogue has no such one."""
    if tag in catalogue():
        return tag
    return _by_spelling().get(_loose(tag))
