"""Which models an Ollama server has (its /api/tags): the one check the model client, `doctor`
and a session's start all use, so they agree on what "pulled" means."""

from __future__ import annotations

import httpx


def tagged(name: str) -> str:
    """A model name as Ollama lists it: no tag means ":latest" (a registry's host:port before
    the last "/" is not a tag)."""
    return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"


class NotOllama(ValueError):
    """A server answered /api/tags, but not as Ollama does."""


def pulled_models(base_url: str, timeout_s: float) -> list[str]:
    """The models an Ollama server has, from its /api/tags: the one check every front door
    uses. Raises httpx.HTTPError (unreachable, an HTTP error), httpx.InvalidURL, or
    NotOllama."""
    reply = httpx.get(f"{base_url.rstrip('/')}/api/tags", timeout=timeout_s)
    reply.raise_for_status()
    try:
        body = reply.json()
    except ValueError:
        raise NotOllama("its /api/tags is not JSON") from None
    models = body.get("models") if isinstance(body, dict) else None
    if not isinstance(models, list) or not all(isinstance(m, dict) for m in models):
        raise NotOllama("its /api/tags has no list of models")
    names = [m.get(k) for m in models for k in ("name", "model")]
    return list(dict.fromkeys(n for n in names if isinstance(n, str) and n))
