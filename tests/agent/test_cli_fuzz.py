"""The command line fuzzed with hypothesis: whatever a user types, from nonsense numbers to files
that are not what they claim, `kernelwright` ends with its own exit codes (0, 1, or 2 for a usage
error or one line that says what is wrong), never a traceback.

The run is deterministic (derandomized, no example database), so it cannot pass on one run and
fail on the next. No GPU is asked for (the NVML probe says there is none) and the model's
address refuses at once, so every example is quick.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernelwright.agent.doors import cli
from kernelwright.tools import nvml
from kernelwright.tools.errors import NoGpuError
from tests.conftest import EXAMPLES


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Inputs a user might hand over by mistake, beside good ones."""
    d = tmp_path_factory.mktemp("inputs")
    (d / "latin1.cu").write_bytes(b"__global__ void k(float* x) { /* \xe9t\xe9 */ }\n")
    (d / "latin1.toml").write_bytes(b'entry = "k"\ndescription = "\xe9"\n')
    (d / "garbage.toml").write_text("entry = [[[\n")
    (d / "empty.py").write_text("")
    (d / "binary.py").write_bytes(bytes(range(256)) * 4)
    (d / "records.jsonl").write_text('{"id": "x", "document": "", "metadata": {"index": "ten"}}\n')
    (d / "inf.jsonl").write_text('{"id": "y", "document": "", "metadata": {"speedup": Infinity}}\n')
    (d / "adir").mkdir()
    tasks = d / "tasks"  # copies: a command may write where it is pointed (memory export)
    shutil.copytree(EXAMPLES / "gelu", tasks / "gelu")
    shutil.copy(EXAMPLES / "kernelbench" / "relu_mlp.py", tasks / "relu_mlp.py")
    return {
        **{p.name: p for p in d.iterdir()},
        "gelu": tasks / "gelu",
        "gelu.cu": tasks / "gelu" / "gelu.cu",
        "problem": tasks / "relu_mlp.py",
        "missing": d / "missing" / "x.cu",
    }


NUMBERS = st.sampled_from(["-3", "0", "1", "2.5", "nan", "inf", "-inf", "1e309", "abc", "", "10"])
FLAGS = st.sampled_from(
    [
        "--json",
        "--resume",
        "--no-memory",
        "--no-profile",
        "-h",
        "--help",
        "--version",
        "--backend",
        "--budget",
        "--minutes",
        "--plateau",
        "--model",
        "--out",
        "--bogus",
    ]
)
COMMANDS = st.sampled_from(
    [
        ["check"],
        ["optimize"],
        ["batch"],
        ["doctor"],
        ["memory", "stats"],
        ["memory", "search"],
        ["memory", "import"],
        ["memory", "export"],
        ["memory", "delete"],
        ["memory", "prune"],
        ["eval"],
        ["nonsense"],
        [],
    ]
)


def _argv(files: dict[str, Path]) -> st.SearchStrategy[list[str]]:
    paths = st.sampled_from(sorted(str(p) for p in files.values()))
    words = st.one_of(
        paths, NUMBERS, FLAGS, st.text(max_size=12), st.sampled_from(["nvcc", "nvrtc", "-"])
    )
    return st.builds(lambda c, rest: [*c, *rest], COMMANDS, st.lists(words, max_size=5))


@pytest.fixture
def quiet_machine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[pytest.MonkeyPatch]:
    def no_gpu(*args: object) -> object:
        raise NoGpuError("no NVIDIA GPU found (fuzzing)")

    monkeypatch.setattr(nvml, "device_info", no_gpu)
    (tmp_path / "config.toml").touch()
    for key in [k for k in os.environ if k.startswith("KERNELWRIGHT_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("KERNELWRIGHT_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("KERNELWRIGHT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("KERNELWRIGHT_OLLAMA_BASE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.chdir(tmp_path)
    yield monkeypatch


def run_main(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(sys, "argv", ["kernelwright", *argv])
    try:
        cli.main()
    except SystemExit as exc:
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    return 0


@pytest.mark.slow
def test_whatever_is_typed_ends_in_an_exit_code_not_a_traceback(
    files: dict[str, Path],
    quiet_machine: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    @settings(
        max_examples=150,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(argv=_argv(files))
    def case(argv: list[str]) -> None:
        capsys.readouterr()
        code = run_main(argv, quiet_machine)  # an exception other than SystemExit fails here
        out, err = capsys.readouterr()
        assert code in (0, 1, 2), (argv, code, err)
        assert "Traceback" not in out + err, (argv, err)
        ours = [ln for ln in err.splitlines() if ln.startswith("error: ")]
        if ours:  # kernelwright's own refusal: that one line is all stderr says
            assert len(err.strip().splitlines()) == 1, (argv, err)

    case()


def test_the_fuzzer_sees_a_traceback_when_there_is_one(
    quiet_machine: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # what the property above would meet if a command crashed: an exception out of main()
    def crash(*args: object) -> object:
        raise ValueError("boom")

    quiet_machine.setattr(nvml, "device_info", crash)
    with pytest.raises(ValueError, match="boom"):
        run_main(["check", str(EXAMPLES / "gelu")], quiet_machine)
