"""What the nodes use but the state does not hold: live objects, passed as LangGraph's runtime
context (never globals, never checkpointed)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kernelwright.agent.llm import ChatModel
from kernelwright.agent.rundir import RunDir
from kernelwright.memory.graph_file import SavedGraph
from kernelwright.memory.store import EpisodeStore
from kernelwright.tools.backend import GpuBackend
from kernelwright.tools.builds import BuildCache
from kernelwright.tools.task import Task

Progress = Callable[[dict[str, Any]], None]


@dataclass
class LoopContext:
    task: Task
    model: ChatModel
    gpu: GpuBackend
    run: RunDir
    arch: str = "sm_90"  # what candidates compile for
    compile_backend: str = "nvrtc"
    progress: Progress = field(default=lambda event: None)
    history: int = 8  # earlier attempts shown to the model
    # The memory (None: off): every measured attempt goes into the store; the reasoning graph,
    # saved beside it, picks each candidate's technique and learns from its measurement.
    store: EpisodeStore | None = None
    graph: SavedGraph | None = None
    pairs: int = 3  # contrastive pairs at most in a propose prompt
    pair_chars: int = 12_000  # and the characters they may take
    # where the compile node keeps what it built, so the verifier does not build it again
    builds: BuildCache | None = None

    @property
    def run_id(self) -> str:
        return self.run.path.name
