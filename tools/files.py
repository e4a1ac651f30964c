"""Reading a user's files (tasks, candidates, KernelBench problems, the config file) as text."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from .errors import TaskError

MAX_TEXT_BYTES = 8 << 20  # a task's or candidate's file: the examples' are a few KB


def read_text(path: str | Path) -> str:
    """The file as UTF-8 text (a leading byte-order mark dropped). Bytes that are not UTF-8 are a
    TaskError naming the file, the first bad byte and where it is; so is anything but a regular
    file of at most MAX_TEXT_BYTES (a FIFO named like a task had hung a batch, a link to
    /dev/zero had filled its memory: a review); an OSError is left to the caller, which knows
    what a missing file means."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO opens at once, and is refused
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise TaskError(path, "", "not a regular file")
        if info.st_size > MAX_TEXT_BYTES:
            raise TaskError(
                path, "", f"{info.st_size:,} bytes: a task's file is at most {MAX_TEXT_BYTES:,}"
            )
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(MAX_TEXT_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_TEXT_BYTES:
        raise TaskError(path, "", f"more than {MAX_TEXT_BYTES:,} bytes")
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise TaskError(
            path,
            "",
            f"not UTF-8 text: byte 0x{data[exc.start]:02x} at offset {exc.start} (line {line})",
        ) from None
