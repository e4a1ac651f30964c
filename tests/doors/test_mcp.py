"""`kernelwright mcp` as an IDE's assistant meets it, through the MCP SDK's own client: in
process, over a stdio subprocess and over streamable HTTP on loopback, with a scripted stand-in
for the model and GPU reports replayed from a recording."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from kernelwright.agent.doors import jobs, mcp_server
from kernelwright.agent.doors.stand_ins import machine_with_stand_ins
from kernelwright.agent.llm import ScriptedLLM
from kernelwright.agent.settings import Settings
from kernelwright.tools.results import Attempt
from tests.agent.test_graph import FASTER, FASTER_LAUNCH, WRONG, reply
from tests.conftest import EXAMPLES, chroma_open
from tests.doors.test_chat import (
    KW,
    copy_gelu,
    door_env,
    gelu_replay,
    needs_script,
    write_stand_ins,
)

TOOLS = ["check_kernel", "doctor", "optimize_kernel", "profile_kernel", "search_memory"]
SCRIPT = [
    reply(FASTER, FASTER_LAUNCH, ["16-byte vector loads and stores"]),
    "Vector loads helped.",
    reply(WRONG, None, ["grid-stride loop"]),
    "It skipped the last element.",
]
BROKEN = FASTER.replace("tanhf", "tanhff")

Progress = list[tuple[float, float | None, str | None]]


def text(result: Any) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "text", None))


def run_client(server: Any, session: Callable[[Client], Awaitable[None]]) -> None:
    async def main() -> None:
        async with Client(server, read_timeout_seconds=120) as client:
            await session(client)

    anyio.run(main)


async def optimize_gelu(client: Client, task: Path) -> tuple[Any, Progress]:
    events: Progress = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        events.append((value, total, message))

    result = await client.call_tool(
        "optimize_kernel", {"task": str(task), "budget": 2}, progress_callback=progress
    )
    return result, events


def assert_optimized(result: Any, events: Progress) -> None:
    assert not result.is_error, text(result)
    answer = result.structured_content
    assert answer["best_speedup"] == pytest.approx(1.3)
    assert answer["best_source"] == FASTER
    assert answer["best_launch"]["grid"] == ["ceil_div(N, 1024)"]
    assert answer["stop_reason"] == "budget: 2 candidates tried"
    assert [a["verdict"] for a in answer["attempts"]] == ["correct", "wrong"]
    assert "best: 1.30x" in answer["report"]
    values = [v for v, _, _ in events]
    assert values == sorted(values) and len(set(values)) == len(values)  # always rising
    assert all(total == 2 for _, total, _ in events) and values[-1] == 2
    messages = [m or "" for _, _, m in events]
    assert any(m.startswith("propose: candidate 2") for m in messages)
    assert any(m.startswith("#1 [") and "correct 1.30x kept" in m for m in messages)


def assert_missing_task_is_readable(result: Any) -> None:
    assert result.is_error
    assert "missing/gelu: no such file or directory" in text(result)
    assert "Traceback" not in text(result)


# --- in process ---


@pytest.fixture
def machine(tmp_path: Path) -> jobs.Machine:
    gelu = copy_gelu(tmp_path)
    settings = Settings(data_dir=tmp_path / "data", ollama_base_url="http://127.0.0.1:9")
    return jobs.Machine(settings, gpu=gelu_replay(gelu), model=ScriptedLLM(SCRIPT), arch="sm_90")


def test_in_process_the_tools_are_listed_with_their_arguments(machine: jobs.Machine) -> None:
    async def session(client: Client) -> None:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert sorted(tools) == TOOLS
        check = tools["check_kernel"].input_schema
        assert check["required"] == ["task"] and "candidate" in check["properties"]
        budget = tools["optimize_kernel"].input_schema["properties"]["budget"]
        assert budget["minimum"] == 1 and budget["default"] == 5
        assert "ctx" not in tools["optimize_kernel"].input_schema["properties"]
        for t in tools.values():  # every argument says what it takes; descriptions dedented
            for name, prop in t.input_schema["properties"].items():
                assert prop.get("description"), (t.name, name)
            assert t.description and "\n    " not in t.description, t.name
            hints = t.annotations
            assert hints is not None and hints.open_world_hint is False
            assert hints.read_only_hint == (t.name != "optimize_kernel"), t.name

    run_client(mcp_server.build(machine), session)


def test_in_process_bad_input_gets_a_readable_tool_error(
    tmp_path: Path, machine: jobs.Machine, nvrtc: None
) -> None:
    gelu = tmp_path / "gelu"

    async def session(client: Client) -> None:
        missing = await client.call_tool("check_kernel", {"task": str(tmp_path / "missing/gelu")})
        assert_missing_task_is_readable(missing)
        broken = await client.call_tool("check_kernel", {"task": str(gelu), "candidate": BROKEN})
        assert broken.is_error
        assert "the candidate does not compile" in text(broken) and "tanhff" in text(broken)
        wrong_entry = await client.call_tool(
            "check_kernel", {"task": str(gelu), "candidate": "__global__ void k() {}"}
        )
        assert wrong_entry.is_error and "gelu" in text(wrong_entry)
        no_file = await client.call_tool(
            "check_kernel", {"task": str(gelu), "candidate": str(tmp_path / "nope.cu")}
        )
        assert no_file.is_error and "nope.cu: candidate not found" in text(no_file)
        zero = await client.call_tool("optimize_kernel", {"task": str(gelu), "budget": 0})
        assert zero.is_error and "budget" in text(zero)
        # and the server is still there
        ok = await client.call_tool("check_kernel", {"task": str(gelu)})
        assert not ok.is_error, text(ok)

    run_client(mcp_server.build(machine), session)


def test_in_process_check_profile_and_optimize_with_progress(
    tmp_path: Path, machine: jobs.Machine, nvrtc: None
) -> None:
    gelu = tmp_path / "gelu"

    async def session(client: Client) -> None:
        same = await client.call_tool("check_kernel", {"task": str(gelu)})
        assert same.structured_content["verdict"] == "correct"
        assert same.structured_content["speedup"] == 1.0
        by_path = await client.call_tool(
            "check_kernel",
            {"task": str(gelu), "candidate": str(EXAMPLES / "gelu/candidates/faster.cu")},
        )
        assert by_path.structured_content["summary"].startswith("correct: ok; 1.30x")
        profiled = await client.call_tool("profile_kernel", {"task": str(gelu)})
        answer = profiled.structured_content
        assert answer["median_ms"] == 0.11 and answer["profile"]["available"] is False
        assert "profiling unavailable: not recorded" in answer["summary"]
        assert_optimized(*await optimize_gelu(client, gelu))

    run_client(mcp_server.build(machine), session)


def test_in_process_search_memory(tmp_path: Path, machine: jobs.Machine) -> None:
    async def session(client: Client) -> None:
        empty = await client.call_tool("search_memory", {"query": "float4 loads"})
        assert empty.structured_content["results"] == []
        assert "nothing stored yet" in empty.structured_content["note"]

        from kernelwright.memory.store import ChromaStore

        with ChromaStore.open(path=tmp_path / "data" / "memory") as store:
            store.add(
                Attempt(index=1, parent=0, tags=("vec",), source=FASTER, verdict="correct",
                        reason="ok", speedup=1.3),
                task_signature="gelu", op_class="elementwise", bottleneck="memory-bound",
                arch="sm_90", model="m", run_id="gelu-1",
            )  # fmt: skip
        found = await client.call_tool("search_memory", {"query": FASTER, "n": 3})
        assert chroma_open() == []  # each search lets the store go: a server runs for days
        (episode,) = found.structured_content["results"]
        assert episode["speedup"] == 1.3 and episode["source"] == FASTER
        assert episode["tags"] == ["vec"]

    run_client(mcp_server.build(machine), session)


def test_no_model_server_is_a_readable_error_for_both_formats(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data", ollama_base_url="http://127.0.0.1:9")
    machine = jobs.Machine(settings, gpu=gelu_replay(EXAMPLES / "gelu"), arch="sm_90")

    async def session(client: Client) -> None:
        down = await client.call_tool("optimize_kernel", {"task": str(EXAMPLES / "gelu")})
        assert down.is_error and "start it with `ollama serve`" in text(down)
        kb = EXAMPLES / "kernelbench" / "relu_mlp.py"
        kb_down = await client.call_tool("optimize_kernel", {"task": str(kb)})
        assert kb_down.is_error and "start it with `ollama serve`" in text(kb_down)

    run_client(mcp_server.build(machine), session)


def test_doctor_says_what_is_missing(machine: jobs.Machine) -> None:
    async def session(client: Client) -> None:
        answer = (await client.call_tool("doctor", {})).structured_content
        checks = {c["name"]: c for c in answer["checks"]}
        assert answer["ready"] is False  # no Ollama at 127.0.0.1:9
        assert checks["Ollama"]["ok"] is False and checks["Ollama"]["fix"]

    run_client(mcp_server.build(machine), session)


# --- over stdio, as an IDE starts it ---


@needs_script
def test_over_stdio(tmp_path: Path, nvrtc: None) -> None:
    gelu = copy_gelu(tmp_path)
    stand_ins = write_stand_ins(tmp_path, SCRIPT, gelu_replay(gelu))
    assert KW is not None
    params = StdioServerParameters(
        command=KW,
        args=["mcp", "--test-stand-ins", str(stand_ins)],
        env=door_env(tmp_path),
        cwd=tmp_path,
    )

    async def session(client: Client) -> None:
        assert sorted(t.name for t in (await client.list_tools()).tools) == TOOLS
        missing = await client.call_tool("check_kernel", {"task": "missing/gelu"})
        assert_missing_task_is_readable(missing)
        assert_optimized(*await optimize_gelu(client, Path("gelu")))  # relative to its cwd

    run_client(params, session)


# --- over streamable HTTP on loopback ---


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@needs_script
def test_over_streamable_http(tmp_path: Path, nvrtc: None) -> None:
    gelu = copy_gelu(tmp_path)
    stand_ins = write_stand_ins(tmp_path, SCRIPT, gelu_replay(gelu))
    port = free_port()
    assert KW is not None
    log = (tmp_path / "server.log").open("w")
    server = subprocess.Popen(
        [KW, "mcp", "--http", f"127.0.0.1:{port}", "--test-stand-ins", str(stand_ins)],
        env=door_env(tmp_path),
        cwd=tmp_path,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert server.poll() is None, (tmp_path / "server.log").read_text()
                assert time.monotonic() < deadline, "the server did not start listening"
                time.sleep(0.2)

        async def session(client: Client) -> None:
            assert sorted(t.name for t in (await client.list_tools()).tools) == TOOLS
            missing = await client.call_tool("check_kernel", {"task": "missing/gelu"})
            assert_missing_task_is_readable(missing)
            assert_optimized(*await optimize_gelu(client, gelu))

        run_client(f"http://127.0.0.1:{port}/mcp", session)
        assert server.poll() is None  # still serving after a tool error and a run
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()
    assert "Traceback" not in (tmp_path / "server.log").read_text()


def test_a_bad_http_address_is_a_usage_error(tmp_path: Path) -> None:
    if KW is None:
        pytest.skip("the kernelwright script is not installed")
    proc = subprocess.run(
        [KW, "mcp", "--http", "localhost"],
        env=door_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "is not HOST:PORT" in " ".join(proc.stderr.split())


@pytest.mark.parametrize(
    ("address", "parsed"),
    [("127.0.0.1:8765", ("127.0.0.1", 8765)), (":9000", ("127.0.0.1", 9000)),
     ("[::1]:8765", ("::1", 8765)), ("0.0.0.0:80", ("0.0.0.0", 80))],
)  # fmt: skip
def test_http_addresses(address: str, parsed: tuple[str, int]) -> None:
    assert mcp_server.parse_address(address) == parsed


def test_stand_ins_file_names_what_stands_in(tmp_path: Path) -> None:
    path = write_stand_ins(tmp_path, ["a"], None)
    machine = machine_with_stand_ins(Settings(data_dir=tmp_path), path)
    assert machine.voice == "scripted stand-in"
    assert "scripted stand-in (testing only)" in machine.stand_in_note
    assert machine.model().complete([{"role": "user", "content": "q"}]) == "a"
    assert json.loads((tmp_path / "prompts.jsonl").read_text()) == [
        {"role": "user", "content": "q"}
    ]


def test_a_busy_port_is_a_usage_error_before_anything_starts(tmp_path: Path) -> None:
    import socket

    from kernelwright.agent.doors.mcp_server import address_free

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        with pytest.raises(ValueError, match="in use"):
            address_free("127.0.0.1", port)
        if KW is not None:
            proc = subprocess.run(
                [KW, "mcp", "--http", f"127.0.0.1:{port}"],
                env=door_env(tmp_path),
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert proc.returncode == 2 and "Traceback" not in proc.stderr
            assert "in use" in " ".join(proc.stderr.split())
    address_free("127.0.0.1", free_port())  # a free one passes


def test_a_non_loopback_http_address_needs_allow_remote_and_is_guarded(tmp_path: Path) -> None:
    """The tools run code (check_kernel runs what it is given): an address other than loopback
    is a usage error unless --allow-remote says the network is trusted, and then the HTTP
    transport still refuses requests that name another host (DNS rebinding: a review had a
    server on 0.0.0.0 answer Host evil.example)."""
    assert mcp_server.is_loopback("127.0.0.1") and mcp_server.is_loopback("::1")
    assert mcp_server.is_loopback("localhost") and mcp_server.is_loopback("127.0.0.2")
    assert not mcp_server.is_loopback("0.0.0.0") and not mcp_server.is_loopback("10.1.2.3")
    lan = mcp_server.guarded("10.1.2.3", 8765)
    assert lan.enable_dns_rebinding_protection
    assert lan.allowed_hosts == ["10.1.2.3:8765"]
    assert lan.allowed_origins == ["http://10.1.2.3:8765"]
    here = mcp_server.guarded("127.0.0.1", 8765)
    assert "localhost:8765" in here.allowed_hosts and "evil.example:8765" not in here.allowed_hosts
    assert mcp_server.guarded("fe80::1", 80).allowed_hosts == ["[fe80::1]:80"]
    assert "127.0.0.2:80" in mcp_server.guarded("127.0.0.2", 80).allowed_hosts  # its own address
    # a wildcard bind: the names a client uses (this machine's, its addresses), and any more
    anywhere = mcp_server.guarded("0.0.0.0", 80, ["gpu-box.lan"]).allowed_hosts
    assert f"{socket.gethostname()}:80" in anywhere and "gpu-box.lan:80" in anywhere
    assert "0.0.0.0:80" not in anywhere and "evil.example:80" not in anywhere
    if KW is None:
        return
    proc = subprocess.run(
        [KW, "mcp", "--http", f"0.0.0.0:{free_port()}"],
        env=door_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    said = " ".join(proc.stderr.split())
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "is not this machine's loopback" in said and "--allow-remote" in said
