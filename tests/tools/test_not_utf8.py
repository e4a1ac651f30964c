"""A user's file that is not UTF-8 text (a .cu, a .toml, a KernelBench .py, the config file) is
refused with one line naming the file, the byte and where it is: never a UnicodeDecodeError."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kernelwright.tools.errors import KernelwrightError, TaskError
from kernelwright.tools.files import read_text
from kernelwright.tools.task import load_candidate, load_task
from tests.conftest import EXAMPLES

BAD = b"\xff\xfe"


def spoil(path: Path, comment: str = "//") -> str:
    """Add a comment line holding bytes that are not UTF-8; the message the file must get."""
    data = path.read_bytes()
    if not data.endswith(b"\n"):
        data += b"\n"
    prefix = data + comment.encode() + b" "
    path.write_bytes(prefix + BAD + b" latin-1, say\n")
    line = prefix.count(b"\n") + 1
    return f"{path}: not UTF-8 text: byte 0xff at offset {len(prefix)} (line {line})"


def copy(tmp_path: Path, name: str = "gelu") -> Path:
    shutil.copytree(EXAMPLES / name, tmp_path / name)
    return tmp_path / name


def refused(call: object, *args: object) -> str:
    assert callable(call)
    with pytest.raises(TaskError) as info:
        call(*args)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_read_text_names_the_byte_offset_and_line(tmp_path: Path) -> None:
    path = tmp_path / "k.cu"
    path.write_bytes(b"ok\n\xc3\xa9 fine\n// \xff\n")
    with pytest.raises(TaskError) as info:
        read_text(path)
    assert str(info.value) == f"{path}: not UTF-8 text: byte 0xff at offset 14 (line 3)"
    assert isinstance(info.value, KernelwrightError)


def test_read_text_reads_utf8_and_drops_a_byte_order_mark(tmp_path: Path) -> None:
    path = tmp_path / "k.cu"
    path.write_bytes("\ufeff// é\n".encode())
    assert read_text(path) == "// é\n"
    with pytest.raises(FileNotFoundError):  # the caller says what a missing file means
        read_text(tmp_path / "missing.cu")


def test_task_kernel_not_utf8(tmp_path: Path) -> None:
    d = copy(tmp_path)
    expected = spoil(d / "gelu.cu")
    assert refused(load_task, d) == expected
    assert refused(load_task, d / "gelu.cu") == expected


def test_task_toml_not_utf8(tmp_path: Path) -> None:
    d = copy(tmp_path)
    expected = spoil(d / "gelu.toml", "#")
    assert refused(load_task, d) == expected


def test_task_reference_not_utf8(tmp_path: Path) -> None:
    d = copy(tmp_path)
    expected = spoil(d / "reference.py", "#")
    assert refused(load_task, d) == expected


def test_candidate_not_utf8(tmp_path: Path) -> None:
    task = load_task(EXAMPLES / "gelu")
    cand = tmp_path / "faster.cu"
    shutil.copy(EXAMPLES / "gelu" / "candidates" / "faster.cu", cand)
    expected = spoil(cand)
    assert refused(load_candidate, task, cand) == expected


def test_candidate_launch_toml_not_utf8(tmp_path: Path) -> None:
    task = load_task(EXAMPLES / "gelu")
    for name in ("faster.cu", "faster.toml"):
        shutil.copy(EXAMPLES / "gelu" / "candidates" / name, tmp_path / name)
    expected = spoil(tmp_path / "faster.toml", "#")
    assert refused(load_candidate, task, tmp_path / "faster.cu") == expected


def test_kernelbench_problem_not_utf8(tmp_path: Path) -> None:
    d = tmp_path / "kb"
    d.mkdir()
    problem = d / "relu_mlp.py"
    shutil.copy(EXAMPLES / "kernelbench" / "relu_mlp.py", problem)
    expected = spoil(problem, "#")
    assert refused(load_task, problem) == expected
    assert refused(load_task, d) == expected  # the only .py here: say why it is no task


def test_kernelbench_candidate_not_utf8(tmp_path: Path) -> None:
    task = load_task(EXAMPLES / "kernelbench" / "relu_mlp.py")
    cand = tmp_path / "cand.py"
    shutil.copy(EXAMPLES / "kernelbench" / "relu_mlp_candidate.py", cand)
    expected = spoil(cand, "#")
    assert refused(load_candidate, task, cand) == expected


def test_config_file_not_utf8(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kernelwright.agent.settings import SettingsError, load

    config = tmp_path / "config.toml"
    config.write_text('model = "m"\n')
    expected = spoil(config, "#")
    monkeypatch.setenv("KERNELWRIGHT_CONFIG", str(config))
    with pytest.raises(SettingsError) as info:
        load()
    assert str(info.value) == expected


def test_a_file_that_is_not_a_regular_one_or_too_large_is_refused_in_one_line(
    tmp_path: Path,
) -> None:
    """A FIFO named like a task had hung a batch, a link to /dev/zero had filled its memory, a
    Python file nested past the parser's stack had ended `check` in a traceback (a review):
    each is one line naming the file now, and a batch passes it by with its reason."""
    import os

    from kernelwright.agent.doors.batch import discover
    from kernelwright.tools.files import MAX_TEXT_BYTES

    fifo = tmp_path / "tree" / "fifo.py"
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    os.mkfifo(tmp_path / "tree" / "hang.toml")  # a task's own file, too
    zero = tmp_path / "tree" / "zero.py"
    zero.symlink_to("/dev/zero")
    big = tmp_path / "big.cu"
    big.write_bytes(b"/" * (MAX_TEXT_BYTES + 1))
    deep = tmp_path / "tree" / "deep.py"
    deep.write_text("class Model: pass\ndef get_inputs(): return " + "(" * 200_000 + ")" * 200_000)
    with pytest.raises(TaskError, match="not a regular file"):
        read_text(fifo)
    with pytest.raises(TaskError, match="not a regular file"):
        read_text(zero)
    with pytest.raises(TaskError, match="bytes: a task's file is at most"):
        read_text(big)
    with pytest.raises(TaskError, match=r"nested too deeply|syntax error"):
        load_task(deep)
    found, skipped = discover(tmp_path / "tree")
    assert not found
    why = {s.path.name: s.reason for s in skipped}
    assert why["fifo.py"] == why["zero.py"] == why["hang.toml"] == "not a regular file", why
    assert "deep.py" in why
