"""Which sizes, seeds and poisons the verifier checks a candidate with."""

from __future__ import annotations

import random

import numpy as np
import pytest

from kernelwright.tools.correctness import poison_bits, unwritten
from kernelwright.tools.spec import CudaTask
from kernelwright.tools.task import load_task
from kernelwright.tools.verify import held_out_sizes, plan_trials
from tests.conftest import EXAMPLES

TASKS = ["gelu", "rowsum", "softmax", "matmul", "stencil", "transpose"]


def _is_nan32(bits: int) -> bool:
    pattern = np.array([poison_bits("float32", bits)], dtype=np.uint32)
    return bool(np.isnan(pattern.view(np.float32))[0])


@pytest.mark.parametrize("name", TASKS)
@pytest.mark.parametrize("seed", range(10))
def test_plan_for_examples(name: str, seed: int) -> None:
    task = load_task(EXAMPLES / name)
    assert isinstance(task, CudaTask)
    trials, post = plan_trials(task, random.Random(seed))
    assert len(trials) >= 5
    # Before timing, only sizes smaller than the bench size; the bench size is the post trial.
    assert all(t.sizes != task.bench for t in trials)
    assert len({tuple(sorted(t.sizes.items())) for t in trials}) >= 2
    held = [t for t in trials if t.held_out]
    assert len(held) == 1
    assert held[0].sizes != task.bench and held[0].sizes not in task.checks
    assert set(held[0].sizes) == set(task.bench)
    seeds = [t.seed for t in (*trials, post)]
    assert len(set(seeds)) == len(seeds)
    for t in trials:  # the correctness trials: two runs with different poison
        assert len(t.poisons) == 2
        assert poison_bits("float32", t.poisons[0]) != poison_bits("float32", t.poisons[1])
        assert _is_nan32(t.poisons[0]) and not _is_nan32(t.poisons[1])
    assert post.sizes == task.bench and not post.held_out and len(post.poisons) == 1


def test_held_out_sizes_respect_multiple_of() -> None:
    task = load_task(EXAMPLES / "gelu")
    assert isinstance(task, CudaTask)
    task = task.model_copy(update={"multiple_of": {"N": 4}, "checks": ({"N": 1000}, {"N": 65536})})
    for seed in range(50):
        sizes = held_out_sizes(task, random.Random(seed))
        assert sizes["N"] % 4 == 0
        assert sizes["N"] not in (1000, 65536, task.bench["N"])


def test_kernelbench_held_out_changes_batch_size() -> None:
    task = load_task(EXAMPLES / "kernelbench" / "relu_mlp.py")
    for seed in range(10):
        trials, post = plan_trials(task, random.Random(seed))
        held = [t for t in trials if t.held_out]
        assert len(held) == 1
        assert set(held[0].sizes) == {"batch_size"} and held[0].sizes["batch_size"] != 128
        assert post.sizes == {} and all(t.sizes == {} for t in trials if not t.held_out)


def test_two_poisons_differ_for_8_bit_outputs() -> None:
    task = load_task(EXAMPLES / "gelu")
    trials, _ = plan_trials(task, random.Random(49))  # a seed where the low bytes collide
    poisons = list(trials[4].poisons)
    # a kernel that wrote every element, each with the value 0x30, in both runs
    written = [np.full(16, 0x30, dtype=np.uint8), np.full(16, 0x30, dtype=np.uint8)]
    assert unwritten("y", written, poisons) == ""
