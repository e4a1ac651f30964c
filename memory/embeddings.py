"""Embedding functions for the memory, registered with Chroma so a new process reopens the store.

Chroma's default embedding downloads a model and fails offline, so the memory always names its
own: `CodeHashEmbedding` (deterministic feature hashing of CUDA source, numpy only) by default,
or `OllamaEmbedding` (a local Ollama server's /api/embed, e.g. nomic-embed-text) as an option.
"""

from __future__ import annotations

import re
import zlib
from functools import lru_cache
from typing import Any

import httpx
import numpy as np
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings, Space
from chromadb.utils.embedding_functions import register_embedding_function

from kernelwright.tools.errors import KernelwrightError

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_TOKEN = re.compile(r"__\w+__|[A-Za-z_]\w*|\d+(?:\.\d*)?[fFuUlL]?|<<|>>|->|[-+*/%&|^<>=!]=?")
_PARTS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")

# What tells one optimisation from another: memory spaces, warp primitives, vector types, atomics.
CUDA_KEYWORDS = frozenset(
    {
        "__shared__",
        "__syncthreads",
        "__syncwarp",
        "__restrict__",
        "__ldg",
        "__launch_bounds__",
        "__constant__",
        "__forceinline__",
        "__shfl_sync",
        "__shfl_down_sync",
        "__shfl_up_sync",
        "__shfl_xor_sync",
        "__ballot_sync",
        "__fmaf_rn",
        "__expf",
        "__half",
        "__half2",
        "__nv_bfloat16",
        "float2",
        "float4",
        "int4",
        "half2",
        "atomicAdd",
        "atomicMax",
        "atomicCAS",
        "cooperative_groups",
        "wmma",
        "mma_sync",
        "cp",
        "async",
        "pragma",
        "unroll",
        "rsqrtf",
        "fmaf",
        "blockIdx",
        "threadIdx",
        "gridDim",
        "blockDim",
        "warpSize",
    }
)
KEYWORD_WEIGHT = 3.0
BIGRAM_WEIGHT = 0.5


@lru_cache(maxsize=1 << 16)
def _slot(feature: str, dim: int) -> tuple[int, float]:
    """Stable bucket and sign of a feature (crc32: the same in every process, unlike hash())."""
    h = zlib.crc32(feature.encode())
    return h % dim, 1.0 if (h >> 31) & 1 else -1.0


def code_tokens(source: str) -> list[str]:
    """Normalised tokens of CUDA source: comments dropped, identifiers kept whole and also split
    on camelCase and underscores (lower-cased), numbers and operators kept."""
    out: list[str] = []
    for tok in _TOKEN.findall(_COMMENT.sub(" ", source)):
        if tok[0].isalpha() or tok[0] == "_":
            out.append(tok)
            parts = [p.lower() for p in _PARTS.findall(tok)]
            if len(parts) > 1:
                out.extend("~" + p for p in parts)
        else:
            out.append(tok)
    return out


def hash_embed(source: str, dim: int) -> np.ndarray:
    """One L2-normalised vector: signed feature hashing of tokens and adjacent-token bigrams."""
    toks = code_tokens(source)
    idx: list[int] = []
    val: list[float] = []
    prev = ""
    for tok in toks:
        i, s = _slot(tok, dim)
        idx.append(i)
        val.append(s * (KEYWORD_WEIGHT if tok in CUDA_KEYWORDS else 1.0))
        if tok[0] != "~":
            if prev:
                i, s = _slot(prev + " " + tok, dim)
                idx.append(i)
                val.append(s * BIGRAM_WEIGHT)
            prev = tok
    vec = np.bincount(np.asarray(idx, dtype=np.int64), weights=val, minlength=dim)[:dim]
    norm = float(np.linalg.norm(vec))
    if norm == 0.0:  # empty source: a fixed unit vector, never zeros (cosine needs a norm)
        unit = np.zeros(dim, dtype=np.float32)
        unit[0] = 1.0
        return unit
    return (vec / norm).astype(np.float32)


@register_embedding_function
class CodeHashEmbedding(EmbeddingFunction[Documents]):
    """Deterministic, offline embedding of CUDA source (no model, no torch, no network)."""

    def __init__(self, dim: int = 384) -> None:
        self.dim = dim

    def __call__(self, input: Documents) -> Embeddings:
        return [hash_embed(doc, self.dim) for doc in input]

    @staticmethod
    def name() -> str:
        return "kernelwright-code-hash"

    def default_space(self) -> Space:
        return "cosine"

    def get_config(self) -> dict[str, Any]:
        return {"dim": self.dim}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> CodeHashEmbedding:
        return CodeHashEmbedding(dim=int(config.get("dim", 384)))


class EmbeddingUnavailable(KernelwrightError):
    """The embedding server cannot be reached or refused the request."""


@register_embedding_function
class OllamaEmbedding(EmbeddingFunction[Documents]):
    """Embeddings from a local Ollama server (POST /api/embed), e.g. nomic-embed-text."""

    def __init__(
        self,
        base_url: str = "http://localhost:11434",
        model: str = "nomic-embed-text",
        timeout_s: float = 60.0,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.timeout_s = timeout_s

    def __call__(self, input: Documents) -> Embeddings:
        url = f"{self.base_url}/api/embed"
        try:
            resp = httpx.post(
                url, json={"model": self.model, "input": list(input)}, timeout=self.timeout_s
            )
            resp.raise_for_status()
            vectors = resp.json()["embeddings"]
        except httpx.HTTPError as exc:
            raise EmbeddingUnavailable(
                f"Ollama embedding at {url} (model {self.model}) failed: {exc}; "
                f"is `ollama serve` running and `ollama pull {self.model}` done?"
            ) from exc
        except (KeyError, ValueError) as exc:
            raise EmbeddingUnavailable(f"Ollama at {url} returned no embeddings: {exc}") from exc
        return [np.asarray(v, dtype=np.float32) for v in vectors]

    @staticmethod
    def name() -> str:
        return "kernelwright-ollama"

    def default_space(self) -> Space:
        return "cosine"

    def get_config(self) -> dict[str, Any]:
        return {"base_url": self.base_url, "model": self.model}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> OllamaEmbedding:
        return OllamaEmbedding(base_url=config["base_url"], model=config["model"])
