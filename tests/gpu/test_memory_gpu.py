"""The memory across runs on a real GPU: two `optimize` runs on related example tasks, each in a
process of its own, with scripted replies standing in for the model (the GPU machine has no
Ollama). The second run's first prompt carries contrastive pairs measured by the first, and
`kernelwright memory stats` shows what both left."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kernelwright.agent.doors.cli_memory import memory_app
from tests.conftest import EXAMPLES, ROOT

pytestmark = pytest.mark.gpu


def test_the_second_run_starts_from_what_the_first_measured(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELWRIGHT_")}
    env["KERNELWRIGHT_CONFIG"] = os.devnull
    data = tmp_path / "data"

    def scripted(task: str) -> dict[str, Any]:
        out = tmp_path / f"{task}.json"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "tests.agent.scripted_run",
                str(EXAMPLES / task),
                str(data),
                str(out),
                "--gpu",
            ],
            cwd=ROOT,
            env=env,
            check=True,
            timeout=900,
        )
        return json.loads(out.read_text())

    first = scripted("softmax")
    wrong, faster = first["attempts"]
    assert wrong["verdict"] == "wrong" and not wrong["kept"]
    assert faster["verdict"] == "correct" and faster["kept"] and faster["speedup"] > 1.5

    second = scripted("rowsum")  # a new process: only the memory directory connects them
    assert [a["verdict"] for a in second["attempts"]] == ["wrong", "correct"]
    prompt = second["prompts"][0][1]["content"]  # rowsum's very first proposal
    assert "## Related attempts measured on this GPU" in prompt
    assert "an earlier run on softmax(f32[M,N])->f32[M,N]), faster (" in prompt
    assert f"faster ({faster['speedup']:.2f}x its original)" in prompt
    softmax = EXAMPLES / "softmax" / "candidates"
    assert (softmax / "faster.cu").read_text().rstrip() in prompt
    assert (softmax / "wrong.cu").read_text().rstrip() in prompt
    assert "rejected: wrong: " in prompt
    assert any(m.startswith("search: ") for m in second["events"])

    result = CliRunner().invoke(
        memory_app,
        ["stats", "--json"],
        env={"KERNELWRIGHT_DATA_DIR": str(data), "KERNELWRIGHT_CONFIG": env["KERNELWRIGHT_CONFIG"]},
    )
    assert result.exit_code == 0, result.output
    stats = json.loads(result.stdout)
    assert stats["total"] == 4 and stats["by_verdict"]["wrong"] == 2
    assert set(stats["by_task"]) == {"softmax(f32[M,N])->f32[M,N]", "rowsum(f32[M,N])->f32[M]"}
    assert stats["by_tag"]["warp-shuffle"]["correct"] == 2
    assert {row["technique"] for row in stats["search"]} >= {"warp-shuffle", "vector-access-16b"}
    table = CliRunner().invoke(
        memory_app,
        ["stats"],
        env={"KERNELWRIGHT_DATA_DIR": str(data), "KERNELWRIGHT_CONFIG": env["KERNELWRIGHT_CONFIG"]},
    )
    print(table.stdout)
    print(f"softmax kept {faster['speedup']:.2f}x; rowsum: {second['attempts'][1]['speedup']}")
