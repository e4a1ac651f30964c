"""best_host.cu: the drop-in host function of a C++ task, with the function's own signature over
its verified kernel (allocate, copy in, launch, copy back, free). What goes in it is worked out
by tools/cpp_host.py; the file is the template agent/doors/templates/best_host.cu.j2."""

from __future__ import annotations

import functools
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2

from kernelwright.tools.cpp import CppTask
from kernelwright.tools.cpp_host import host_values
from kernelwright.tools.spec import LaunchSpec, parse_launch

FILE = "best_host.cu"


@functools.cache
def _template() -> jinja2.Template:
    env = jinja2.Environment(
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )
    text = resources.files("kernelwright.agent.doors").joinpath("templates/best_host.cu.j2")
    return env.from_string(text.read_text(encoding="utf-8"))


def best_host(task: CppTask, kernel: str, launch: LaunchSpec | dict[str, Any] | None = None) -> str:
    """best_host.cu for `kernel` (device code whose entry is named as the function) at `launch`
    (a launch table; None: the task's). TaskError where the sizes cannot be told from the
    function's parameters."""
    if isinstance(launch, dict):
        table = {k: list(v) if isinstance(v, list | tuple) else v for k, v in launch.items()}
        launch = parse_launch(Path(FILE), table, set(task.bench))
    return _template().render(**host_values(task, kernel, launch))
