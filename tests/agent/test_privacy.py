"""No code leaves the machine: with the LangSmith/LangChain tracing switches a LangChain user
often has on, a chat question about a kernel goes to the loopback Ollama stand-in and nowhere
else, unless the `allow_tracing` setting says otherwise.

The chat runs in a fresh interpreter, started the way the `kernelwright` script starts (its
`main()`), so the environment and the process-wide caches of LangSmith are its own. An audit
hook in that process records every socket it connects and every host name it looks up.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from ipaddress import ip_address
from pathlib import Path
from typing import Any

import pytest

from kernelwright.agent import privacy
from kernelwright.agent.settings import load
from tests.conftest import EXAMPLES, ROOT

from .ollama_server import LoopbackOllama

ANSWER = "It reads each float once and is bound by memory bandwidth."
QUESTION = "why is this kernel slow?"

# The child: an audit hook that notes every connection and every name looked up, written out at
# exit (after LangSmith's own exit handlers, which flush its queue: atexit runs in reverse), and
# then the `kernelwright` console script's own `main()`.
CHILD = """
import atexit, json, sys
seen = []
def hook(event, args):
    if event == "socket.connect":
        address = args[1]
        seen.append(["connect", list(address) if isinstance(address, tuple) else str(address)])
    elif event == "socket.getaddrinfo":
        seen.append(["lookup", str(args[0])])
sys.addaudithook(hook)
log = sys.argv.pop(1)
atexit.register(lambda: open(log, "w").write(json.dumps(seen)))
sys.argv[0] = "kernelwright"
from kernelwright.agent.doors.cli import main
sys.exit(main())
"""


class TraceCollector:
    """A loopback stand-in for the LangSmith API: it answers every request with `{}` and keeps
    the path of each one and the number of connections made to it."""

    def __init__(self) -> None:
        self.connections = 0
        self.paths: list[str] = []
        collector = self

        class Server(ThreadingHTTPServer):
            def process_request(self, request: Any, client_address: Any) -> None:
                collector.connections += 1
                super().process_request(request, client_address)

            def handle_error(self, request: object, client_address: object) -> None:
                pass

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                collector.paths.append(f"{self.command} {self.path}")
                body = b"{}"
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PATCH = do_PUT = _answer

            def log_message(self, *args: object) -> None:
                pass

        self.server = Server(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, args=(0.01,), daemon=True).start()

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def ollama() -> Iterator[LoopbackOllama]:
    server = LoopbackOllama()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def collector() -> Iterator[TraceCollector]:
    server = TraceCollector()
    yield server
    server.stop()


def _forgotten(key: str) -> bool:
    """Variables of the test's own environment that would change what the child does."""
    upper = key.upper()
    return upper.startswith(("KERNELWRIGHT_", "LANGSMITH_", "LANGCHAIN_", "OTEL_")) or upper in (
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
    )


def chat_in_a_fresh_process(
    tmp_path: Path, ollama: LoopbackOllama, collector: TraceCollector, **extra: str
) -> tuple[subprocess.CompletedProcess[str], list[list[Any]]]:
    """`kernelwright chat examples/gelu` asked one question, with tracing switched on the way
    LangChain users switch it on, pointed at the collector."""
    env = {k: v for k, v in os.environ.items() if not _forgotten(k)}
    env.update(
        KERNELWRIGHT_CONFIG=os.devnull,
        KERNELWRIGHT_DATA_DIR=str(tmp_path / "data"),
        KERNELWRIGHT_CACHE_DIR=str(tmp_path / "cache"),
        KERNELWRIGHT_OLLAMA_BASE_URL=ollama.url,
        LANGSMITH_TRACING="true",
        LANGCHAIN_TRACING_V2="true",
        LANGSMITH_ENDPOINT=collector.url,
        LANGCHAIN_ENDPOINT=collector.url,
        LANGSMITH_API_KEY="lsv2_pt_0000000000000000000000000000000000_test",
        LANGCHAIN_API_KEY="lsv2_pt_0000000000000000000000000000000000_test",
        LANGSMITH_PROJECT="kernelwright-privacy-test",
        **extra,
    )
    log = tmp_path / "sockets.json"
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(log), "chat", str(EXAMPLES / "gelu")],
        input=QUESTION + "\n",
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )
    seen = json.loads(log.read_text()) if log.exists() else []
    return proc, seen


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


def test_a_chat_question_goes_to_loopback_ollama_and_nowhere_else(
    tmp_path: Path, ollama: LoopbackOllama, collector: TraceCollector
) -> None:
    ollama.reply(ANSWER)
    proc, seen = chat_in_a_fresh_process(tmp_path, ollama, collector)
    assert proc.returncode == 0, proc.stderr
    assert ANSWER in proc.stdout, proc.stdout + proc.stderr
    (body,) = ollama.chat_bodies()  # the real model call, with the kernel's source in it
    kernel = (EXAMPLES / "gelu" / "gelu.cu").read_text().strip()
    assert kernel in body["messages"][-1]["content"]

    assert collector.connections == 0, collector.paths  # nothing went to the tracing endpoint
    assert seen, "the child's audit hook recorded nothing: it did not run"
    connects = [address for kind, address in seen if kind == "connect"]
    lookups = [host for kind, host in seen if kind == "lookup"]
    inet = [a for a in connects if isinstance(a, list)]  # the rest: Unix sockets, by path
    ports = {int(a[1]) for a in inet}
    assert int(ollama.url.rsplit(":", 1)[1]) in ports and collector.port not in ports, connects
    assert all(_loopback(str(a[0])) for a in inet), connects
    assert all(_loopback(h) for h in lookups), lookups


def test_allow_tracing_leaves_the_users_tracing_on(
    tmp_path: Path, ollama: LoopbackOllama, collector: TraceCollector
) -> None:
    """The control: the setting turns tracing back on, and the collector then sees the runs.
    It shows the test above would see a trace had one been sent."""
    ollama.reply(ANSWER)
    proc, seen = chat_in_a_fresh_process(
        tmp_path, ollama, collector, KERNELWRIGHT_ALLOW_TRACING="true"
    )
    assert proc.returncode == 0, proc.stderr
    assert ANSWER in proc.stdout, proc.stdout + proc.stderr
    assert collector.connections > 0
    assert any("/runs" in path for path in collector.paths), collector.paths
    assert collector.port in {a[1] for kind, a in seen if kind == "connect" and isinstance(a, list)}


# --- the function itself, in this process ---

USER_TRACING = {
    "LANGSMITH_TRACING": "true",
    "LANGSMITH_TRACING_V2": "true",
    "LANGCHAIN_TRACING": "true",
    "LANGCHAIN_TRACING_V2": "true",
    "LANGSMITH_ENDPOINT": "https://api.smith.langchain.com",
    "LANGCHAIN_ENDPOINT": "https://api.smith.langchain.com",
    "LANGSMITH_RUNS_ENDPOINTS": '{"https://eu.api.smith.langchain.com": "key"}',
    "LANGSMITH_API_KEY": "lsv2_pt_secret",
    "LANGCHAIN_API_KEY": "lsv2_pt_secret",
    "OTEL_TRACES_EXPORTER": "otlp",
    "CHROMA_OTEL_COLLECTION_ENDPOINT": "https://api.honeycomb.io",
    "CHROMA_OTEL_GRANULARITY": "all",
    "ANONYMIZED_TELEMETRY": "True",
}


@pytest.fixture
def user_tracing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    for key in list(os.environ):
        if key.startswith("KERNELWRIGHT_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("KERNELWRIGHT_CONFIG", os.devnull)
    for key, value in USER_TRACING.items():
        monkeypatch.setenv(key, value)
    for key in ("OTEL_SDK_DISABLED", "OTEL_METRICS_EXPORTER", "OTEL_LOGS_EXPORTER"):
        monkeypatch.delenv(key, raising=False)
    from langsmith import utils

    utils.get_env_var.cache_clear()
    yield
    monkeypatch.undo()  # the environment as it was, before LangSmith reads it again
    utils.get_env_var.cache_clear()


@pytest.mark.usefixtures("user_tracing")
def test_every_switch_is_turned_off_and_every_endpoint_forgotten() -> None:
    assert privacy.keep_traces_local() is True
    for key in ("LANGSMITH_TRACING", "LANGSMITH_TRACING_V2", "LANGCHAIN_TRACING"):
        assert os.environ[key] == "false"
    assert os.environ["LANGCHAIN_TRACING_V2"] == "false"
    for key in (
        "LANGSMITH_ENDPOINT",
        "LANGCHAIN_ENDPOINT",
        "LANGSMITH_RUNS_ENDPOINTS",
        "LANGSMITH_API_KEY",
        "LANGCHAIN_API_KEY",
        "CHROMA_OTEL_COLLECTION_ENDPOINT",
        "CHROMA_OTEL_GRANULARITY",
    ):
        assert key not in os.environ
    assert os.environ["OTEL_SDK_DISABLED"] == "true"
    assert os.environ["OTEL_TRACES_EXPORTER"] == "none"
    assert os.environ["ANONYMIZED_TELEMETRY"] == "False"

    from langchain_core.tracers.context import _tracing_v2_is_enabled

    assert not _tracing_v2_is_enabled()  # what LangChain asks before it adds its tracer


@pytest.mark.usefixtures("user_tracing")
def test_a_value_cached_before_the_switch_is_forgotten() -> None:
    from langsmith import utils

    assert utils.tracing_is_enabled() is True  # LangSmith caches what it read: "true"
    privacy.keep_traces_local()
    assert utils.tracing_is_enabled() is False


@pytest.mark.usefixtures("user_tracing")
def test_the_setting_leaves_the_environment_as_the_user_set_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KERNELWRIGHT_ALLOW_TRACING", "true")
    assert load().allow_tracing is True
    assert privacy.keep_traces_local() is False
    for key, value in USER_TRACING.items():
        assert os.environ[key] == value
    assert privacy.keep_traces_local(allow_tracing=False) is True
    assert os.environ["LANGSMITH_TRACING"] == "false"


@pytest.mark.usefixtures("user_tracing")
def test_a_config_that_cannot_be_read_keeps_tracing_off(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "bad.toml").write_text("allow_tracing = [")
    monkeypatch.setenv("KERNELWRIGHT_CONFIG", str(tmp_path / "bad.toml"))
    assert privacy.keep_traces_local() is True
    assert os.environ["LANGSMITH_TRACING"] == "false"


@pytest.mark.usefixtures("user_tracing")
def test_the_config_file_can_allow_tracing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("allow_tracing = true\n")
    monkeypatch.setenv("KERNELWRIGHT_CONFIG", str(tmp_path / "config.toml"))
    assert privacy.keep_traces_local() is False
    assert os.environ["LANGSMITH_TRACING"] == "true"


def test_tracing_is_off_by_default(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for key in list(os.environ):
        if key.startswith("KERNELWRIGHT_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("KERNELWRIGHT_CONFIG", os.devnull)
    assert load().allow_tracing is False


def test_loopback_requests_never_go_to_a_proxy_the_shell_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With HTTP_PROXY set and no NO_PROXY for 127.0.0.1, httpx sent the local Ollama's, the
    embedding server's and Chroma's requests to the proxy (a review): loopback is added to
    NO_PROXY, beside what the user has there, whatever tracing is set to."""
    import httpx

    seen: list[str] = []

    class Recorder(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.requestline)
            self.send_response(502)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    proxy = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.server_address[1]}")
        monkeypatch.setenv("NO_PROXY", "corp.example")
        monkeypatch.delenv("no_proxy", raising=False)
        privacy.keep_traces_local(allow_tracing=True)
        for name in ("NO_PROXY", "no_proxy"):  # both: httpx reads the lower-case one first
            unproxied = os.environ[name].split(",")
            assert unproxied == ["corp.example", "127.0.0.1", "localhost", "::1"], name
        from urllib.request import proxy_bypass_environment

        assert proxy_bypass_environment("corp.example")  # the user's own exclusion still holds
        with pytest.raises(httpx.HTTPError):  # nothing listens there: refused, not proxied
            httpx.get("http://127.0.0.1:9/api/tags", timeout=2)
        assert seen == []
    finally:
        proxy.shutdown()
        proxy.server_close()
    monkeypatch.setenv("NO_PROXY", "*")  # no proxy for anything: left as it is
    monkeypatch.setenv("no_proxy", "*")
    privacy.loopback_unproxied()
    assert os.environ["NO_PROXY"] == os.environ["no_proxy"] == "*"
