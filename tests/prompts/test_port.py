"""The port prompt (prompts/port.yaml): a C++ task's first proposals, before any optimization,
rendered with real tasks against snapshots (tests/prompts/snapshots/port_*.txt; refresh with
KW_UPDATE_SNAPSHOTS=1), and rendered for every example (a missing variable fails loudly)."""

from __future__ import annotations

from typing import Any

import pytest

from kernelwright.agent.kinds import kind_of
from kernelwright.tools.cpp import CppTask
from kernelwright.tools.results import Attempt
from tests.prompts.test_render import assert_snapshot
from tests.tools.test_cpp_examples import NAMES, example


def _prompt(task: CppTask, **values: Any) -> list[dict[str, str]]:
    state = {"best_source": task.source, "best_index": 0}
    given = {"attempts": [], "max_attempts": 8, "repair": None, "technique": None}
    return kind_of(task).prompt(task, state, {**given, **values}, task.launch.model_dump())


def test_the_first_port() -> None:
    assert_snapshot("port_first", _prompt(example("histogram")))


def test_a_port_again_after_a_slow_one_and_a_wrong_one() -> None:
    task = example("minmax")
    slow = Attempt(index=1, parent=0, source="", verdict="correct", reason="ok", speedup=0.4)
    wrong = Attempt(
        index=2, parent=0, source="", verdict="wrong", reason="output 'lo' wrong at 1 of 1"
    )
    assert_snapshot("port_again", _prompt(task, attempts=[slow, wrong]))


def test_a_port_that_did_not_compile() -> None:
    repair = {"source": 'extern "C" __global__ void gemv(...) { oops }\n', "log": "error: oops"}
    assert_snapshot("port_repair", _prompt(example("gemv"), repair=repair))


@pytest.mark.parametrize("name", NAMES)
def test_every_example_renders(name: str) -> None:
    system, user = _prompt(example(name))
    assert "port" in system["content"] and "Device code only" in system["content"]
    text = user["content"]
    task = example(name)
    signature = ", ".join(a.name for a in task.kernel_args)
    assert f'extern "C" __global__ void {task.function}({signature})' in text
    assert task.source.strip() in text
