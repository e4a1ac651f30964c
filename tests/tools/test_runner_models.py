"""How a KernelBench runner builds its models (TorchRunner, no GPU): which trials a model (or
its host copy) serves, read from what the problem's code reads. A stand-in torch module stands
for PyTorch's generators; the problems' models are plain classes that count their builds."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest

from kernelwright.tools import runners

PLAIN = """
batch_size = 8
dim = 16
built = []


class Model:
    def __init__(self, n):
        built.append(n)
        self.n, self.on, self.precision = n, "cpu", "native"{extra}

    def cuda(self):
        self.on = "gpu"
        return self

    def eval(self):
        return self

    def double(self):
        self.precision = "float64"
        return self

    def forward(self, x):
        return x * batch_size


def get_inputs():
    return [batch_size, dim]


def get_init_inputs():
    return {init}
"""


def _problem(tmp_path: Path, extra: str = "", init: str = "[dim]") -> str:
    path = tmp_path / "problem.py"
    path.write_text(PLAIN.format(extra=extra, init=init))
    return str(path)


@pytest.fixture
def fake_torch(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """torch's generators as a list of every seed and state set."""
    events: list[Any] = []
    state = {"n": 0}

    def seed(s: int) -> None:
        events.append(("seed", s))
        state["n"] = s

    torch = types.ModuleType("torch")
    torch.default_generator = types.SimpleNamespace(manual_seed=seed)  # type: ignore[attr-defined]
    torch.get_rng_state = lambda: ("cpu", state["n"])  # type: ignore[attr-defined]
    torch.set_rng_state = lambda s: events.append(("state", s))  # type: ignore[attr-defined]
    torch.cuda = types.SimpleNamespace(  # type: ignore[attr-defined]
        manual_seed_all=lambda s: None,
        get_rng_state_all=lambda: [("gpu", state["n"])],
        set_rng_state_all=lambda s: None,
    )
    monkeypatch.setitem(sys.modules, "torch", torch)
    return events


def test_the_names_a_problems_code_reads_leave_out_its_input_makers(tmp_path: Path) -> None:
    """What building may read: the names in its functions and classes, not in get_inputs or
    get_init_inputs (the key holds their values), nor the top-level assignments of the sizes;
    None for a file that cannot be read or parsed."""
    read = runners.names_read([_problem(tmp_path)])
    assert read is not None and "built" in read and "append" in read
    assert "batch_size" in read  # forward reads it: conservative, it counts
    path = tmp_path / "p2.py"
    path.write_text(PLAIN.format(extra="", init="[dim]").replace("x * batch_size", "x"))
    read = runners.names_read([str(path)])
    assert read is not None and "batch_size" not in read and "dim" not in read
    assert runners.names_read([str(tmp_path / "missing.py")]) is None
    (tmp_path / "bad.py").write_text("def f(:\n")
    assert runners.names_read([str(path), str(tmp_path / "bad.py")]) is None


@pytest.mark.parametrize(
    ("value", "plain"),
    [
        ([3, 2.5, "x", None, True], True),
        ((1, (2, 3)), True),
        ([object()], False),
        ({"a": 1}, False),
    ],
)
def test_only_plain_init_inputs_make_a_construction_key(value: Any, plain: bool) -> None:
    assert (runners._plain(value) is not None) is plain


def test_sizes_that_only_the_inputs_read_build_the_same_model(
    tmp_path: Path, fake_torch: list[Any]
) -> None:
    """The construction key: the seed, get_init_inputs()'s values and the sizes the code reads
    outside the input makers, each as a trial's sizes set them. A batch size only get_inputs
    reads changes nothing; a size __init__ reads, or one get_init_inputs passes on, does."""
    path = tmp_path / "p.py"
    path.write_text(PLAIN.format(extra="", init="[dim]").replace("x * batch_size", "x"))
    r = runners.TorchRunner(str(path), None, "Model")
    base = r.construction(5, {})
    assert r.construction(5, {"batch_size": 3}) == base
    assert r.construction(6, {"batch_size": 3}) != base
    assert r.construction(5, {"dim": 4}) != base  # get_init_inputs passes it on
    assert r.construction(5, {}) == base  # the defaults again, whatever came before
    reads = runners.TorchRunner(_problem(tmp_path, extra="\n        self.b = batch_size"), None,
                                "Model")  # fmt: skip
    assert reads.construction(5, {"batch_size": 3}) != reads.construction(5, {})
    odd = runners.TorchRunner(_problem(tmp_path, init="[object()]"), None, "Model")
    assert odd.construction(5, {}) == (5, "sizes", ())  # not plain: the sizes are the key


def test_a_host_copy_serves_every_build_of_the_same_construction(
    tmp_path: Path, fake_torch: list[Any]
) -> None:
    """build(twin=True) keeps a copy of the model as built; a later build of the same
    construction, any sizes and either precision, is a fresh copy of it, with the generators
    set to the states the build left (no second construction); forget() drops the models kept
    on the GPU, not the copy; another construction builds."""
    path = tmp_path / "p.py"
    path.write_text(PLAIN.format(extra="", init="[dim]").replace("x * batch_size", "x"))
    r = runners.TorchRunner(str(path), None, "Model")
    built = r.problem.built
    one = r.build(5, {}, keep=True, twin=True)
    assert built == [16] and one.on == "gpu" and ("seed", 5) in fake_torch
    fake_torch.clear()
    other = r.build(5, {"batch_size": 3}, keep=True)
    assert built == [16] and other is not one and other.on == "gpu"
    assert ("state", ("cpu", 5)) in fake_torch and ("seed", 5) not in fake_torch
    wide = r.build(5, {"batch_size": 3}, float64=True, keep=True)
    assert built == [16] and wide.precision == "float64" and one.precision == "native"
    assert r.build(5, {"batch_size": 3}, keep=True) is other  # kept per sizes (no share)
    r.forget()
    again = r.build(5, {}, keep=True)
    assert built == [16] and again is not one
    r.build(5, {"dim": 4})
    assert built == [16, 4]


def test_a_shared_runner_keeps_one_model_for_every_sizes_of_one_construction(
    tmp_path: Path, fake_torch: list[Any]
) -> None:
    """share=True (the reference's Model): the model kept for one trial is the one every trial
    of the same construction gets, one for each precision; a size the construction reads gets
    its own."""
    path = tmp_path / "p.py"
    path.write_text(PLAIN.format(extra="", init="[dim]").replace("x * batch_size", "x"))
    r = runners.TorchRunner(str(path), None, "Model", share=True)
    one = r.build(5, {}, keep=True, twin=True)
    assert r.build(5, {"batch_size": 3}, keep=True) is one
    wide = r.build(5, {"batch_size": 3}, float64=True, keep=True)
    assert r.build(5, {}, float64=True, keep=True) is wide and wide is not one
    assert r.build(5, {"dim": 4}, keep=True) is not one
    assert r.problem.built == [16, 4]


def test_the_timings_model_drawn_ahead_is_copied_by_its_build(
    tmp_path: Path, fake_torch: list[Any]
) -> None:
    """prepare(seed) draws the model at the problem's own sizes and keeps it as a host copy;
    the timing's build of it copies it (no second construction); a second prepare does
    nothing."""
    path = tmp_path / "p.py"
    path.write_text(PLAIN.format(extra="", init="[dim]").replace("x * batch_size", "x"))
    r = runners.TorchRunner(str(path), None, "Model")
    r.prepare(9)
    r.prepare(9)
    assert r.problem.built == [16]
    model = r.build(9, {})
    assert r.problem.built == [16] and model.on == "gpu"
    r.build(10, {})
    assert r.problem.built == [16, 16]
