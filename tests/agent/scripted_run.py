"""One `optimize` run in a process of its own, with scripted replies standing in for the model:
the task's candidates/wrong.cu, then candidates/faster.cu, each followed by a one-line
explanation. What the loop sent and got goes to a JSON file for the test that started it.

    python -m tests.agent.scripted_run TASK_DIR DATA_DIR OUT_JSON [--gpu]

Without --gpu the verdicts come from ReplayGpu (wrong: rejected; faster: SPEEDUPS[task]); with
--gpu the real verifier measures them. Settings come from the environment the test sets.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from kernelwright.agent.llm import ScriptedLLM
from kernelwright.agent.nodes.common import as_candidate
from kernelwright.agent.optimize import optimize
from kernelwright.agent.replies import parse_proposal
from kernelwright.agent.settings import load
from kernelwright.tools.backend import ReplayGpu
from kernelwright.tools.spec import CudaTask
from kernelwright.tools.task import load_task, reference_candidate
from tests.conftest import proposed_launch

SPEEDUPS = {"softmax": 40.0, "rowsum": 6.0, "gelu": 1.3}
TAGS = {"wrong": ["vector-access-16b"], "faster": ["warp-shuffle"]}


def reply(path: Path, tags: list[str]) -> str:
    meta: dict[str, Any] = {"tags": tags, "rationale": "hand-written"}
    if (launch := proposed_launch(path)) is not None:
        meta["launch"] = launch
    return f"```cuda\n{path.read_text()}\n```\n```json\n{json.dumps(meta)}\n```\n"


def script(task_dir: Path) -> list[str]:
    return [
        reply(task_dir / "candidates" / "wrong.cu", TAGS["wrong"]),
        "It is wrong.",
        reply(task_dir / "candidates" / "faster.cu", TAGS["faster"]),
        "It is faster.",
    ]


def replay(task: CudaTask, replies: list[str]) -> ReplayGpu:
    from tests.agent.test_graph import report

    gpu = ReplayGpu()
    gpu.add(task, reference_candidate(task), report(task, "correct", 1.0))
    wrong, faster = (parse_proposal(replies[i], task.entry) for i in (0, 2))
    gpu.add(
        task,
        as_candidate(task, wrong.source, None),
        report(task, "wrong", None, "output 'y' wrong at 7 of 4,096 elements"),
    )
    gpu.add(
        task,
        as_candidate(task, faster.source, faster.launch),
        report(task, "correct", SPEEDUPS[task.name]),
    )
    return gpu


def main(argv: list[str]) -> None:
    task_dir, data_dir, out_file = Path(argv[0]), Path(argv[1]), Path(argv[2])
    task = load_task(task_dir)
    assert isinstance(task, CudaTask)
    replies = script(task_dir)
    model = ScriptedLLM(replies)
    events: list[str] = []
    on_gpu = "--gpu" in argv
    output, run = optimize(
        task_dir,
        load(data_dir=data_dir),
        model=model,
        gpu=None if on_gpu else replay(task, replies),
        arch=None if on_gpu else "sm_90",
        budget=2,
        plateau=5,
        tune=False,  # the loop only: a replay has no checks for the tune's configurations
        progress=lambda e: events.append(str(e.get("message", ""))),
    )
    result = {
        "prompts": model.prompts,
        "events": events,
        "attempts": [a.model_dump(mode="json") for a in output["attempts"]],
        "choices": [c.model_dump(mode="json") for c in output.get("choices", [])],
        "best_speedup": output["best_speedup"],
        "run_dir": str(run.path),
    }
    out_file.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main(sys.argv[1:])
