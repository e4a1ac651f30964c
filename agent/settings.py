"""Settings: defaults, then a TOML file in the user's config directory, then KERNELWRIGHT_*
variables, then command-line flags. The only module that reads the environment or config files."""

from __future__ import annotations

import os
import re
import tomllib
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, Literal

import platformdirs
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)
from pydantic_settings import SettingsError as PydanticSettingsError

from kernelwright.tools.errors import KernelwrightError, TaskError
from kernelwright.tools.files import read_text

APP = "kernelwright"


def config_file() -> Path:
    override = os.environ.get("KERNELWRIGHT_CONFIG")
    return Path(override) if override else Path(platformdirs.user_config_dir(APP)) / "config.toml"


class MemorySettings(BaseModel):
    """The memory: `[memory]` in the config file, KERNELWRIGHT_MEMORY__<KEY> in the environment."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    dir: Path | None = None  # the embedded store and the reasoning graph; None: data_dir/memory
    url: str | None = None  # a shared `chroma run` server (HttpClient) instead of the directory
    # "hash": offline code-aware hashing; "ollama:MODEL" (e.g. ollama:nomic-embed-text): Ollama's
    # /api/embed at ollama_base_url. A store keeps the embedding it was made with.
    embedding: str = "hash"
    pairs: int = Field(default=3, ge=0)  # contrastive pairs at most in a propose prompt
    pair_tokens: int = Field(default=3000, ge=0)  # their token budget (about 4 characters each)

    @field_validator("embedding")
    @classmethod
    def _embedding(cls, value: str) -> str:
        if value != "hash" and not re.fullmatch(r"ollama:\S+", value):
            raise ValueError('expected "hash" or "ollama:MODEL", e.g. ollama:nomic-embed-text')
        return value


class TuneSettings(BaseModel):
    """`kernelwright tune` after `optimize` (and in batch, chat and MCP): `[tune]` in the config
    file, KERNELWRIGHT_TUNE__<KEY> in the environment."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True  # tune the run's best kernel when the loop ends (--no-tune: off)
    budget: int = Field(default=24, ge=1)  # configurations checked at most
    minutes: float = Field(default=3.0, gt=0, allow_inf_nan=False)  # its wall time at most
    numerics: bool = False  # also try fast math, flush-to-zero, approximate division and sqrt


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="KERNELWRIGHT_", env_nested_delimiter="__", extra="ignore"
    )

    model: str = Field(default="qwen2.5-coder:7b", min_length=1)
    # Ollama's own OLLAMA_HOST, when set and nothing of kernelwright's says otherwise
    ollama_base_url: str = Field(default_factory=lambda: ollama_host_url())
    data_dir: Path = Field(default_factory=lambda: Path(platformdirs.user_data_dir(APP)))
    cache_dir: Path = Field(default_factory=lambda: Path(platformdirs.user_cache_dir(APP)))
    compile_backend: Literal["nvrtc", "nvcc"] = "nvrtc"
    run_timeout_s: float = Field(default=20.0, gt=0, allow_inf_nan=False)
    compile_timeout_s: float = Field(default=60.0, gt=0, allow_inf_nan=False)
    timing_budget_s: float = Field(default=0.6, gt=0, allow_inf_nan=False)
    # KernelBench: each side timed in this many processes, in turns (fewer where GPU memory is
    # short); one process a side reads a few percent apart by process on a short forward
    timing_processes: int = Field(default=3, ge=1, le=8)
    worker_host_memory_gib: float = Field(default=16.0, gt=0, allow_inf_nan=False)
    provider: Literal["ollama", "openai"] = "ollama"
    context_length: int = Field(default=16384, gt=0)  # Ollama's num_ctx: always sent
    keep_alive: str = "10m"
    temperature: float = Field(default=0.2, ge=0, le=2, allow_inf_nan=False)
    seed: int | None = None
    openai_base_url: str = "http://127.0.0.1:8000"
    openai_api_key: str = ""
    request_timeout_s: float = Field(default=300.0, gt=0, allow_inf_nan=False)
    allow_tracing: bool = Field(
        default=False,
        description=(
            "Leave LangSmith/LangChain tracing and OpenTelemetry exporters as the environment "
            "sets them (LANGSMITH_TRACING, LANGCHAIN_TRACING_V2, OTEL_*...). Off by default: "
            "kernelwright then switches them all off at start, as prompts and traces carry "
            "the kernels' source. Read from KERNELWRIGHT_ALLOW_TRACING or the config file only."
        ),
    )
    memory: MemorySettings = Field(default_factory=MemorySettings)
    tune: TuneSettings = Field(default_factory=TuneSettings)

    @property
    def memory_dir(self) -> Path:
        return self.memory.dir or self.data_dir / "memory"

    @property
    def builds_dir(self) -> Path:
        """The build cache the loop's compile step fills and the verifier reads."""
        return self.cache_dir / "builds"

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Highest priority first: flags, environment, the config file, then the defaults.
        path = config_file()
        if os.environ.get("KERNELWRIGHT_CONFIG") and not path.exists():
            # the default file may be absent; one the user named must not be, silently
            raise SettingsError(
                f"KERNELWRIGHT_CONFIG names {path}, which does not exist (create it, or unset "
                "the variable to use the default config file)"
            )
        return (init_settings, env_settings, ConfigFile(settings_cls, path))


def tracing_allowed() -> bool:
    """The allow_tracing setting, read at start before any flag. Settings that cannot be read
    count as False: tracing stays off, and load() reports the problem."""
    try:
        return Settings().allow_tracing
    except Exception:  # a bad value or a broken config file: fail closed
        return False


class SettingsError(KernelwrightError):
    """A setting has a bad value or the config file cannot be read."""


class ConfigFile(TomlConfigSettingsSource):
    """The config file, read as task files are: one line naming it if it cannot be read, is not
    UTF-8 or is not TOML."""

    def _read_file(self, file_path: Path | Traversable) -> dict[str, Any]:
        try:
            data = tomllib.loads(read_text(Path(str(file_path))))
        except TaskError as exc:  # not UTF-8
            raise SettingsError(str(exc)) from None
        except tomllib.TOMLDecodeError as exc:
            raise SettingsError(f"{file_path}: not valid TOML: {exc}") from None
        except OSError as exc:
            raise SettingsError(f"{file_path}: cannot read: {exc.strerror}") from None
        unknown = sorted(set(data) - set(Settings.model_fields))
        if unknown:  # a typo would otherwise be ignored without a word
            raise SettingsError(
                f"{file_path}: unknown setting {unknown[0]!r} (known: "
                + ", ".join(sorted(Settings.model_fields))
                + ")"
            )
        return data


def ollama_host_url() -> str:
    """Ollama's OLLAMA_HOST ("HOST", "HOST:PORT" or a URL; 0.0.0.0 is where it listens, so
    here), else its default address."""
    host = os.environ.get("OLLAMA_HOST", "").strip()
    if not host:
        return "http://127.0.0.1:11434"
    scheme, sep, rest = host.partition("://")
    if not sep:
        scheme, rest = "http", host
    m = re.fullmatch(r"(?P<name>\[[^\]]*\]|[^:/]*)(?::(?P<port>\d+))?/?", rest)
    name, port = (m["name"], m["port"] or "11434") if m else (rest, "11434")
    if name in ("", "0.0.0.0", "[::]"):
        name = "127.0.0.1"
    return f"{scheme}://{name}:{port}"


def load(**overrides: object) -> Settings:
    """Settings with the flags a user gave (None means not given)."""
    try:
        return Settings(**{k: v for k, v in overrides.items() if v is not None})  # type: ignore[arg-type]
    except PydanticSettingsError as exc:  # a nested setting's variable that is not JSON
        table = next((t for t in ("memory", "tune") if t in str(exc)), None)
        raise SettingsError(
            f"{exc}: KERNELWRIGHT_{table.upper()} must be a JSON object (or set one key with "
            f"KERNELWRIGHT_{table.upper()}__<KEY>)"
            if table
            else str(exc)
        ) from None
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(x) for x in first["loc"])
        raise SettingsError(
            f"setting {field!r}: {first['msg'].removeprefix('Value error, ')} (flag, KERNELWRIGHT_"
            f"{field.upper().replace('.', '__')} or {config_file()})"
        ) from None
