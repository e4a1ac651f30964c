"""The shipped worked examples: a pair for every catalogue technique that applies to the example
tasks (and a reason for each other one), real kernels of those tasks that compile, and an index
that never claims what was not measured."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kernelwright.memory import shipped as shipped_set
from kernelwright.memory.shipped import ShippedIndexError, read_index, source, write_index
from kernelwright.memory.signature import op_class, task_signature
from kernelwright.memory.techniques import catalogue
from kernelwright.tools.compile import compile_nvrtc
from kernelwright.tools.spec import CudaTask, check_signature
from kernelwright.tools.task import load_candidate, load_task
from tests.conftest import EXAMPLES

INDEX = read_index()
CUDA = [p for p in INDEX.pairs if p.kind == "cuda"]


def test_every_technique_has_a_pair_or_a_reason() -> None:
    paired = {p.technique for p in INDEX.pairs}
    assert paired | set(INDEX.not_shipped) == set(catalogue())
    assert not paired & set(INDEX.not_shipped)
    assert all(len(why) > 40 for why in INDEX.not_shipped.values())
    tasks = {p.task for p in INDEX.pairs}
    assert {"gelu", "softmax", "rowsum", "matmul", "transpose", "stencil"} <= tasks
    assert any(p.kind == "kernelbench" for p in INDEX.pairs)


@pytest.mark.parametrize("pair", INDEX.pairs, ids=lambda p: p.name)
def test_a_pair_is_of_its_example_task(pair: shipped_set.ShippedPair) -> None:
    task = load_task(EXAMPLES / pair.task)
    assert task.kind == pair.kind
    assert (task_signature(task), op_class(task)) == (pair.task_signature, pair.op_class)
    before = source(pair, pair.before)
    assert catalogue()[pair.technique].applies(before, pair.op_class)
    assert source(pair, pair.after) != before or pair.before.launch != pair.after.launch
    if pair.before.file.endswith(("_naive.cu", ".py")):  # the example's own kernel, copied
        assert before == task.source
    if isinstance(task, CudaTask):
        for side in (pair.before, pair.after):
            check_signature(
                Path(side.file), source(pair, side), task.entry, task.args, Path(task.path)
            )
    else:
        assert load_candidate(task, shipped_set.index_path().parent / pair.after.file)


@pytest.mark.parametrize("pair", CUDA, ids=lambda p: p.name)
def test_every_kernel_compiles_without_spills(nvrtc: None, pair: shipped_set.ShippedPair) -> None:
    for side in (pair.before, pair.after):
        task = load_task(EXAMPLES / pair.task)
        assert isinstance(task, CudaTask)
        result, cubin = compile_nvrtc(source(pair, side), task.entry, "sm_90", side.file)
        assert result.ok, result.log
        assert cubin and result.spill_stores_bytes == 0 and result.spill_loads_bytes == 0


def test_what_was_not_measured_claims_nothing() -> None:
    shown = {e.id: e for e in shipped_set.shipped()}
    for pair in INDEX.pairs:
        if not pair.measured:
            assert shown[pair.name].speedup is None and shown[pair.name].gpu == ""
        elif pair.verdict == "correct":
            assert shown[pair.name].speedup == pair.speedup and shown[pair.name].gpu == pair.gpu
        else:
            assert pair.name not in shown


UNMEASURED = {
    "measured": False,
    "verdict": "",
    "speedup": None,
    "gpu": "",
    "arch": "",
    "measured_on": "",
}


def copy_of_the_set(tmp_path: Path) -> Path:
    folder = tmp_path / "examples"
    shutil.copytree(shipped_set.index_path().parent, folder)
    return folder / "index.yaml"


def test_a_pair_measured_wrong_is_never_shown(tmp_path: Path) -> None:
    path = copy_of_the_set(tmp_path)
    first = INDEX.pairs[0]
    wrong = first.model_copy(
        update=dict(
            measured=True,
            verdict="after wrong: output 'y' wrong at 3 of 1,000 elements",
            speedup=None,
            gpu="NVIDIA H100 80GB HBM3",
            arch="sm_90",
            measured_on="2026-11-24",
        )
    )
    index = INDEX.model_copy(update={"pairs": (wrong, *INDEX.pairs[1:])})
    write_index(index, path)
    again = read_index(path)
    assert again == index and not again.pairs[0].shown and again.pairs[1].shown


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"speedup": 1.5}, "not measured, yet it has a verdict, speedup, gpu or arch"),
        ({"measured": True, "verdict": "correct"}, "measured: needs its verdict, gpu and arch"),
        (
            {"measured": True, "verdict": "correct", "gpu": "H100", "arch": "sm_90"},
            "a correct measured pair needs a positive speedup",
        ),
        ({"technique": "magic"}, "technique: 'magic' is not in the catalogue"),
        ({"after": {"file": "gone.cu"}}, "no file gone.cu beside the index"),
    ],
)
def test_a_bad_index_is_one_line_naming_the_pair(
    tmp_path: Path, change: dict[str, object], problem: str
) -> None:
    import yaml

    path = copy_of_the_set(tmp_path)
    raw = yaml.safe_load(path.read_text())
    raw["pairs"][1].update(UNMEASURED | change)
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(ShippedIndexError) as info:
        read_index(path)
    text = str(info.value)
    assert "\n" not in text and problem in text and INDEX.pairs[1].name in text
