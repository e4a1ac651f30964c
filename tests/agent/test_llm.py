"""The model clients against a loopback server that answers as Ollama does (no Ollama here)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from kernelwright.agent.llm import (
    EndpointUnavailable,
    Message,
    ModelNotPulled,
    ModelRequestFailed,
    OllamaModel,
    OllamaUnavailable,
    OpenAICompatModel,
    ScriptedLLM,
    ScriptExhausted,
    fold_system,
    make_model,
    quirks_for,
)
from kernelwright.agent.settings import Settings
from kernelwright.tools.errors import KernelwrightError

from .ollama_server import LoopbackOllama, tool_call

KERNEL_REPLY = """Here is a faster version that reads four floats at a time:

```cuda
extern "C" __global__ void gelu(const float* __restrict__ x, float* __restrict__ y, int n) {
    int i = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
    if (i + 3 < n) {
        float4 v = *reinterpret_cast<const float4*>(x + i);
        v.x = 0.5f * v.x * (1.0f + tanhf(0.7978845608f * (v.x + 0.044715f * v.x * v.x * v.x)));
        *reinterpret_cast<float4*>(y + i) = v;
    }
}
```

```json
{"launch": {"block": [256], "grid": ["ceil_div(N, 1024)"]}, "tags": ["vectorized"]}
```
"""

ASK: list[Message] = [
    {"role": "system", "content": "You write fast CUDA kernels."},
    {"role": "user", "content": "Make gelu faster."},
]


@pytest.fixture(autouse=True)
def settings_from_the_test_only(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for key in list(os.environ):
        if key.startswith("KERNELWRIGHT_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("KERNELWRIGHT_CONFIG", os.devnull)


@pytest.fixture
def ollama() -> Iterator[LoopbackOllama]:
    server = LoopbackOllama(
        models=("qwen2.5-coder:7b", "codellama:latest", "starcoder2:3b", "llama3:8b")
    )
    server.start()
    yield server
    server.stop()


def model_at(server: LoopbackOllama, **fields: object) -> OllamaModel:
    return OllamaModel(Settings(ollama_base_url=server.url, **fields))  # type: ignore[arg-type]


# --- Ollama: replies and what is sent ---


def test_a_streamed_reply_comes_back_whole(ollama: LoopbackOllama) -> None:
    ollama.reply(KERNEL_REPLY)
    assert model_at(ollama).complete(ASK) == KERNEL_REPLY
    (body,) = ollama.chat_bodies()
    assert body["stream"] is True  # ChatOllama streams: the server answered in NDJSON lines
    assert body["messages"] == [dict(m) for m in ASK]


def test_settings_arrive_at_the_server(ollama: LoopbackOllama) -> None:
    ollama.reply("ok")
    model_at(ollama, context_length=20000, keep_alive="30m", temperature=0.0, seed=7).complete(ASK)
    (body,) = ollama.chat_bodies()
    assert body["model"] == "qwen2.5-coder:7b"
    assert body["keep_alive"] == "30m"
    assert body["options"]["num_ctx"] == 20000
    assert body["options"]["temperature"] == 0.0
    assert body["options"]["seed"] == 7


def test_num_ctx_is_sent_with_the_defaults_too(ollama: LoopbackOllama) -> None:
    ollama.reply("ok")
    model_at(ollama).complete(ASK)
    options = ollama.chat_bodies()[0]["options"]
    assert options["num_ctx"] == 16384 and "seed" not in options  # no seed unless one is set


def test_keep_alive_in_seconds_is_sent_as_a_number(ollama: LoopbackOllama) -> None:
    ollama.reply("ok")
    model_at(ollama, keep_alive="-1").complete(ASK)  # -1: keep the model loaded
    assert ollama.chat_bodies()[0]["keep_alive"] == -1


def test_context_length_follows_the_model_quirks(ollama: LoopbackOllama) -> None:
    ollama.reply("ok")
    ollama.reply("ok")
    model_at(ollama, model="codellama", context_length=4096).complete(ASK)
    model_at(ollama, model="llama3:8b", context_length=32768).complete(ASK)
    low, high = (b["options"]["num_ctx"] for b in ollama.chat_bodies())
    assert low == 16384  # raised to what a kernel prompt needs
    assert high == 8192  # capped at the window llama3 was trained on
    assert model_at(ollama, model="mistral:7b", context_length=65536).num_ctx == 65536


def test_a_reply_with_tool_calls_gives_its_text(ollama: LoopbackOllama) -> None:
    call = tool_call("submit_kernel", {"tags": ["vectorized"]})
    ollama.reply("I will submit the kernel now.", tool_calls=[call], done_reason="stop")
    ollama.reply("", tool_calls=[call])
    model = model_at(ollama)
    assert model.complete(ASK) == "I will submit the kernel now."
    assert model.complete(ASK) == ""


def test_a_cut_off_reply_is_returned_as_far_as_it_got(ollama: LoopbackOllama) -> None:
    ollama.reply(KERNEL_REPLY[:200], done_reason="length")
    assert model_at(ollama).complete(ASK) == KERNEL_REPLY[:200]


# --- Ollama: readiness and failures as one line ---


def test_ensure_ready_passes_for_a_pulled_model(ollama: LoopbackOllama) -> None:
    model_at(ollama).ensure_ready()
    model_at(ollama, model="codellama").ensure_ready()  # no tag means :latest


def test_a_model_without_tag_does_not_match_another_tag(ollama: LoopbackOllama) -> None:
    with pytest.raises(ModelNotPulled, match="ollama pull starcoder2`"):
        model_at(ollama, model="starcoder2").ensure_ready()  # only starcoder2:3b is there


def test_a_url_that_is_not_one_is_one_line_not_a_traceback() -> None:
    model = OllamaModel(Settings(ollama_base_url="localhost:11434"))
    with pytest.raises(ModelRequestFailed, match="http://HOST:PORT") as info:
        model.ensure_ready()
    assert isinstance(info.value, KernelwrightError) and "\n" not in str(info.value)


def test_server_down_says_how_to_start_it(ollama: LoopbackOllama) -> None:
    model = model_at(ollama)
    ollama.stop()
    for call in (model.ensure_ready, lambda: model.complete(ASK)):
        with pytest.raises(OllamaUnavailable) as info:
            call()
        message = str(info.value)
        assert "ollama serve" in message and ollama.url in message
        assert isinstance(info.value, KernelwrightError) and "\n" not in message


def test_model_not_pulled_says_how_to_pull_it(ollama: LoopbackOllama) -> None:
    model = model_at(ollama, model="deepseek-coder-v2:16b")
    for call in (model.ensure_ready, lambda: model.complete(ASK)):
        with pytest.raises(ModelNotPulled) as info:
            call()
        assert "run `ollama pull deepseek-coder-v2:16b`" in str(info.value)
    assert len(ollama.chat_bodies()) == 1  # complete() asked once and got Ollama's 404


def test_a_slow_server_is_a_timeout_not_a_hang(ollama: LoopbackOllama) -> None:
    ollama.reply("late", delay_s=2.0)
    with pytest.raises(ModelRequestFailed, match=r"within 0.2 s"):
        model_at(ollama, request_timeout_s=0.2).complete(ASK)


def test_a_server_error_names_the_model_and_the_cause(ollama: LoopbackOllama) -> None:
    with pytest.raises(ModelRequestFailed) as info:  # nothing queued: the server answers 500
        model_at(ollama).complete(ASK)
    assert "qwen2.5-coder:7b" in str(info.value) and "HTTP 500" in str(info.value)


# --- quirks ---


def test_a_model_without_system_role_gets_the_system_text_in_the_first_user_message(
    ollama: LoopbackOllama,
) -> None:
    ollama.reply("ok")
    ollama.reply("ok")
    model_at(ollama, model="starcoder2:3b").complete(ASK)
    model_at(ollama, model="qwen2.5-coder:7b").complete(ASK)
    folded, kept = (b["messages"] for b in ollama.chat_bodies())
    assert folded == [
        {"role": "user", "content": "You write fast CUDA kernels.\n\nMake gelu faster."}
    ]
    assert [m["role"] for m in kept] == ["system", "user"]


def test_stop_strings_are_sent_only_where_the_quirks_give_them(ollama: LoopbackOllama) -> None:
    ollama.reply("ok")
    ollama.reply("ok")
    model_at(ollama, model="codellama").complete(ASK)
    model_at(ollama).complete(ASK)
    with_stop, without = (b["options"] for b in ollama.chat_bodies())
    assert with_stop["stop"] == ["[INST]", "[/INST]", "<<SYS>>", "<</SYS>>"]
    assert "stop" not in without  # the Modelfile's own stop strings stay in force


def test_quirks_match_the_longest_prefix() -> None:
    assert quirks_for("deepseek-coder-v2:16b")["max_context_length"] == 163840
    assert quirks_for("deepseek-coder:6.7b")["max_context_length"] == 16384
    assert quirks_for("hf.co/Qwen/Qwen2.5-Coder-7B-Instruct-GGUF:Q4_K_M")["code_fence"] == "cuda"
    assert quirks_for("llama3.1:8b")["max_context_length"] == 131072
    unknown = quirks_for("mistral:7b")
    assert unknown["system_role"] is True and unknown["stop"] == []
    unknown["stop"].append("x")  # a caller's change does not leak into the next lookup
    assert quirks_for("mistral:7b")["stop"] == []


def test_fold_system_without_a_user_message_makes_one() -> None:
    folded = fold_system([{"role": "system", "content": "rules"}])
    assert folded == [{"role": "user", "content": "rules"}]


# --- OpenAI-compatible endpoint ---


def test_openai_compatible_endpoint(ollama: LoopbackOllama) -> None:
    ollama.reply(KERNEL_REPLY)
    settings = Settings(
        provider="openai", openai_base_url=ollama.url + "/v1", seed=3, openai_api_key="sk-local"
    )
    model = make_model(settings)
    assert isinstance(model, OpenAICompatModel)
    assert model.complete(ASK) == KERNEL_REPLY
    ((path, body),) = ollama.requests
    assert path == "/v1/chat/completions"
    assert body == {
        "model": "qwen2.5-coder:7b",
        "messages": [dict(m) for m in ASK],
        "temperature": 0.2,
        "seed": 3,
    }
    assert ollama.authorization == ["Bearer sk-local"]


def test_openai_compatible_errors_are_one_line(ollama: LoopbackOllama) -> None:
    missing = OpenAICompatModel(Settings(openai_base_url=ollama.url, model="nope:1b"))
    with pytest.raises(ModelRequestFailed) as info:
        missing.complete(ASK)
    assert "HTTP 404" in str(info.value) and 'model "nope:1b" not found' in str(info.value)
    ollama.stop()
    down = OpenAICompatModel(Settings(openai_base_url=ollama.url))
    with pytest.raises(EndpointUnavailable, match="openai_base_url"):
        down.complete(ASK)


def test_make_model_defaults_to_ollama() -> None:
    assert isinstance(make_model(Settings()), OllamaModel)


# --- the scripted fake ---


def test_scripted_llm_replies_in_order_and_records_prompts() -> None:
    llm = ScriptedLLM(["first", "second"])
    llm.enqueue("third")
    messages: list[Message] = [{"role": "user", "content": "go"}]
    assert [llm.complete(messages) for _ in range(3)] == ["first", "second", "third"]
    messages.append({"role": "assistant", "content": "later change"})
    assert llm.prompts == [[{"role": "user", "content": "go"}]] * 3  # copies, as sent
    assert llm.name == "scripted"


def test_scripted_llm_says_when_it_runs_out() -> None:
    llm = ScriptedLLM(["only"])
    llm.complete(ASK)
    with pytest.raises(ScriptExhausted, match=r"request 2 .*all 1 scripted replies were used"):
        llm.complete(ASK)
    assert len(llm.prompts) == 2  # the request that found nothing is recorded too


def test_a_session_says_at_its_start_when_the_model_is_not_pulled(
    ollama: LoopbackOllama, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The doors' start-up note, the model client and doctor ask Ollama the same question."""
    from kernelwright.agent.doors.jobs import Machine
    from kernelwright.tools import nvml

    monkeypatch.setattr(nvml, "device_info", lambda *a, **k: None)  # a GPU: not the question
    pulled = Machine(Settings(ollama_base_url=ollama.url, model="codellama"))
    assert pulled.missing() == []  # codellama:latest is there
    absent = Machine(Settings(ollama_base_url=ollama.url, model="deepseek-coder-v2:16b"))
    (note,) = absent.missing()
    assert "not pulled" in note and "ollama pull deepseek-coder-v2:16b" in note
    ollama.stop()
    (note,) = pulled.missing()
    assert note.startswith("Ollama not reachable") and "ollama serve" in note
