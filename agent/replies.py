"""Read a kernel proposal out of what a small model sends back: tolerant of fences, prose and
sloppy JSON, strict about what the loop needs (CUDA source that defines the entry point)."""

from __future__ import annotations

import json
import re
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict

from kernelwright.tools.errors import KernelwrightError
from kernelwright.tools.signature import find_params, is_global_kernel, strip_comments

from .llm import Message

CODE_TAGS = frozenset({"", "cuda", "cu", "cuh", "cuda-c", "c++", "cpp", "cxx", "cc", "c"})
JSON_TAGS = frozenset({"json", "jsonc", "json5", "js", "javascript"})
_META_KEYS = frozenset({"launch", "block", "grid", "tags", "rationale"})
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([^\s`]*)[^\n]*$", re.MULTILINE)
_KERNEL_NAME = re.compile(
    r"__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?void\s+"
    r"(?:__launch_bounds__\s*\([^)]*\)\s*)?(\w+)\s*\("
)
_DIRECTIVE = re.compile(r"#\s*(include|define|pragma|if|ifdef|ifndef|endif|else|elif|undef)\b")


class ReplyError(KernelwrightError):
    """A reply the loop cannot use; the message says what was missing."""

    def __init__(self, missing: Literal["code", "entry", "metadata"], problem: str, entry: str):
        self.missing = missing
        self.entry = entry
        super().__init__(problem)


class _Block(NamedTuple):
    tag: str  # the fence's language tag, lower case ("" for none)
    body: str
    start: int  # the fence lines included
    end: int


class Proposal(BaseModel):
    model_config = ConfigDict(frozen=True)

    source: str
    launch: dict[str, Any] | None = None
    tags: tuple[str, ...] = ()
    rationale: str = ""


def parse_proposal(text: str, entry: str) -> Proposal:
    """The CUDA source and metadata in a reply; ReplyError if the source is missing or does
    not define `entry`, or the metadata is there but cannot be read. No metadata is fine."""
    blocks = _fenced_blocks(text)
    outside = _blank_out(text, [(b.start, b.end) for b in blocks])
    meta, meta_span = _find_metadata(blocks, outside, entry)
    if meta_span:
        outside = _blank_out(outside, [meta_span])
    code = [b.body for b in blocks if b.tag in CODE_TAGS and "__global__" in b.body]
    code = code or [b.body for b in blocks if b.tag not in JSON_TAGS and "__global__" in b.body]
    source = code[-1] if code else _bare_source(outside)
    if source is None:
        raise ReplyError(
            "code",
            "no CUDA source found: expected a ```cuda block with the whole kernel, defining "
            f'extern "C" __global__ void {entry}(...)',
            entry,
        )
    source = re.sub(r"\A(?:[ \t]*\n)+", "", source).rstrip() + "\n"  # no blank edges
    _check_entry(source, entry)
    return Proposal(source=source, **_metadata(meta, entry))


def parse_json_object(text: str) -> dict[str, Any]:
    """The first {...} object in text, read leniently: comments, trailing commas, single
    quotes, bare keys and Python's True/False/None are accepted. ValueError if none parses."""
    start = text.find("{")
    if start < 0:
        raise ValueError("no JSON object (no '{' found)")
    obj, _ = _json_at(text, start)
    return obj


def repair_message(error: ReplyError) -> Message:
    """The user message of the one repair round: what was wrong and the exact format wanted."""
    from kernelwright.prompts.render import render

    (message,) = render("repair", problem=str(error), missing=error.missing, entry=error.entry)
    return Message(role="user", content=message["content"])


# --- fences and bare code ---


def _fenced_blocks(text: str) -> list[_Block]:
    """Every fenced block, in order; an unclosed fence runs to the end of the text."""
    blocks, pos = [], 0
    while match := _FENCE.search(text, pos):
        fence, tag = match.group(1), match.group(2).lower().strip("{}.")
        # a closing fence ends a line, alone or straight after code (`}```` happens)
        closing = re.compile(rf"{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", re.M)
        body_start = match.end() + 1
        close = closing.search(text, body_start)
        end = close.end() if close else len(text)
        body = text[body_start : close.start() if close else len(text)]
        blocks.append(_Block(tag, body, match.start(), end))
        pos = end
    return blocks


def _blank_out(text: str, spans: list[tuple[int, int]]) -> str:
    """Text with the spans turned to spaces (newlines kept, so offsets stay valid)."""
    for start, end in spans:
        text = text[:start] + re.sub(r"[^\n]", " ", text[start:end]) + text[end:]
    return text


def _bare_source(text: str) -> str | None:
    """Unfenced code: from the first extern "C" (with the includes and helpers just above it)
    to the last closing brace."""
    found = [i for i in (text.find('extern "C"'), text.find("__global__")) if i >= 0]
    end = text.rfind("}")
    if not found or end < min(found):
        return None
    start = text.rfind("\n", 0, min(found)) + 1
    for line in reversed(text[:start].splitlines(keepends=True)):
        if line.strip() and not _looks_like_code(line.strip()):
            break
        start -= len(line)
    return text[start : end + 1]


def _looks_like_code(line: str) -> bool:
    if line.startswith("#"):
        return _DIRECTIVE.match(line) is not None
    if re.match(r"[A-Z][a-z]+ [a-z]", line) and not line.endswith((";", "{", "}")):
        return False  # a sentence
    return line.startswith(("//", "/*", "*", "{", "}", "template", "struct", "__")) or (
        line.endswith((";", "{", "}", ")", ",", "\\", "*/"))
    )


def _check_entry(source: str, entry: str) -> None:
    if find_params(source, entry) is not None:
        return
    if is_global_kernel(source, entry):
        problem = (
            f'the kernel {entry} is not extern "C": declare it '
            f'extern "C" __global__ void {entry}(...) so it can be found by name'
        )
    else:
        names = sorted(set(_KERNEL_NAME.findall(strip_comments(source))))
        found = f" (it defines {', '.join(names)})" if names else ""
        problem = (
            f"the CUDA source does not define the entry point {entry}{found}: it must contain "
            f'extern "C" __global__ void {entry}(...) with the task\'s parameters'
        )
    raise ReplyError("entry", problem, entry)


# --- metadata ---


def _find_metadata(
    blocks: list[_Block], outside: str, entry: str
) -> tuple[dict[str, Any] | None, tuple[int, int] | None]:
    """The metadata object: the last ```json block, else the last bare {...} with known keys
    (and its span in `outside`, so it is not read as code)."""
    fenced = [
        b.body
        for b in blocks
        if b.tag in JSON_TAGS or (b.tag == "" and b.body.lstrip().startswith("{"))
    ]
    if fenced:
        try:
            return parse_json_object(fenced[-1]), None
        except ValueError as exc:
            raise ReplyError(
                "metadata", f"the ```json metadata is not valid JSON: {exc}", entry
            ) from None
    best: tuple[dict[str, Any] | None, tuple[int, int] | None] = (None, None)
    skip_to = 0
    for match in re.finditer(r"\{", outside):
        if match.start() < skip_to:
            continue  # inside the object already taken
        try:
            obj, end = _json_at(outside, match.start())
        except ValueError:
            continue
        if _META_KEYS & set(obj):
            best, skip_to = (obj, (match.start(), end)), end
    return best


def _metadata(meta: dict[str, Any] | None, entry: str) -> dict[str, Any]:
    if meta is None:
        return {}
    launch = meta.get("launch")
    if launch is None and ("block" in meta or "grid" in meta):
        launch = meta
    tags = meta.get("tags") or []
    if isinstance(tags, str):
        tags = tags.split(",")
    if not isinstance(tags, list):
        tags = [tags]
    clean = (str(t).strip().lstrip("#").strip().lower() for t in tags)
    rationale = next((meta[k] for k in ("rationale", "reasoning", "explanation") if k in meta), "")
    return {
        "launch": _launch(launch, entry),
        "tags": tuple(dict.fromkeys(t for t in clean if t)),
        "rationale": str(rationale or "").strip(),
    }


def _launch(raw: Any, entry: str) -> dict[str, Any] | None:
    if raw is None or raw == "" or raw == "default":
        return None
    if not isinstance(raw, dict):
        raise ReplyError(
            "metadata", f'"launch" must be an object with block and grid, got {raw!r}', entry
        )
    launch: dict[str, Any] = {}
    for key in ("block", "grid"):
        value = raw.get(key)
        if isinstance(value, str) and value.strip().startswith("["):
            value = json.loads(value) if _is_json(value) else value
        items = value if isinstance(value, list) else [value]
        items = [_dim(x) for x in items]
        if not 1 <= len(items) <= 3 or None in items:
            raise ReplyError(
                "metadata",
                f"launch.{key} must be a list of 1 to 3 numbers or expressions, got {value!r}",
                entry,
            )
        launch[key] = items
    if "shared_mem_bytes" in raw:
        smem = _dim(raw["shared_mem_bytes"])
        if smem is None:
            raise ReplyError(
                "metadata", "launch.shared_mem_bytes must be a number or expression", entry
            )
        launch["shared_mem_bytes"] = smem
    return launch


def _dim(value: Any) -> int | str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _json_at(text: str, start: int) -> tuple[dict[str, Any], int]:
    """The object opening at text[start] and where it ends, strict JSON first, then lenient."""
    try:
        obj, end = json.JSONDecoder().raw_decode(text, start)
    except ValueError:
        normal, end = _normalize(text, start)
        obj = json.loads(normal, strict=False)  # strict=False: raw newlines inside strings
    if not isinstance(obj, dict):
        raise ValueError("not a JSON object")
    return obj, end


def _normalize(text: str, start: int) -> tuple[str, int]:
    """Rewrite the lenient object at text[start] as strict JSON; return it and its end."""
    out: list[str] = []
    depth, i, n = 0, start, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":  # a string in either quote, rewritten in double quotes
            j, buf = i + 1, []
            while j < n and text[j] != c:
                if text[j] == "\\" and j + 1 < n:
                    buf.append("'" if text[j + 1] == "'" else text[j : j + 2])
                    j += 2
                else:
                    buf.append('\\"' if text[j] == '"' else text[j])
                    j += 1
            out.append('"' + "".join(buf) + '"')
            i = j + 1
        elif text.startswith(("//", "#"), i):
            newline = text.find("\n", i)
            i = n if newline < 0 else newline
        elif text.startswith("/*", i):
            close = text.find("*/", i + 2)
            i = n if close < 0 else close + 2
        elif c in "}]":
            while out and out[-1].isspace():
                out.pop()
            if out and out[-1] == ",":
                out.pop()  # a trailing comma
            out.append(c)
            depth, i = depth - 1, i + 1
            if depth == 0:
                return "".join(out), i
        elif c.isalpha() or c == "_":
            word = re.match(r"[A-Za-z_]\w*", text[i:])
            assert word is not None
            if re.match(r"\s*:", text[i + len(word[0]) :]):
                out.append(f'"{word[0]}"')  # a bare key
            else:
                out.append({"True": "true", "False": "false", "None": "null"}.get(word[0], word[0]))
            i += len(word[0])
        else:
            depth += c in "{["
            out.append(c)
            i += 1
    raise ValueError("the object is not closed (no matching '}')")
