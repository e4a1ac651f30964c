"""Reading a user's files (tasks, candidates, KernelBench problems, the config file) as text."""

from __future__ import annotations

from pathlib import Path

from .errors import TaskError


def read_text(path: str | Path) -> str:
    """The file as UTF-8 text (a leading byte-order mark dropped). Bytes that are not UTF-8 are a
    TaskError naming the file, the first bad byte and where it is; an OSError is left to the
    caller, which knows what a missing file means."""
    data = Path(path).read_bytes()
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise TaskError(
            path,
            "",
            f"not UTF-8 text: byte 0x{data[exc.start]:02x} at offset {exc.start} (line {line})",
        ) from None
