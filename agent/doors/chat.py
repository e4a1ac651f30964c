"""`kernelwright chat`: a terminal session on one kernel. The user speaks plainly ("load
examples/softmax", "why is it slow?", "try shared-memory tiling", "optimize for 10 rounds",
"show the diff", "keep it") or uses slash commands; a few rules map the words to the jobs, and
anything else is a question the model answers with the kernel's source and profile in hand."""

from __future__ import annotations

import difflib
import re
import shutil
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from kernelwright.agent.doors import jobs
from kernelwright.agent.formats import episode_line, event_line, printable, tune_outcome
from kernelwright.agent.kinds import kind_of
from kernelwright.agent.llm import Message
from kernelwright.tools.errors import KernelwrightError
from kernelwright.tools.task import Task, load_task

DEFAULT_ROUNDS = 5

HELP = """\
Say what you want, or use a command:
  /load PATH        load a task: a directory, name.toml, name.cu, name.cpp or a KernelBench .py
                    ("load examples/softmax")
  /profile          time and profile the kernel ("profile it")
  /optimize [N]     run the loop for N candidates, default 5 ("optimize for 10 rounds";
                    "try shared-memory tiling" asks for one technique; Ctrl-C stops a run,
                    "/optimize resume" or "continue" goes on with it)
  /diff             the best kernel against the original ("show the diff")
  /accept           write the best kernel next to the task as NAME.best.cu ("keep it")
  /memory [QUERY]   past attempts nearest to QUERY, or to this kernel
  /help, /quit      this help; leave (Ctrl-D too)
Anything else is a question about the kernel ("why is it slow?"), answered with its source
and profile in hand."""


@dataclass(frozen=True)
class Intent:
    action: str  # load profile optimize resume diff accept memory help quit ask usage unknown
    arg: str = ""
    rounds: int | None = None


_ROUNDS = re.compile(
    r"\b(?:for\s+)?(\d+)\s+(?:more\s+)?(?:rounds?|candidates?|tries|attempts?|times|iterations?)\b",
    re.I,
)
_SLASH = {
    "load": "load",
    "profile": "profile",
    "optimize": "optimize",
    "optimise": "optimize",
    "diff": "diff",
    "accept": "accept",
    "memory": "memory",
    "help": "help",
    "quit": "quit",
    "exit": "quit",
}
# Plain words, in order: the first rule that matches decides. A question ("...?") that no rule
# before the question rule claims goes to the model.
_PLEASE = r"^(?:please\s+)?"
_RULES: list[tuple[str, re.Pattern[str]]] = [
    (action, re.compile(pattern, re.I))
    for action, pattern in [
        ("help", r"^(?:help|\?|what can you do\??)$"),
        ("quit", r"^(?:quit|exit|bye|goodbye)[.!]?$"),
        ("load", _PLEASE + r"(?:load|open)\s+(?P<arg>\S.*?)[.!]?$"),
        ("diff", r"\b(?:diff|what changed)\b"),
        ("ask", r"\?\s*$"),
        ("resume", r"^(?:keep (?:going|trying|optimi[sz]ing)|continue|resume|go on)\b"),
        ("accept", r"^(?:keep|accept|save|take)(?:\s+(?:it|this|that|the best.*))?[.!]?$"),
        ("try", _PLEASE + r"(?:try|apply)\s+(?P<arg>.+?)[.!]?$"),
        ("optimize", _PLEASE + r"(?:optimi[sz]e|tune|speed it up|make it faster|run)\b"),
        ("profile", _PLEASE + r"(?:profile|measure)\b"),
        ("memory", r"^(?:search\s+)?(?:the\s+)?memory\b(?:\s+for)?\s*(?P<arg>.*?)$"),
    ]
]


def parse(line: str) -> Intent:
    """What a line asks for (pure)."""
    text = line.strip()
    if text.startswith("/"):
        word, _, rest = text[1:].partition(" ")
        action = _SLASH.get(word.lower(), "unknown")
        rest = rest.strip()
        if action == "optimize":
            if rest.lower() == "resume":
                return Intent("resume")
            try:
                rounds = int(rest) if rest else None
            except ValueError:
                rounds = 0
            if rounds is not None and rounds < 1:
                return Intent("usage", f"/optimize N: N candidates, 1 or more (not {rest!r})")
            return Intent("optimize", rounds=rounds)
        return Intent(action, rest if action != "unknown" else text)
    rounds_match = _ROUNDS.search(text)
    rounds = int(rounds_match.group(1)) if rounds_match else None
    for action, pattern in _RULES:
        m = pattern.search(text)
        if m is None:
            continue
        arg = (m.groupdict().get("arg") or "").strip()
        if action in ("try", "optimize") and rounds is not None and rounds < 1:
            return Intent("usage", f"{rounds} rounds: say how many candidates, 1 or more")
        if action == "try":
            hint = _ROUNDS.sub("", arg).strip(" ,.")
            return Intent("optimize", hint, rounds)
        if action == "optimize":
            return Intent("optimize", rounds=rounds)
        if action == "ask":
            return Intent("ask", text)
        return Intent(action, arg)
    return Intent("ask", text)


class ChatSession:
    """One user's session: the loaded task, its measurements, the best kernel found so far."""

    def __init__(self, machine: jobs.Machine, out: Console, confirm: Callable[[str], bool]) -> None:
        self.machine, self.out, self.confirm = machine, out, confirm
        self.task: Task | None = None
        self.task_path: Path | None = None
        self.measured: jobs.Measured | None = None
        self.best: jobs.RunOutcome | None = None
        self.turns: list[Message] = []

    # --- the loop around commands ---

    def handle(self, line: str) -> bool:
        """Do what the line asks; False when the session should end."""
        if not line.strip():
            return True
        intent = parse(line)
        try:
            return self._dispatch(intent)
        except KernelwrightError as exc:
            self.say(f"[red]error:[/] {escape(str(exc))}")
        except KeyboardInterrupt:
            self.say("stopped.")
        except Exception as exc:  # a bug of ours must not end the user's session
            self.say(f"[red]internal error[/] ({type(exc).__name__}): {escape(str(exc))}")
        return True

    def _dispatch(self, intent: Intent) -> bool:
        match intent.action:
            case "quit":
                return False
            case "help":
                self.out.print(HELP, markup=False)
            case "load":
                self.load(intent.arg)
            case "profile":
                self.profile()
            case "optimize":
                self.optimize(intent.rounds or DEFAULT_ROUNDS, hint=intent.arg)
            case "resume":
                self.optimize(0, resume=True)
            case "diff":
                self.diff()
            case "accept":
                self.accept()
            case "memory":
                self.memory(intent.arg)
            case "ask":
                self.ask(intent.arg)
            case "usage":
                self.say(escape(intent.arg))
            case _:
                self.say(f"unknown command {escape(intent.arg)}: /help lists the commands")
        return True

    def say(self, text: str) -> None:
        self.out.print(printable(text), highlight=False)

    def _need_task(self) -> Task:
        if self.task is None:
            raise jobs.DoorError('nothing loaded: /load PATH first (or say "load examples/gelu")')
        return self.task

    # --- the jobs ---

    def load(self, arg: str) -> None:
        if not arg:
            raise jobs.DoorError("/load needs a path: /load examples/softmax")
        path = Path(arg).expanduser()
        task = load_task(path)
        self.task, self.task_path = task, path
        self.measured, self.best, self.turns = None, None, []
        said = kind_of(task).loaded(task)  # it starts with the task's name
        self.say(f"loaded [bold]{escape(task.name)}[/]{escape(said.removeprefix(task.name))}")

    def profile(self) -> jobs.Measured:
        task = self._need_task()
        self.say(f"measuring {escape(task.name)}...")
        self.measured = jobs.measure(self.machine, task)
        for line in self.measured.lines():
            self.say(f"  {escape(line)}")
        return self.measured

    def optimize(self, rounds: int, hint: str = "", resume: bool = False) -> None:
        task = self._need_task()
        assert self.task_path is not None
        what = "continuing the stopped run" if resume else f"up to {rounds} candidates"
        asked = f", trying {escape(hint)}" if hint else ""
        self.say(f"optimizing {escape(task.name)}: {what}{asked} (Ctrl-C stops the run)")
        try:
            outcome = jobs.optimize(
                self.machine,
                self.task_path,
                budget=rounds,
                progress=self._progress,
                hint=hint,
                resume=resume,
                plateau=max(4, rounds),
            )
        except KeyboardInterrupt:
            self.machine.drop_gpu()
            stopped = jobs.stopped_run(self.machine.settings, task)
            n = len(stopped.attempts) if stopped else 0
            self._remember(stopped)
            self.say(
                f"stopped the run after {n} measured candidate{'s' if n != 1 else ''}; "
                f"best in this session: {self._best_speedup():.2f}x. "
                '"/optimize resume" continues it; the session goes on.'
            )
            return
        self._remember(outcome)
        self.say(
            f"[bold]{outcome.best_speedup:.2f}x[/] over the original after "
            f"{len(outcome.attempts)} candidates (stopped: {escape(outcome.stop_reason)}). "
            + (
                "/diff shows the best kernel, /accept keeps it."
                if outcome.best_speedup > 1.0
                else "Nothing beat the original this time."
            )
        )
        if outcome.tune is not None:  # the settings' [tune] said to tune the best kernel
            self.say(f"tune: {escape(tune_outcome(outcome.tune))}")
        if self.best is not outcome and self.best is not None:
            self.say(f"an earlier run's {self.best.best_speedup:.2f}x stays the best")

    def _progress(self, event: dict[str, Any]) -> None:
        line = escape(event_line(event))
        if event.get("attempt") is not None:
            self.say(f"  {line}")
        else:
            self.say(f"  [dim]· {line}[/]")

    def _remember(self, outcome: jobs.RunOutcome | None) -> None:
        if outcome is not None and outcome.best_speedup > self._best_speedup():
            self.best = outcome

    def _best_speedup(self) -> float:
        return self.best.best_speedup if self.best else 1.0

    def _need_best(self, task: Task) -> jobs.RunOutcome:
        if self.best is None:
            raise jobs.DoorError(
                "nothing to show yet: the best kernel is still the original (/optimize first)"
            )
        return self.best

    def diff(self) -> None:
        task = self._need_task()
        best = self._need_best(task)
        original, dest = _files(task)
        lines = difflib.unified_diff(
            task.source.splitlines(True),
            best.best_source.splitlines(True),
            original.name,
            f"{dest.name} ({best.best_speedup:.2f}x)",
        )
        for line in lines:
            line = line.rstrip("\n")
            style = {"+": "green", "-": "red", "@": "cyan"}.get(line[:1], "")
            self.out.print(printable(line), style=style or None, markup=False, highlight=False)
        was_launch = kind_of(task).launch(task)
        if best.best_launch and was_launch:
            now = (best.best_launch.get("block"), best.best_launch.get("grid"))
            was = (list(was_launch["block"]), list(was_launch["grid"]))
            self.say(
                escape(f"launch: block {now[0]}, grid {now[1]} (was block {was[0]}, grid {was[1]})")
            )

    def accept(self) -> None:
        task = self._need_task()
        best = self._need_best(task)
        original, dest = _files(task)
        if dest.resolve() == original.resolve():
            raise jobs.DoorError(f"{dest} is the task's own kernel: not overwritten")
        if (
            dest.exists()
            and dest.read_text() != best.best_source
            and not self.confirm(f"{dest} exists: overwrite it? [y/N] ")
        ):
            self.say(f"left {escape(str(dest))} as it was")
            return
        dest.write_text(best.best_source)
        sidecar, launch = dest.with_suffix(".toml"), best.run_dir / "best.toml"
        if launch.is_file():  # its launch, and the compile options a tune found
            shutil.copyfile(launch, sidecar)
        elif sidecar.exists():
            sidecar.unlink()  # a launch left from an earlier best would not fit this kernel
        self.say(
            f"wrote {escape(str(dest))} ({best.best_speedup:.2f}x over the original"
            + (f", launch in {escape(sidecar.name)}" if sidecar.exists() else "")
            + f"); {escape(original.name)} is unchanged. "
            f"Re-check it: kernelwright check {escape(str(self.task_path))} {escape(str(dest))}"
        )

    def memory(self, query: str) -> None:
        if not query:
            task = self._need_task()
            query = self.best.best_source if self.best else task.source
        answer = jobs.search_memory(self.machine.settings, query)
        if answer.note:
            self.say(f"memory: {escape(answer.note)}")
        for i, episode in enumerate(answer.episodes, 1):
            self.say(f"  {i}. {escape(episode_line(episode))}")

    def ask(self, question: str) -> None:
        task = self._need_task()
        if self.measured is None:
            try:
                self.profile()
            except KernelwrightError as exc:
                self.say(f"  [yellow]not measured:[/] {escape(str(exc))}")
        model = self.machine.model()
        system, user = self._ask(task, question)
        messages = [system, *self.turns[-6:], user]
        answer = model.complete(messages).strip()
        self.turns += [
            Message(role="user", content=question),
            Message(role="assistant", content=answer),
        ]
        self.say(f"[dim]({escape(self.machine.voice)})[/] {escape(answer)}")

    def _ask(self, task: Task, question: str) -> tuple[Message, Message]:
        """The question's system and user messages: the kernel, what was measured of it, the
        best candidate so far, and the question (prompts/ask.yaml)."""
        from kernelwright.prompts.render import render

        best = self.best
        system, user = render(
            "ask",
            kernel=task.name,
            lang=kind_of(task).fence,
            source=task.source,
            measured=self.measured.lines() if self.measured is not None else None,
            best=None
            if best is None
            else {
                "speedup": best.best_speedup,
                "tags": ", ".join(a.tags[0] for a in best.attempts if a.kept and a.tags),
                "source": best.best_source,
            },
            question=question,
        )
        return (
            Message(role="system", content=system["content"]),
            Message(role="user", content=user["content"]),
        )


def _files(task: Task) -> tuple[Path, Path]:
    """The task's own kernel file, and where /accept writes the best: NAME.best.cu beside a
    CUDA kernel, NAME.best.py (defining ModelNew) beside a KernelBench problem."""
    kind = kind_of(task)
    original = kind.original_file(task)
    return original, original.with_name(f"{task.name}.best{kind.suffix}")


def run(machine: jobs.Machine, task: Path | None, history: Path) -> None:
    """The session: read lines (prompt-toolkit with history on a terminal), act, repeat."""
    # Ctrl-C stops a run, whatever this process was started with: a program launched from a
    # background job (`... &`, some IDEs and test runners) inherits SIGINT ignored, and
    # prompt-toolkit puts back what it found after each line read
    signal.signal(signal.SIGINT, signal.default_int_handler)
    out = Console(highlight=False, soft_wrap=True)
    read, confirm = _reader(history)
    session = ChatSession(machine, out, confirm)
    who = machine.stand_in_note or (f"model {machine.settings.model} ({machine.settings.provider})")
    out.print(
        f"kernelwright chat: {escape(who)}. /help lists the commands; Ctrl-C stops a run, "
        "/quit leaves."
    )
    for note in machine.missing():
        out.print(f"[yellow]note:[/] {escape(note)}")
    if task is not None:
        session.handle(f"/load {task}")
    try:
        while True:
            name = session.task.name if session.task else "kernelwright"
            try:
                line = read(f"{name}> ")
            except KeyboardInterrupt:
                continue  # Ctrl-C at the prompt clears the line; /quit or Ctrl-D leaves
            except EOFError:
                break
            if not session.handle(line):
                break
    finally:
        machine.close()


def _reader(history: Path) -> tuple[Callable[[str], str], Callable[[str], bool]]:
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        return input, lambda q: input(q).strip().lower().startswith("y")
    from prompt_toolkit import PromptSession
    from prompt_toolkit.history import FileHistory

    history.parent.mkdir(parents=True, exist_ok=True)
    prompt: PromptSession[str] = PromptSession(history=FileHistory(str(history)))
    asker: PromptSession[str] = PromptSession()  # answers to y/N questions stay out of history

    def confirm(question: str) -> bool:
        try:
            return asker.prompt(question).strip().lower().startswith("y")
        except (KeyboardInterrupt, EOFError):
            return False

    return prompt.prompt, confirm
