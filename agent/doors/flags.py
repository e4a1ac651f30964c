"""The command-line flags the commands share: the loop's on `optimize` and `batch` (there, per
task), the model on every door that runs the loop, the compiler on `check`, `optimize` and
`batch`."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer


class Backend(StrEnum):
    """The compile backends a flag may name."""

    nvrtc = "nvrtc"
    nvcc = "nvcc"


Minutes = Annotated[float, typer.Option(min=0.1, help="Wall time budget in minutes.")]
Plateau = Annotated[
    int, typer.Option(min=1, help="Stop after this many candidates without a 2% gain.")
]
NoMemory = Annotated[bool, typer.Option("--no-memory", help="Neither read nor write the memory.")]
NoTune = Annotated[
    bool,
    typer.Option(
        "--no-tune",
        help="Leave the best kernel untuned (by default its knobs, block shape and compile "
        "options are searched when the loop ends: kernelwright tune).",
    ),
]
ModelFlag = Annotated[str | None, typer.Option(help="Ollama model (default: qwen2.5-coder:7b).")]
BackendFlag = Annotated[
    Backend | None, typer.Option(help="Compiler (default: the setting, nvrtc).")
]
