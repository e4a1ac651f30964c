"""Stand-ins for the model and the GPU, for tests of the doors that run as separate processes
(the chat in a terminal, the MCP server over stdio or HTTP): the hidden `--test-stand-ins FILE`
option of `kernelwright chat` and `kernelwright mcp` builds them. Never used otherwise."""

from __future__ import annotations

import json
import time
from collections import deque
from pathlib import Path
from typing import Any

from kernelwright.agent.doors.jobs import DoorError, Machine
from kernelwright.agent.llm import Message, ScriptedLLM
from kernelwright.agent.settings import Settings
from kernelwright.tools.backend import GpuBackend, ReplayGpu


class ScriptedStandIn(ScriptedLLM):
    """ScriptedLLM whose replies may wait before answering (so a test can stop a run midway),
    and which appends every request it gets to a JSONL file (so a test can read them)."""

    def __init__(self, replies: list[str | dict[str, Any]], log: Path | None = None) -> None:
        super().__init__()
        self.script: deque[dict[str, Any]] = deque(
            r if isinstance(r, dict) else {"text": r} for r in replies
        )
        self.replies.extend(str(r["text"]) for r in self.script)
        self.log = log

    def complete(self, messages: list[Message]) -> str:
        if self.log is not None:
            with self.log.open("a") as f:
                f.write(json.dumps(messages) + "\n")
        delay = float(self.script[0].get("delay_s", 0.0)) if self.script else 0.0
        time.sleep(delay)  # a Ctrl-C lands here, before the reply is used
        if self.script:
            self.script.popleft()
        return super().complete(messages)


def machine_with_stand_ins(settings: Settings, path: Path) -> Machine:
    """A Machine whose model is a scripted stand-in and, when the file names a recording, whose
    GPU answers from it (ReplayGpu). The file is JSON:
    {"replies": [text or {"text", "delay_s"}], "replay": "gpu.jsonl", "arch": "sm_90",
     "prompts_log": "prompts.jsonl"}; relative paths are taken from the file's directory."""
    try:
        spec = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise DoorError(f"{path}: cannot read the test stand-ins: {exc}") from None
    here = path.parent
    log = here / spec["prompts_log"] if spec.get("prompts_log") else None
    model = ScriptedStandIn(spec.get("replies", []), log)
    gpu: GpuBackend | None = None
    note = "replies come from a scripted stand-in (testing only)"
    if spec.get("replay"):
        gpu = ReplayGpu.from_file(here / spec["replay"])
        note += "; GPU reports are replayed from a recording"
    return Machine(settings, gpu=gpu, model=model, arch=spec.get("arch"), stand_in_note=note)
