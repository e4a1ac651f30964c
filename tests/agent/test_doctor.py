"""doctor's Ollama lines against a loopback server that speaks Ollama's /api/tags."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from kernelwright.agent.doors.doctor import check_memory_dir, check_ollama
from kernelwright.agent.settings import Settings

TAGS = {
    "models": [
        {"name": "qwen2.5-coder:7b", "model": "qwen2.5-coder:7b", "size": 4683087332},
        {"name": "nomic-embed-text:latest", "model": "nomic-embed-text:latest"},
    ]
}


class _Tags(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = json.dumps(TAGS).encode() if self.path == "/api/tags" else b"{}"
        self.send_response(200 if self.path == "/api/tags" else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def ollama() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), _Tags)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_pulled_model_is_found(ollama: str) -> None:
    server, model = check_ollama(Settings(ollama_base_url=ollama, model="qwen2.5-coder:7b"))
    assert server.ok and "qwen2.5-coder:7b" in server.detail
    assert model.ok and model.detail == "qwen2.5-coder:7b pulled"


def test_model_without_tag_matches_latest(ollama: str) -> None:
    _, model = check_ollama(Settings(ollama_base_url=ollama, model="nomic-embed-text"))
    assert model.ok


def test_a_model_from_a_registry_with_a_port_matches_latest(
    ollama: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """doctor read "host:5000/coder" as tagged and said "not pulled" where Ollama lists
    "host:5000/coder:latest"; the model client agreed with Ollama."""
    listed = [{"name": "reg.local:5000/team/coder:latest", "model": "reg.local:5000/team/coder"}]
    monkeypatch.setitem(TAGS, "models", listed)
    _, model = check_ollama(Settings(ollama_base_url=ollama, model="reg.local:5000/team/coder"))
    assert model.ok and model.detail == "reg.local:5000/team/coder pulled"


def test_missing_model_says_how_to_pull_it(ollama: str) -> None:
    _, model = check_ollama(Settings(ollama_base_url=ollama, model="deepseek-coder-v2:16b"))
    assert not model.ok and model.required
    assert model.fix == "ollama pull deepseek-coder-v2:16b"


def test_server_down_says_how_to_start_it() -> None:
    server, model = check_ollama(Settings(ollama_base_url="http://127.0.0.1:9"))
    assert not server.ok and server.fix == "start it: ollama serve"
    assert not model.ok


def test_memory_dir_unwritable_gives_the_variable_to_set(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    check = check_memory_dir(Settings(data_dir=blocker / "sub"))
    assert not check.ok and "KERNELWRIGHT_DATA_DIR" in check.fix


@pytest.mark.parametrize("body", [{"models": "none"}, [], {"models": [1, 2]}, {"error": "x"}])
def test_a_server_that_is_not_ollama_is_named_not_a_crash(body: object) -> None:
    class Other(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Other)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        found, model = check_ollama(Settings(ollama_base_url=url))
    finally:
        server.shutdown()
    assert not found.ok and "not as Ollama does" in found.detail
    assert "ollama_base_url" in found.fix and not model.ok


def test_a_url_that_is_not_one_says_how_to_write_it() -> None:
    found, _ = check_ollama(Settings(ollama_base_url="localhost:11434"))
    assert not found.ok and "http://HOST:PORT" in found.fix and "ollama serve" not in found.fix


def test_readable_counters_are_reported_as_readable(monkeypatch: pytest.MonkeyPatch) -> None:
    """doctor said 'warn ncu' with an empty message even when ncu read counters fine."""
    from kernelwright.agent.doors import doctor
    from kernelwright.tools import profile
    from kernelwright.tools.results import ProfileResult

    monkeypatch.setattr(doctor.shutil, "which", lambda name: "/usr/local/cuda/bin/ncu")
    done = ProfileResult(available=True, kernel_name="kw_probe", duration_ms=0.0042)
    monkeypatch.setattr(profile, "profile", lambda *a, **k: done)
    check = doctor.check_ncu(gpu_ok=True)
    assert check.ok and "counters readable" in check.detail and not check.fix
    denied = ProfileResult(available=False, reason="ERR_NVGPUCTRPERM: no permission")
    monkeypatch.setattr(profile, "profile", lambda *a, **k: denied)
    check = doctor.check_ncu(gpu_ok=True)
    assert not check.ok and check.detail and "ERR_NVGPUCTRPERM" in check.fix
