"""The language model behind the loop: one small interface (`ChatModel`), Ollama and
OpenAI-compatible servers behind it, and `ScriptedLLM` for tests and demos.

A server that is down, a model that is not pulled or a request that fails becomes one
`ModelError` with the fix in its message; nothing here lets an httpx or ollama traceback out.
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Iterable
from importlib import resources
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypedDict

import httpx
import yaml

from kernelwright.tools.errors import KernelwrightError

from .ollama_tags import NotOllama, pulled_models, tagged
from .privacy import keep_traces_local
from .settings import Settings

if TYPE_CHECKING:  # LangChain and Ollama's client load with the first model, not with `check`
    from langchain_core.messages import BaseMessage


class Message(TypedDict):
    role: Literal["system", "user", "assistant"]
    content: str


class ChatModel(Protocol):
    name: str

    def ensure_ready(self) -> None: ...

    def complete(self, messages: list[Message]) -> str: ...


class ModelError(KernelwrightError):
    """The model server could not give a reply: the message says why and what to do."""


class OllamaUnavailable(ModelError):
    def __init__(self, url: str) -> None:
        self.url = url
        super().__init__(f"Ollama is not reachable at {url}: start it with `ollama serve`")


class ModelNotPulled(ModelError):
    def __init__(self, model: str) -> None:
        self.model = model
        super().__init__(f"model {model} is not pulled: run `ollama pull {model}`")


class EndpointUnavailable(ModelError):
    def __init__(self, url: str) -> None:
        self.url = url
        super().__init__(
            f"no OpenAI-compatible server is reachable at {url}: start it (vLLM, llama.cpp "
            "server, LM Studio) or set openai_base_url"
        )


class ModelRequestFailed(ModelError):
    """The server answered with an error, too late, or with a body we cannot read."""


class ScriptExhausted(ModelError):
    """A ScriptedLLM was asked for more replies than it was given."""


# --- per-model quirks (agent/model_quirks.yaml) ---

_QUIRK_TYPES: dict[str, type | tuple[type, ...]] = {
    "context_length": int,
    "max_context_length": (int, type(None)),
    "stop": list,
    "system_role": bool,
    "code_fence": str,
}


@functools.cache
def _quirk_table() -> dict[str, Any]:
    text = resources.files("kernelwright.agent").joinpath("model_quirks.yaml").read_text()
    table = yaml.safe_load(text)
    for name, entry in [("default", table["default"]), *table["models"].items()]:
        for key, value in entry.items():
            if key not in _QUIRK_TYPES or not isinstance(value, _QUIRK_TYPES[key]):
                raise ValueError(f"model_quirks.yaml: {name}.{key}: unknown key or wrong type")
    return table


def quirks_for(model_name: str) -> dict[str, Any]:
    """The default quirks overlaid with the longest matching name prefix's."""
    table = _quirk_table()
    base = model_name.lower().rsplit("/", 1)[-1]
    best = max((p for p in table["models"] if base.startswith(p.lower())), key=len, default=None)
    merged = {**table["default"], **(table["models"][best] if best else {})}
    return {k: list(v) if isinstance(v, list) else v for k, v in merged.items()}


def fold_system(messages: list[Message]) -> list[Message]:
    """Messages for a model without a system role: system text leads the first user message."""
    system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
    rest = [m for m in messages if m["role"] != "system"]
    if not system:
        return rest
    for i, m in enumerate(rest):
        if m["role"] == "user":
            rest[i] = {"role": "user", "content": f"{system}\n\n{m['content']}"}
            return rest
    return [{"role": "user", "content": system}, *rest]


# --- Ollama ---


class OllamaModel:
    """ChatOllama with kernelwright's settings and the model's quirks."""

    def __init__(self, settings: Settings) -> None:
        self.name = settings.model
        self.base_url = settings.ollama_base_url.rstrip("/")
        self.quirks = quirks_for(settings.model)
        wanted = max(settings.context_length, self.quirks["context_length"])
        cap = self.quirks["max_context_length"]
        self.num_ctx = wanted if cap is None else min(wanted, cap)
        self.timeout_s = settings.request_timeout_s
        from langchain_ollama import ChatOllama

        self._chat = ChatOllama(
            model=settings.model,
            base_url=self.base_url,
            num_ctx=self.num_ctx,  # always: Ollama's default window silently cuts the prompt
            keep_alive=_keep_alive(settings.keep_alive),
            temperature=settings.temperature,
            seed=settings.seed,
            stop=self.quirks["stop"] or None,
            client_kwargs={"timeout": settings.request_timeout_s},
        )

    def ensure_ready(self) -> None:
        """Raise OllamaUnavailable or ModelNotPulled unless the server has the model."""
        try:
            names = pulled_models(self.base_url, 5.0)
        except httpx.HTTPStatusError as exc:
            raise ModelRequestFailed(
                f"{self.base_url}/api/tags answered HTTP {exc.response.status_code} with no "
                "model list: is Ollama the server at ollama_base_url?"
            ) from None
        except (httpx.InvalidURL, httpx.UnsupportedProtocol) as exc:
            raise ModelRequestFailed(
                f"{self.base_url} is not a URL kernelwright can use ({exc}): set "
                "ollama_base_url to http://HOST:PORT"
            ) from None
        except httpx.HTTPError:
            raise OllamaUnavailable(self.base_url) from None
        except NotOllama as exc:
            raise ModelRequestFailed(
                f"{self.base_url} answered, but not as Ollama does ({exc}): is Ollama the "
                "server at ollama_base_url?"
            ) from None
        if tagged(self.name) not in names:
            raise ModelNotPulled(self.name)

    def complete(self, messages: list[Message]) -> str:
        import ollama

        if not self.quirks["system_role"]:
            messages = fold_system(messages)
        try:
            reply = self._chat.invoke([_to_langchain(m) for m in messages])
        except (ConnectionError, httpx.ConnectError, httpx.ConnectTimeout):
            raise OllamaUnavailable(self.base_url) from None
        except httpx.TimeoutException:
            raise ModelRequestFailed(
                f"Ollama gave no reply from {self.name} within {self.timeout_s:g} s "
                "(raise request_timeout_s, or use a smaller model)"
            ) from None
        except httpx.TransportError as exc:
            raise ModelRequestFailed(
                f"the connection to Ollama at {self.base_url} broke mid-reply "
                f"({type(exc).__name__}): is the server still running?"
            ) from None
        except ollama.ResponseError as exc:
            if exc.status_code == 404 and "not found" in str(exc.error):
                raise ModelNotPulled(self.name) from None
            status = f" (HTTP {exc.status_code})" if exc.status_code > 0 else ""
            raise ModelRequestFailed(
                f"Ollama at {self.base_url} failed on {self.name}: {exc.error}{status}"
            ) from None
        except ValueError as exc:  # an empty stream, or a line that is not Ollama's JSON
            first = (str(exc).splitlines() or [type(exc).__name__])[0]
            raise ModelRequestFailed(
                f"the reply from {self.name} at {self.base_url} could not be read: {first}"
            ) from None
        return reply.text  # tool calls, if any, are dropped: the loop reads text


def _keep_alive(value: str) -> int | str:
    """Ollama takes a duration ("10m") or seconds as a number ("-1": keep the model loaded)."""
    return int(value) if value.lstrip("-").isdigit() else value


def _to_langchain(message: Message) -> BaseMessage:
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

    kind = {"system": SystemMessage, "user": HumanMessage, "assistant": AIMessage}
    return kind[message["role"]](content=message["content"])


# --- OpenAI-compatible endpoints ---


class OpenAICompatModel:
    """POST /v1/chat/completions (vLLM, llama.cpp server, LM Studio, Ollama's own /v1)."""

    def __init__(self, settings: Settings, max_tokens: int | None = None) -> None:
        self.name = settings.model
        base = settings.openai_base_url.rstrip("/")
        self.base_url = base.removesuffix("/v1")  # both ".../v1" and the bare host work
        self.quirks = quirks_for(settings.model)
        self.temperature = settings.temperature
        self.seed = settings.seed
        self.max_tokens = max_tokens
        self.timeout_s = settings.request_timeout_s
        self.headers = (
            {"Authorization": f"Bearer {settings.openai_api_key}"}
            if settings.openai_api_key
            else {}
        )

    def ensure_ready(self) -> None:
        """Raise EndpointUnavailable unless something answers at the base URL."""
        try:
            httpx.get(f"{self.base_url}/v1/models", headers=self.headers, timeout=5.0)
        except httpx.HTTPError:
            raise EndpointUnavailable(self.base_url) from None

    def complete(self, messages: list[Message]) -> str:
        if not self.quirks["system_role"]:
            messages = fold_system(messages)
        body: dict[str, Any] = {
            "model": self.name,
            "messages": messages,
            "temperature": self.temperature,
        }
        if self.seed is not None:
            body["seed"] = self.seed
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        url = f"{self.base_url}/v1/chat/completions"
        try:
            reply = httpx.post(url, json=body, headers=self.headers, timeout=self.timeout_s)
        except (httpx.ConnectError, httpx.ConnectTimeout):
            raise EndpointUnavailable(self.base_url) from None
        except httpx.TimeoutException:
            raise ModelRequestFailed(
                f"{url} gave no reply within {self.timeout_s:g} s (raise request_timeout_s)"
            ) from None
        except httpx.HTTPError as exc:
            raise ModelRequestFailed(f"{url}: {type(exc).__name__}: {exc}") from None
        if reply.status_code >= 400:
            raise ModelRequestFailed(
                f"{url} answered HTTP {reply.status_code} for model {self.name}: "
                f"{_error_detail(reply)}"
            )
        try:
            content = reply.json()["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise ModelRequestFailed(f"{url} sent a reply without choices[0].message") from None
        return content or ""


def _error_detail(reply: httpx.Response) -> str:
    try:
        error = reply.json().get("error") or reply.json().get("detail")
    except (ValueError, AttributeError):
        return reply.text.strip()[:200] or "(empty body)"
    if isinstance(error, dict):
        error = error.get("message", error)
    return str(error)[:200]


# --- a fake that ships with the code ---


class ScriptedLLM:
    """Replies from a script, in order; every prompt it was sent is kept in `prompts`."""

    name = "scripted"

    def __init__(self, replies: Iterable[str] = ()) -> None:
        self.replies: deque[str] = deque(replies)
        self.prompts: list[list[Message]] = []
        self.used = 0

    def enqueue(self, *replies: str) -> None:
        self.replies.extend(replies)

    def ensure_ready(self) -> None:
        pass

    def complete(self, messages: list[Message]) -> str:
        self.prompts.append([Message(role=m["role"], content=m["content"]) for m in messages])
        if not self.replies:
            raise ScriptExhausted(
                f"ScriptedLLM has no reply left for request {len(self.prompts)} "
                f"(all {self.used} scripted replies were used): enqueue more replies"
            )
        self.used += 1
        return self.replies.popleft()


def make_model(settings: Settings) -> ChatModel:
    """The model client that settings.provider names, made with tracing off unless
    settings.allow_tracing (for callers that did not start at an entry point)."""
    keep_traces_local(settings.allow_tracing)
    if settings.provider == "openai":
        return OpenAICompatModel(settings)
    return OllamaModel(settings)
