"""The technique catalogue: complete, consistent, and loaded from package data."""

from __future__ import annotations

from importlib import resources

import pytest
import yaml

from kernelwright.memory.techniques import BOTTLENECKS, catalogue, technique

ISSUE_TAGS = {
    "coalescing",
    "vector-access-16b",
    "smem-tiling",
    "register-tiling",
    "thread-coarsening",
    "warp-shuffle",
    "unroll",
    "launch-bounds",
    "restrict-readonly",
    "fast-math",
    "fusion",
    "bank-conflict-padding",
    "tensor-cores",
    "async-copy",
    "grid-stride",
    "fewer-atomics",
    "layout-change",
}


def test_catalogue_has_at_least_20_techniques_with_the_issues_tags() -> None:
    assert len(catalogue()) >= 20
    assert set(catalogue()) >= ISSUE_TAGS


def test_tags_are_unique_in_the_yaml() -> None:
    text = resources.files("kernelwright.memory").joinpath("techniques.yaml").read_text()
    tags = [raw["tag"] for raw in yaml.safe_load(text)["techniques"]]
    assert len(tags) == len(set(tags)) == len(catalogue())


@pytest.mark.parametrize("tag", sorted(catalogue()))
def test_every_technique_is_complete(tag: str) -> None:
    t = technique(tag)
    assert t.tag == tag
    assert t.name and t.when and t.pitfalls
    assert t.helps and set(t.helps) <= set(BOTTLENECKS)
    assert set(t.prior) == set(BOTTLENECKS)
    assert all(0.0 <= value <= 0.5 for value in t.prior.values())
    assert set(t.requires) <= set(catalogue()) - {tag}


def test_prior_for_an_unknown_bottleneck_is_the_mean() -> None:
    t = technique("coalescing")
    assert t.prior_for("memory-bound") == t.prior["memory-bound"]
    assert t.prior_for("unknown") == pytest.approx(sum(t.prior.values()) / 3)


def test_unknown_tag_raises() -> None:
    with pytest.raises(KeyError):
        technique("make-it-fast")


@pytest.mark.parametrize(
    ("said", "tag"),
    [
        ("warp-shuffle", "warp-shuffle"),
        ("16-byte vector loads and stores", "vector-access-16b"),
        ("Grid-stride loop", "grid-stride"),
        ("loop unrolling", "unroll"),
        ("FAST_MATH", "fast-math"),
        ("block-per-row", None),
        ("", None),
    ],
)
def test_a_models_tag_resolves_to_the_catalogue(said: str, tag: str | None) -> None:
    from kernelwright.memory.techniques import resolve

    assert resolve(said) == tag


def test_a_technique_is_offered_only_where_it_can_apply() -> None:
    atomics, shuffle, cores = (
        technique(t) for t in ("fewer-atomics", "warp-shuffle", "tensor-cores")
    )
    assert not atomics.applies("y[i] = x[i] * 2.0f;", "reduction")
    assert atomics.applies("atomicAdd(&out[row], v);", "reduction")
    assert shuffle.applies("", "reduction") and not shuffle.applies("", "elementwise")
    assert cores.applies("", "gemm") and not cores.applies("", "transpose")
    assert technique("coalescing").applies("", "elementwise")  # no condition: always offered
