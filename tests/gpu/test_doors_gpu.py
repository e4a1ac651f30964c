"""The chat session and the MCP server optimize a kernel on the real GPU, with scripted replies
standing in for the model (no Ollama on the GPU machine): the wrong kernel is rejected, the
hand-written faster one is kept and measured, and the doors hand it back."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import anyio
import pexpect
import pytest
from mcp import Client, StdioServerParameters

from tests.conftest import EXAMPLES
from tests.doors.test_chat import KW, Terminal, door_env, write_stand_ins
from tests.gpu.test_loop_gpu import _reply

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(KW is None, reason="the kernelwright script is not installed"),
]


def softmax(tmp_path: Path) -> tuple[Path, list[str]]:
    """A copy of examples/softmax and the script: a wrong kernel, then the faster one."""
    task = tmp_path / "softmax"
    shutil.copytree(EXAMPLES / "softmax", task)
    script = [
        _reply(task / "candidates" / "wrong.cu", ["memory coalescing"]),
        "It is wrong.",
        _reply(task / "candidates" / "faster.cu", ["warp-shuffle reduction"]),
        "It is faster.",
    ]
    return task, script


def test_a_chat_session_optimizes_softmax_on_the_gpu(tmp_path: Path) -> None:
    task, script = softmax(tmp_path)
    stand_ins = write_stand_ins(tmp_path, script, None)  # the real GPU, no recording
    term = Terminal(tmp_path, "--test-stand-ins", str(stand_ins), timeout=600)
    term.say("load softmax", "loaded softmax", prompt="softmax>")
    term.say("/profile", "time: ")
    term.say(
        "optimize for 2 rounds",
        "#1 [",
        "] wrong",
        "#2 [",
        "] correct ",
        " kept",
        "x over the original after 2 candidates",
    )
    term.say("show the diff", "+++ softmax.best.cu")
    term.say("keep it", "wrote ", "softmax.cu is unchanged")
    term.child.sendline("/quit")
    term.child.expect(pexpect.EOF)
    print(term.transcript)
    assert (task / "softmax.best.cu").read_text() == (task / "candidates/faster.cu").read_text()
    assert "Traceback" not in term.transcript and "internal error" not in term.transcript


def test_an_mcp_session_optimizes_softmax_on_the_gpu(tmp_path: Path) -> None:
    task, script = softmax(tmp_path)
    stand_ins = write_stand_ins(tmp_path, script, None)
    assert KW is not None
    params = StdioServerParameters(
        command=KW,
        args=["mcp", "--test-stand-ins", str(stand_ins)],
        env=door_env(tmp_path),
        cwd=tmp_path,
    )
    events: list[tuple[float, float | None, str | None]] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        events.append((value, total, message))

    async def session() -> dict[str, Any]:
        async with Client(params, read_timeout_seconds=600) as client:
            profiled = await client.call_tool("profile_kernel", {"task": "softmax"})
            assert not profiled.is_error, profiled.content
            print("profile_kernel:", profiled.structured_content["summary"])
            checked = await client.call_tool(
                "check_kernel",
                {"task": "softmax", "candidate": "softmax/candidates/faster.cu"},
            )
            assert checked.structured_content["verdict"] == "correct"
            print("check_kernel:", checked.structured_content["summary"])
            broken = (task / "candidates" / "faster.cu").read_text().replace("expf", "expff")
            refused = await client.call_tool(
                "check_kernel", {"task": "softmax", "candidate": broken}
            )
            assert refused.is_error and "does not compile" in refused.content[0].text
            result = await client.call_tool(
                "optimize_kernel", {"task": "softmax", "budget": 2}, progress_callback=progress
            )
            assert not result.is_error, result.content
            return dict(result.structured_content or {})

    answer = anyio.run(session)
    for value, total, message in events:
        print(f"progress {value:.2f}/{total}: {message}")
    print(answer["report"])
    wrong, faster = answer["attempts"]
    assert wrong["verdict"] == "wrong" and not wrong["kept"]
    assert faster["verdict"] == "correct" and faster["kept"] and faster["speedup"] > 1.5
    assert answer["best_speedup"] == faster["speedup"]
    assert answer["best_source"] == (task / "candidates" / "faster.cu").read_text()
    assert any((m or "").startswith("#2 [") for _, _, m in events)
