"""Read a KernelBench candidate out of a small model's reply: the Python file that defines
ModelNew (tolerant of fences, prose and a missing fence), and the optional JSON metadata."""

from __future__ import annotations

import re

from kernelwright.agent.llm import Message
from kernelwright.agent.replies import (
    JSON_TAGS,
    Proposal,
    ReplyError,
    _blank_out,
    _fenced_blocks,
    _find_metadata,
    _metadata,
)

PYTHON_TAGS = frozenset({"", "python", "py", "python3", "py3"})
ENTRY = "ModelNew"
_LAUNCH = frozenset({"launch", "block", "grid", "shared_mem_bytes"})
_MODEL_NEW = re.compile(r"^class\s+ModelNew\b|^ModelNew\s*=", re.MULTILINE)
_FIRST_LINE = re.compile(r"^(?:import |from \w[\w.]* import |\"\"\"|'''|#|@|class |def )", re.M)


def parse_model_new(text: str) -> Proposal:
    """The candidate's Python source and metadata in a reply; ReplyError if no code defines
    ModelNew, or the metadata is there but cannot be read. No metadata is fine. Syntax is
    left to the compile node, whose log goes back to the model for a repair."""
    blocks = _fenced_blocks(text)
    outside = _blank_out(text, [(b.start, b.end) for b in blocks])
    meta, meta_span = _find_metadata(blocks, outside, ENTRY)
    if meta_span:
        outside = _blank_out(outside, [meta_span])
    defines = [b for b in blocks if b.tag not in JSON_TAGS and _MODEL_NEW.search(b.body)]
    tagged = [b for b in defines if b.tag in PYTHON_TAGS]  # ```python over ```text and the like
    found = tagged or defines
    chosen = found[-1].body if found else _bare_source(outside)
    if chosen is None:
        pythons = [b for b in blocks if b.tag in ("python", "py")]
        problem = (
            "the ```python block does not define class ModelNew"
            if pythons
            else "no Python source found: expected a ```python block with the whole file, "
            "defining class ModelNew(torch.nn.Module)"
        )
        raise ReplyError("entry" if pythons else "code", problem, ENTRY)
    source = re.sub(r"\A(?:[ \t]*\n)+", "", chosen).rstrip() + "\n"
    # no launch: a KernelBench candidate launches its own kernels
    values = _metadata({k: v for k, v in meta.items() if k not in _LAUNCH}, ENTRY) if meta else {}
    return Proposal(source=source, **values)


def _bare_source(text: str) -> str | None:
    """Unfenced code: from the first line that starts Python (an import, a docstring, a class)
    to the end, less the prose lines that follow the code."""
    found = _MODEL_NEW.search(text)
    if found is None:
        return None
    first = _FIRST_LINE.search(text)
    start = first.start() if first and first.start() <= found.start() else found.start()
    lines = text[start:].splitlines(keepends=True)
    while lines and (not lines[-1].strip() or _is_prose(lines[-1])):
        lines.pop()
    return "".join(lines)


def _is_prose(line: str) -> bool:
    """An unindented sentence, not a statement."""
    text = line.rstrip()
    return bool(re.match(r"[A-Z][a-z]+,? [a-z]", text)) and not text.endswith((":", ",", "(", "\\"))


def repair_message(error: ReplyError) -> Message:
    """The user message of the one repair round for a KernelBench candidate."""
    from kernelwright.prompts.render import render

    (message,) = render("repair_kernelbench", problem=str(error), missing=error.missing)
    return Message(role="user", content=message["content"])
