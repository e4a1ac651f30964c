"""No code leaves the machine: tracing that dependencies do on their own is switched off.

LangChain and LangGraph send every prompt and every graph state (the kernels' source) to
LangSmith when LANGSMITH_TRACING or LANGCHAIN_TRACING_V2 is "true" in the environment, which
many LangChain users have set; OpenTelemetry exporters and chromadb's telemetry are switched on
the same way. Each entry point calls `keep_traces_local()` before it builds a client; the
processes it starts inherit the result. Only the `allow_tracing` setting leaves the user's
variables as they are.
"""

from __future__ import annotations

import os
import sys

from .settings import tracing_allowed

# Set to these values: LangSmith reads LANGSMITH_X before LANGCHAIN_X, LangChain's old tracer
# LANGCHAIN_TRACING; OTEL_SDK_DISABLED makes the OpenTelemetry SDK's providers no-ops.
OFF = {
    "LANGSMITH_TRACING": "false",
    "LANGSMITH_TRACING_V2": "false",
    "LANGCHAIN_TRACING": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "OTEL_SDK_DISABLED": "true",
    "OTEL_TRACES_EXPORTER": "none",
    "OTEL_METRICS_EXPORTER": "none",
    "OTEL_LOGS_EXPORTER": "none",
    "ANONYMIZED_TELEMETRY": "False",  # chromadb's product telemetry
}
# Removed: where traces would go and the keys to send them with, LangChain's v1 tracer handler
# (any value makes LangChain raise), and chromadb's own OpenTelemetry export.
GONE = (
    "LANGSMITH_ENDPOINT",
    "LANGCHAIN_ENDPOINT",
    "LANGSMITH_RUNS_ENDPOINTS",
    "LANGSMITH_API_KEY",
    "LANGCHAIN_API_KEY",
    "LANGCHAIN_HANDLER",
    "CHROMA_OTEL_COLLECTION_ENDPOINT",
    "CHROMA_OTEL_GRANULARITY",
)


LOOPBACK = ("127.0.0.1", "localhost", "::1")


def loopback_unproxied() -> None:
    """Loopback addresses left out of any HTTP proxy the environment names: with HTTP_PROXY set
    and no NO_PROXY for 127.0.0.1, requests to the local Ollama, an embedding server or Chroma
    went to the proxy (a review), which is no longer this machine. Both spellings get the
    union of what either held and loopback (httpx and urllib read the lower-case one first:
    writing loopback alone there had hidden a user's NO_PROXY entries); a "*" (no proxy for
    anything) is left as it is."""
    have = [
        h.strip()
        for name in ("NO_PROXY", "no_proxy")
        for h in os.environ.get(name, "").split(",")
        if h.strip()
    ]
    if "*" in have:
        return
    merged = ",".join(dict.fromkeys([*have, *LOOPBACK]))
    for name in ("NO_PROXY", "no_proxy"):
        os.environ[name] = merged


def keep_traces_local(allow_tracing: bool | None = None) -> bool:
    """Switch every tracing variable off in this process unless tracing is allowed (None: ask
    the settings), and keep loopback requests off any proxy (loopback_unproxied, whatever
    tracing is set to). True when the tracing variables were switched off."""
    loopback_unproxied()
    if allow_tracing is None:
        allow_tracing = tracing_allowed()
    if allow_tracing:
        return False
    os.environ.update(OFF)
    for name in GONE:
        os.environ.pop(name, None)
    utils = sys.modules.get("langsmith.utils")
    if utils is not None:  # LangSmith caches the variables it has read: forget them
        utils.get_env_var.cache_clear()
    return True
