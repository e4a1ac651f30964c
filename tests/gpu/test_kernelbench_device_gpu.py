"""KernelBench trials compared on the GPU, for real, through the CLI as a user runs it: a
problem whose output is 2 GiB (4 GiB in float64) checks without its outputs crossing the host,
a candidate wrong only above the problem's batch is caught there, and a bfloat16 output is
compared as its float32 widening."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.gpu

PROBLEM = """
import torch
import torch.nn as nn

batch_size = {batch}
dim = {dim}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return {body}


def get_inputs():
    return [torch.rand(batch_size, dim) - 0.5]


def get_init_inputs():
    return []
"""

CANDIDATE = """
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        {body}
"""


CLI = "import sys; from kernelwright.agent.doors.cli import main; sys.argv[0] = 'kw'; main()"


def _check(tmp_path: Path, problem: str, candidate: str) -> dict[str, Any]:
    (tmp_path / "problem.py").write_text(problem)
    (tmp_path / "candidate.py").write_text(candidate)
    done = subprocess.run(
        [sys.executable, "-c", CLI, "check", str(tmp_path / "problem.py"),
         str(tmp_path / "candidate.py"), "--json", "--no-profile"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.stdout.strip(), done.stderr[-2000:]
    return json.loads(done.stdout)


def test_a_2_gib_output_is_checked_without_crossing_the_host(tmp_path: Path) -> None:
    gib = 1 << 30
    problem = PROBLEM.format(batch=512, dim=1 << 20, body="torch.relu(x)")
    report = _check(tmp_path, problem, CANDIDATE.format(body="return torch.relu(x)"))
    assert report["verdict"] == "correct", report["reason"]
    trials = report["check"]["trials"]
    assert trials and all(t["on_gpu"] for t in trials)
    assert {t["phase"] for t in trials} == {"check", "post-timing"}
    # the float64 expected output alone is 4 GiB, the candidate's 2 GiB: neither was held
    peaks = report["peak_host_bytes"]
    assert peaks["controller"] < 1.5 * gib, peaks
    assert all(v < 6 * gib for v in peaks.values()), peaks
    assert 0.9 < report["timing"]["speedup"] < 1.1


def test_wrong_only_above_the_problems_batch_is_caught_on_the_gpu(tmp_path: Path) -> None:
    problem = PROBLEM.format(batch=64, dim=1 << 16, body="torch.relu(x)")
    body = (
        "y = torch.relu(x)\n        if x.shape[0] > batch_size_seen(x):\n"
        "            y[-1, -1] += 1.0\n        return y"
    )
    candidate = CANDIDATE.format(body=body).replace(
        "class ModelNew", "def batch_size_seen(x):\n    return 64\n\n\nclass ModelNew"
    )
    report = _check(tmp_path, problem, candidate)
    assert report["verdict"] == "wrong", report["reason"]
    assert report["reason"].startswith("output 'output 0' wrong at 1 of "), report["reason"]
    last = report["check"]["trials"][-1]
    assert last["on_gpu"] and not last["ok"] and last["sizes"]["batch_size"] > 64


def test_a_bfloat16_output_is_compared_on_the_gpu(tmp_path: Path) -> None:
    problem = PROBLEM.format(batch=64, dim=4096, body="torch.relu(x.bfloat16())")
    ok = _check(tmp_path, problem, CANDIDATE.format(body="return torch.relu(x.bfloat16())"))
    assert ok["verdict"] == "correct", ok["reason"]
    assert all(t["on_gpu"] for t in ok["check"]["trials"])
    off = _check(tmp_path, problem, CANDIDATE.format(body="return torch.relu(x).bfloat16() * 1.5"))
    assert off["verdict"] == "wrong" and "output 'output 0' wrong at" in off["reason"], off


def test_a_trials_inputs_are_drawn_on_the_gpu_alike_in_two_runners(tmp_path: Path) -> None:
    """Two workers' runners make the same trial inputs from the same seed, drawn by the CUDA
    generator (a 1 GiB input costs no host memory and no CPU draw), at a held-out batch too."""
    import torch

    from kernelwright.tools.runners import TorchRunner

    path = tmp_path / "problem.py"
    path.write_text(PROBLEM.format(batch=256, dim=1 << 20, body="torch.relu(x)"))
    one, two = (TorchRunner(str(path), None, "Model") for _ in range(2))
    for sizes in ({}, {"batch_size": 300}):
        a, b = one.inputs(7, sizes)[0], two.inputs(7, sizes)[0]
        assert a.is_cuda and a.shape == (sizes.get("batch_size", 256), 1 << 20)
        assert torch.equal(a, b)
        torch.cuda.manual_seed_all(8)  # inputs(seed) draws under seed + 1, as before
        assert torch.equal(a, torch.rand(a.shape, device="cuda") - 0.5)
        del a, b
    assert not torch.equal(one.inputs(7, {})[0], one.inputs(9, {})[0])
