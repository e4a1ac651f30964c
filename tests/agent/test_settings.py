"""Settings: defaults < config file < KERNELWRIGHT_* environment < command-line flags."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelwright.agent.settings import load


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    import os

    for key in list(os.environ):
        if key.startswith("KERNELWRIGHT_"):
            monkeypatch.delenv(key)
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    config = tmp_path / "config.toml"
    config.touch()  # empty: defaults only (a named file that does not exist is an error)
    monkeypatch.setenv("KERNELWRIGHT_CONFIG", str(config))
    return config


def test_defaults() -> None:
    s = load()
    assert s.model == "qwen2.5-coder:7b"
    assert s.ollama_base_url == "http://127.0.0.1:11434"
    assert s.compile_backend == "nvrtc"
    assert s.run_timeout_s == 20.0
    assert s.data_dir.name == "kernelwright"


def test_config_file_overrides_defaults(clean_env: Path) -> None:
    clean_env.write_text('model = "from-file"\ncompile_backend = "nvcc"\nrun_timeout_s = 5\n')
    s = load()
    assert (s.model, s.compile_backend, s.run_timeout_s) == ("from-file", "nvcc", 5.0)
    assert s.timing_budget_s == 0.6  # untouched fields keep their defaults


def test_env_overrides_file(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clean_env.write_text('model = "from-file"\ncompile_backend = "nvcc"\n')
    monkeypatch.setenv("KERNELWRIGHT_MODEL", "from-env")
    monkeypatch.setenv("KERNELWRIGHT_DATA_DIR", "/tmp/kw-data")
    s = load()
    assert s.model == "from-env" and s.compile_backend == "nvcc"
    assert s.data_dir == Path("/tmp/kw-data")


def test_flags_override_env_and_none_is_ignored(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clean_env.write_text('compile_backend = "nvcc"\n')
    monkeypatch.setenv("KERNELWRIGHT_MODEL", "from-env")
    s = load(model="from-flag", compile_backend=None)
    assert s.model == "from-flag"
    assert s.compile_backend == "nvcc"  # None means the flag was not given


def test_invalid_value_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from kernelwright.agent.settings import SettingsError

    monkeypatch.setenv("KERNELWRIGHT_COMPILE_BACKEND", "gcc")
    with pytest.raises(SettingsError, match=r"compile_backend.*KERNELWRIGHT_COMPILE_BACKEND"):
        load()


def test_memory_defaults_to_the_data_dir_offline_and_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNELWRIGHT_DATA_DIR", "/tmp/kw-data")
    s = load()
    assert s.memory.enabled and s.memory.embedding == "hash" and s.memory.url is None
    assert s.memory_dir == Path("/tmp/kw-data/memory")
    assert load().memory.dir is None


def test_memory_table_in_the_file_and_one_key_from_the_environment(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clean_env.write_text(
        '[memory]\ndir = "/srv/kw-memory"\nembedding = "ollama:nomic-embed-text"\npairs = 2\n'
    )
    monkeypatch.setenv("KERNELWRIGHT_MEMORY__URL", "http://gpu-box:8000")
    s = load()
    assert s.memory_dir == Path("/srv/kw-memory")
    assert s.memory.embedding == "ollama:nomic-embed-text" and s.memory.pairs == 2
    assert s.memory.url == "http://gpu-box:8000"
    monkeypatch.setenv("KERNELWRIGHT_MEMORY__ENABLED", "false")
    assert load().memory.enabled is False


@pytest.mark.parametrize(
    ("key", "value", "says"),
    [
        ("EMBEDDING", "bert", 'expected "hash" or "ollama:MODEL"'),
        ("PAIRS", "-1", "greater than or equal to 0"),
    ],
)
def test_a_bad_memory_setting_names_its_variable(
    monkeypatch: pytest.MonkeyPatch, key: str, value: str, says: str
) -> None:
    from kernelwright.agent.settings import SettingsError

    monkeypatch.setenv(f"KERNELWRIGHT_MEMORY__{key}", value)
    with pytest.raises(SettingsError) as err:
        load()
    message = str(err.value)
    assert f"'memory.{key.lower()}'" in message and says in message
    assert f"KERNELWRIGHT_MEMORY__{key}" in message and "\n" not in message


@pytest.mark.parametrize(
    ("env", "value", "words"),
    [
        ("RUN_TIMEOUT_S", "-1", "greater than 0"),
        ("RUN_TIMEOUT_S", "nan", "finite number"),
        ("TIMING_BUDGET_S", "0", "greater than 0"),
        ("WORKER_HOST_MEMORY_GIB", "inf", "finite number"),
        ("TEMPERATURE", "nan", "finite number"),
        ("TEMPERATURE", "-0.5", "greater than or equal to 0"),
        ("CONTEXT_LENGTH", "0", "greater than 0"),
        ("MODEL", "", "at least 1 character"),
    ],
)
def test_nonsense_values_are_refused_in_one_line(
    monkeypatch: pytest.MonkeyPatch, env: str, value: str, words: str
) -> None:
    from kernelwright.agent.settings import SettingsError

    monkeypatch.setenv(f"KERNELWRIGHT_{env}", value)
    with pytest.raises(SettingsError, match=f"KERNELWRIGHT_{env}") as err:
        load()
    assert words in str(err.value) and "\n" not in str(err.value)


def test_an_unknown_key_in_the_config_file_is_named(clean_env: Path) -> None:
    from kernelwright.agent.settings import SettingsError

    clean_env.write_text('modle = "qwen2.5-coder:7b"\n')
    with pytest.raises(SettingsError, match="unknown setting 'modle'"):
        load()


def test_a_memory_variable_that_is_not_json_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from kernelwright.agent.settings import SettingsError

    monkeypatch.setenv("KERNELWRIGHT_MEMORY", "garbage")
    with pytest.raises(SettingsError, match="KERNELWRIGHT_MEMORY__<KEY>"):
        load()


@pytest.mark.parametrize(
    ("host", "url"),
    [
        ("", "http://127.0.0.1:11434"),
        ("0.0.0.0", "http://127.0.0.1:11434"),
        ("0.0.0.0:8080", "http://127.0.0.1:8080"),
        ("gpu-box", "http://gpu-box:11434"),
        ("gpu-box:9000", "http://gpu-box:9000"),
        ("https://ollama.lan:443", "https://ollama.lan:443"),
        ("[::1]:11500", "http://[::1]:11500"),
    ],
)
def test_ollamas_own_host_variable_is_honoured(
    monkeypatch: pytest.MonkeyPatch, host: str, url: str
) -> None:
    monkeypatch.setenv("OLLAMA_HOST", host)
    assert load().ollama_base_url == url
    monkeypatch.setenv("KERNELWRIGHT_OLLAMA_BASE_URL", "http://127.0.0.1:1")
    assert load().ollama_base_url == "http://127.0.0.1:1"  # kernelwright's own setting wins


def test_a_config_file_named_but_missing_is_an_error_not_ignored(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kernelwright.agent.settings import SettingsError

    clean_env.unlink()  # the file KERNELWRIGHT_CONFIG names is gone
    with pytest.raises(SettingsError) as info:
        load()
    message = str(info.value)
    assert "KERNELWRIGHT_CONFIG" in message and str(clean_env) in message and "\n" not in message
    monkeypatch.delenv("KERNELWRIGHT_CONFIG")  # the default file may be absent: defaults
    monkeypatch.setenv("XDG_CONFIG_HOME", str(clean_env.parent / "nowhere"))
    load()  # no error: the default file may be absent


@pytest.mark.skipif(not __import__("shutil").which("kernelwright"), reason="no kernelwright script")
def test_the_cli_says_so_in_one_line(tmp_path: Path) -> None:
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELWRIGHT_")}
    env["KERNELWRIGHT_CONFIG"] = str(tmp_path / "typo.toml")
    done = subprocess.run(
        ["kernelwright", "doctor"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "typo.toml, which does not exist" in done.stderr.strip().splitlines()[-1]
