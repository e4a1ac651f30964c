"""`kernelwright chat` as a user meets it: in a real terminal (pexpect), with a scripted stand-in
for the model and GPU reports replayed from a recording; and its word rules, one by one."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pexpect
import pytest
from rich.console import Console

from kernelwright.agent.doors import jobs
from kernelwright.agent.doors.chat import ChatSession, Intent, parse
from kernelwright.agent.llm import ScriptedLLM
from kernelwright.agent.settings import Settings
from kernelwright.tools.backend import ReplayGpu
from kernelwright.tools.results import Attempt
from kernelwright.tools.spec import CudaTask
from kernelwright.tools.task import load_candidate, load_task
from tests.agent.test_graph import FASTER, FASTER_LAUNCH, WRONG, replay_for, reply, report
from tests.conftest import EXAMPLES

KW = shutil.which("kernelwright")
needs_script = pytest.mark.skipif(KW is None, reason="the kernelwright script is not installed")


def copy_gelu(tmp_path: Path) -> Path:
    """A copy of examples/gelu, so that accepting a kernel writes into the test's directory."""
    shutil.copytree(EXAMPLES / "gelu", tmp_path / "gelu")
    return tmp_path / "gelu"


def gelu_replay(task_dir: Path) -> ReplayGpu:
    """Reports as the GPU gave them: the original 1.00x, FASTER 1.30x, WRONG rejected."""
    task = load_task(task_dir)
    assert isinstance(task, CudaTask)
    gpu = replay_for(
        task,
        [
            (FASTER, FASTER_LAUNCH, report(task, "correct", 1.3)),
            (WRONG, FASTER_LAUNCH, report(task, "wrong", None, "output 'y' not fully written")),
        ],
    )
    # FASTER as its file gives it: its launch names its knobs (faster.toml)
    faster = load_candidate(task, EXAMPLES / "gelu" / "candidates" / "faster.cu")
    gpu.add(task, faster, report(task, "correct", 1.3))
    return gpu


def write_stand_ins(
    where: Path, replies: list[Any], gpu: ReplayGpu | None, name: str = "stand_ins.json"
) -> Path:
    """The file `--test-stand-ins` reads: scripted replies and, if given, a GPU recording
    (without one, the real GPU answers and its architecture is the one compiled for)."""
    spec: dict[str, Any] = {"replies": replies, "prompts_log": "prompts.jsonl"}
    if gpu is not None:
        spec["arch"] = "sm_90"
        with (where / "gpu.jsonl").open("w") as f:
            for kind, table in (("check", gpu.checks), ("profile", gpu.profiles)):
                for key, value in table.items():
                    row = {"kind": kind, "key": key, "value": value.model_dump(mode="json")}
                    f.write(json.dumps(row) + "\n")
        spec["replay"] = "gpu.jsonl"
    path = where / name
    path.write_text(json.dumps(spec))
    return path


def door_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELWRIGHT_")}
    (tmp_path / "config.toml").touch()  # no user config (a test may have written one)
    env.update(
        KERNELWRIGHT_DATA_DIR=str(tmp_path / "data"),
        KERNELWRIGHT_CONFIG=str(tmp_path / "config.toml"),
        KERNELWRIGHT_OLLAMA_BASE_URL="http://127.0.0.1:9",
        KERNELWRIGHT_TUNE__ENABLED="false",  # the stand-ins replay the loop's checks only
        PROMPT_TOOLKIT_NO_CPR="1",  # pexpect's terminal does not answer cursor queries
    )
    return env


class Terminal:
    """A chat session in a pseudo-terminal; `transcript` is what the user saw, escapes removed."""

    def __init__(
        self, tmp_path: Path, *args: str, prompt: str = "kernelwright>", timeout: float = 90
    ) -> None:
        assert KW is not None
        self.raw = io.StringIO()
        self.child = pexpect.spawn(
            KW,
            ["chat", *args],
            env=door_env(tmp_path),
            cwd=str(tmp_path),
            dimensions=(50, 220),
            encoding="utf-8",
            timeout=timeout,
            use_poll=True,  # select() fails on a descriptor past 1024, in a long pytest process
            # started as from a background job, which ignores SIGINT: Ctrl-C must stop a run
            # all the same (the session takes it back), and tests launched with `&` see it
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
        )
        self.child.logfile_read = self.raw
        self.prompt = prompt
        self.expect(prompt)

    def expect(self, text: str) -> None:
        """Wait for `text` as the user reads it: colours and styles may change anywhere in it."""
        self.child.expect("".join(re.escape(ch) + STYLE for ch in text))

    def say(self, line: str, *shows: str, prompt: str | None = None) -> None:
        """Type a line; wait for each text in `shows`, in order, then for the next prompt."""
        self.child.sendline(line)
        for text in shows:
            self.expect(text)
        self.prompt = prompt or self.prompt
        self.expect(self.prompt)

    @property
    def transcript(self) -> str:
        return re.sub(STYLE, "", self.raw.getvalue()).replace("\r", "")


STYLE = r"(?:\x1b\[[0-9;?]*[A-Za-z])*"  # terminal escapes: colours, styles, cursor moves


# --- the session in a terminal ---


@needs_script
def test_a_session_from_load_to_keep_and_a_run_stopped_by_ctrl_c(
    tmp_path: Path, nvrtc: None
) -> None:
    task_dir = copy_gelu(tmp_path)
    hinted = reply(FASTER.replace("// ", "// tiled: ", 1), FASTER_LAUNCH, ["shared-memory tiling"])
    stand_ins = write_stand_ins(
        tmp_path,
        [
            "It reads and writes each element once: memory-bound, at 36% of the roofline.",
            reply(FASTER, FASTER_LAUNCH, ["16-byte vector loads and stores"]),
            "Vector loads helped.",
            reply(WRONG, None, ["grid-stride loop"]),
            "It skipped the last element.",
            {"text": hinted, "delay_s": 120},  # the user stops this run while it is written
        ],
        gelu_replay(task_dir),
    )
    term = Terminal(tmp_path, "--test-stand-ins", str(stand_ins))
    term.say("load gelu", "loaded gelu: gelu.cu, gelu(x, y, n)", prompt="gelu>")
    term.say("/profile", "time: 0.1100 ms", "profiling unavailable: not recorded")
    term.say("why is it slow?", "(scripted stand-in) It reads and writes each element once")
    term.say(
        "optimize for 2 rounds",
        "up to 2 candidates",
        "· propose: candidate 1: writing",
        "#1 [",
        "] correct 1.30x kept: ok",
        "#2 [",
        "] wrong: output 'y' not fully written",
        "1.30x over the original after 2 candidates (stopped: budget: 2 candidates tried)",
    )
    term.say("show the diff", "+++ gelu.best.cu (1.30x)", "+    float4* y4", "launch: block")
    term.say("keep it", "wrote ", "gelu.best.cu (1.30x over the original", "gelu.cu is unchanged")
    best, original = task_dir / "gelu.best.cu", (EXAMPLES / "gelu" / "gelu.cu").read_text()
    assert best.read_text() == FASTER
    assert "ceil_div(N, 1024)" in (task_dir / "gelu.best.toml").read_text()
    assert (task_dir / "gelu.cu").read_text() == original

    best.write_text("// my own edits\n")  # keeping again asks before it overwrites
    term.say("/accept", "gelu.best.cu exists: overwrite it?", prompt="[y/N]")
    term.say("n", "as it was", prompt="gelu>")
    assert best.read_text() == "// my own edits\n"

    term.child.sendline("try shared-memory tiling")
    term.expect("trying shared-memory tiling")
    term.expect("propose: candidate 1: writing")
    time.sleep(0.5)
    term.child.sendintr()  # Ctrl-C: the run stops, the session stays
    term.expect("stopped the run after 0 measured candidates")
    term.expect("gelu>")
    term.say("/help", "/optimize [N]")
    term.child.sendline("/quit")
    term.child.expect(pexpect.EOF)
    term.child.close()
    assert term.child.exitstatus == 0, term.transcript
    assert "Traceback" not in term.transcript and "internal error" not in term.transcript

    prompts = [json.loads(line) for line in (tmp_path / "prompts.jsonl").read_text().splitlines()]
    question = prompts[0][-1]["content"]  # the question went out with the source and profile
    assert "why is it slow?" in question and "tanhf(inner)" in question
    assert "profiling unavailable: not recorded" in question and "36% of the bound" in question
    note = "The user asked for this technique in this session: shared-memory tiling."
    assert [note in p[-1]["content"] for p in prompts] == [False] * 5 + [True]
    history = (tmp_path / "data" / "chat_history").read_text()
    assert "optimize for 2 rounds" in history and "keep it" in history


@needs_script
def test_bad_input_gets_one_clear_line_and_the_session_goes_on(tmp_path: Path) -> None:
    term = Terminal(tmp_path, "--test-stand-ins", str(write_stand_ins(tmp_path, [], None)))
    term.say("/profile", "error: nothing loaded: /load PATH first")
    term.say("why is it slow?", "error: nothing loaded")
    term.say("/load missing/path", "error: missing/path: no such file or directory")
    term.say("/optimize lots", "/optimize N: N candidates, 1 or more (not 'lots')")
    term.say("/optimize -3", "/optimize N: N candidates, 1 or more (not '-3')")
    term.say("/frobnicate", "unknown command /frobnicate")
    term.say(f"load {EXAMPLES / 'gelu'}", "loaded gelu", prompt="gelu>")
    term.say("show the diff", "error: nothing to show yet: the best kernel is still the original")
    term.say("keep it", "error: nothing to show yet")
    term.child.sendeof()  # Ctrl-D leaves too
    term.child.expect(pexpect.EOF)
    term.child.close()
    assert term.child.exitstatus == 0
    lines = [ln for ln in term.transcript.splitlines() if "error:" in ln]
    assert len(lines) == 5 and "Traceback" not in term.transcript


@needs_script
def test_a_task_given_on_the_command_line_is_loaded(tmp_path: Path) -> None:
    stand_ins = write_stand_ins(tmp_path, [], None)
    term = Terminal(
        tmp_path, str(EXAMPLES / "softmax"), "--test-stand-ins", str(stand_ins), prompt="softmax>"
    )  # the prompt names the loaded task
    assert "loaded softmax: softmax.cu" in term.transcript
    term.child.sendline("/quit")
    term.child.expect(pexpect.EOF)


# --- the session's jobs, in process ---


def session(tmp_path: Path, **kw: Any) -> tuple[ChatSession, io.StringIO]:
    buf = io.StringIO()
    out = Console(file=buf, width=200, highlight=False, soft_wrap=True)
    machine = jobs.Machine(Settings(data_dir=tmp_path / "data"), arch="sm_90", **kw)
    return ChatSession(machine, out, confirm=lambda q: False), buf


def test_memory_says_where_it_looked_and_lists_what_it_found(tmp_path: Path) -> None:
    chat, buf = session(tmp_path, gpu=ReplayGpu(), model=ScriptedLLM())
    chat.handle(f"/load {EXAMPLES / 'gelu'}")
    chat.handle("/memory")
    assert f"memory: nothing stored yet at {tmp_path / 'data' / 'memory'}" in buf.getvalue()

    from kernelwright.memory.store import ChromaStore

    store = ChromaStore.open(path=tmp_path / "data" / "memory")
    attempt = Attempt(
        index=1,
        parent=0,
        tags=("16-byte vector loads and stores",),
        source=FASTER,
        verdict="correct",
        reason="ok",
        speedup=1.3,
    )
    store.add(
        attempt,
        task_signature="gelu",
        op_class="elementwise",
        bottleneck="memory-bound",
        arch="sm_90",
        model="qwen2.5-coder:7b",
        run_id="gelu-1",
    )
    chat.handle("memory float4 vector loads")
    assert (
        "1. [16-byte vector loads and stores] correct 1.30x "
        "(elementwise, memory-bound, sm_90, gelu-1)" in buf.getvalue()
    )


def test_a_question_without_a_gpu_still_reaches_the_model_and_says_what_is_missing(
    tmp_path: Path,
) -> None:
    class NoGpu(ReplayGpu):
        def check(self, task: Any, candidate: Any) -> Any:
            from kernelwright.tools.errors import NoGpuError

            raise NoGpuError("no NVIDIA GPU found")

    model = ScriptedLLM(["Probably memory-bound; I cannot see a measurement."])
    chat, buf = session(tmp_path, gpu=NoGpu(), model=model)
    chat.handle(f"/load {EXAMPLES / 'gelu'}")
    chat.handle("is it memory-bound?")
    said = buf.getvalue()
    assert "not measured: no NVIDIA GPU found" in said
    assert "(scripted stand-in) Probably memory-bound" in said
    assert "- not measured" in model.prompts[0][-1]["content"]


def test_an_answer_carrying_terminal_commands_prints_them_and_does_not_send_them(
    tmp_path: Path,
) -> None:
    """An answer with an OSC 52 clipboard write and a clear screen (a model steered by a
    task's text, say) reached the terminal as it was (a review): its control characters are
    shown as escapes, never sent."""

    class NoGpu(ReplayGpu):
        def check(self, task: Any, candidate: Any) -> Any:
            from kernelwright.tools.errors import NoGpuError

            raise NoGpuError("no NVIDIA GPU found")

    sneaky = "It is memory-bound.\x1b]52;c;Y3VybCB8IHNo\x1b\\\x1b[2J\x1b[H(all good)"
    chat, buf = session(tmp_path, gpu=NoGpu(), model=ScriptedLLM([sneaky]))
    chat.handle(f"/load {EXAMPLES / 'gelu'}")
    chat.handle("is it memory-bound?")
    said = buf.getvalue()
    assert "\x1b" not in said
    assert "It is memory-bound.\\x1b]52;c;" in said and "\\x1b[2J" in said


def test_ollama_down_is_one_line_with_the_fix(tmp_path: Path) -> None:
    buf = io.StringIO()
    settings = Settings(data_dir=tmp_path / "data", ollama_base_url="http://127.0.0.1:9")
    machine = jobs.Machine(settings, gpu=gelu_replay(EXAMPLES / "gelu"), arch="sm_90")
    chat = ChatSession(machine, Console(file=buf, width=200), confirm=lambda q: False)
    chat.handle(f"/load {EXAMPLES / 'gelu'}")
    chat.handle("why is it slow?")
    chat.handle("optimize for 2 rounds")
    errors = [ln for ln in buf.getvalue().splitlines() if ln.startswith("error:")]
    down = "error: Ollama is not reachable at http://127.0.0.1:9: start it with `ollama serve`"
    assert errors == [down, down]  # the question, then the run


# --- words to jobs ---


@pytest.mark.parametrize(
    ("line", "intent"),
    [
        ("load examples/softmax", Intent("load", "examples/softmax")),
        ("open ~/kernels/scan.toml.", Intent("load", "~/kernels/scan.toml")),
        ("why is it slow?", Intent("ask", "why is it slow?")),
        ("what limits this kernel", Intent("ask", "what limits this kernel")),
        ("can you optimize it?", Intent("ask", "can you optimize it?")),
        ("try shared-memory tiling", Intent("optimize", "shared-memory tiling")),
        ("try warp shuffles for 3 rounds", Intent("optimize", "warp shuffles", 3)),
        ("optimize for 10 rounds", Intent("optimize", rounds=10)),
        ("optimise it", Intent("optimize")),
        ("run 3 more candidates", Intent("optimize", rounds=3)),
        ("make it faster", Intent("optimize")),
        ("show the diff", Intent("diff")),
        ("what changed?", Intent("diff")),
        ("keep it", Intent("accept")),
        ("Save this!", Intent("accept")),
        ("keep going", Intent("resume")),
        ("continue", Intent("resume")),
        ("profile it", Intent("profile")),
        ("search memory for float4 loads", Intent("memory", "float4 loads")),
        ("help", Intent("help")),
        ("bye", Intent("quit")),
        ("/load examples/gelu", Intent("load", "examples/gelu")),
        ("/optimize", Intent("optimize")),
        ("/optimize 7", Intent("optimize", rounds=7)),
        ("/optimize resume", Intent("resume")),
        ("/optimize lots", Intent("usage", "/optimize N: N candidates, 1 or more (not 'lots')")),
        ("/optimize -3", Intent("usage", "/optimize N: N candidates, 1 or more (not '-3')")),
        ("/optimize 0", Intent("usage", "/optimize N: N candidates, 1 or more (not '0')")),
        ("optimize for 0 rounds", Intent("usage", "0 rounds: say how many candidates, 1 or more")),
        ("/memory shared tiles", Intent("memory", "shared tiles")),
        ("/accept", Intent("accept")),
        ("/exit", Intent("quit")),
        ("/nope", Intent("unknown", "/nope")),
    ],
)
def test_words_map_to_jobs(line: str, intent: Intent) -> None:
    assert parse(line) == intent


@pytest.mark.skipif(KW is None, reason="the kernelwright script is not installed")
def test_the_session_says_at_once_what_the_machine_lacks(tmp_path: Path) -> None:
    """Without stand-ins, a missing GPU or an unreachable Ollama is said at the start, not at
    the first job that needs it."""
    from tests.conftest import HAS_GPU

    assert KW is not None
    proc = subprocess.run(
        [KW, "chat"], env=door_env(tmp_path), stdin=subprocess.DEVNULL, capture_output=True,
        text=True, timeout=120,
    )  # fmt: skip
    said = " ".join(proc.stdout.split())
    assert proc.returncode == 0 and "Traceback" not in proc.stderr
    assert "note: Ollama not reachable at http://127.0.0.1:9" in said
    assert ("note: no GPU" in said) == (not HAS_GPU)
