"""`kernelwright batch --gpus` on the CPU: a local Dask cluster of two workers pinned to fake GPU
ids, scripted replies chosen by what the model is asked (so a task run again in a new worker
process gets the same answers), verifier reports replayed (ReplayGpu) and real NVRTC compiles.
The fake GPU logs every check with the GPU its worker was pinned to, and can kill its worker,
fall off the bus, or hold a check until the test lets it go. Then a cluster started with the
README's commands, and bad input."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import socket
import subprocess
import time
from collections import defaultdict
from dataclasses import dataclass, field
from functools import partial
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from kernelwright.agent.doors import batch_dask, cli_batch
from kernelwright.agent.doors.batch_dask import BatchSetupError, GpuSlot, parse_gpus, pick_gpus
from kernelwright.agent.doors.batch_records import BatchState, TaskState
from kernelwright.agent.doors.batch_worker import WorkerParts
from kernelwright.agent.doors.cli_batch import run_batch_command
from kernelwright.agent.llm import Message, ScriptedLLM
from kernelwright.agent.settings import Settings
from kernelwright.tools.backend import ReplayGpu, candidate_key
from kernelwright.tools.results import CheckReport, ProfileResult, SanitizeResult
from kernelwright.tools.task import Candidate, Task, load_task, reference_candidate
from tests.conftest import EXAMPLES, ROOT, proposed_launch
from tests.doors import test_batch as plain
from tests.doors.test_batch import H100, check_report, kw, replay, script

SLOTS = [GpuSlot(0, "GPU-fake-0"), GpuSlot(1, "GPU-fake-1")]
WAIT_S = 120.0  # what a test waits for another process at most: generous, never a pause


# --- stand-ins the workers build (module-level, so they pickle by reference) ---


class PromptScriptedLLM(ScriptedLLM):
    """Answers by what it is asked, not in order: a task run again after its worker died
    resumes from checkpoints that may lag its last steps (LangGraph writes them in the
    background), so it may ask again what it asked before, and must get the same answer.
    A review is chosen by the verdict it reviews, a candidate by the attempts before it."""

    def __init__(self, candidates: list[str], reviews: dict[str, str]) -> None:
        super().__init__()
        self.candidates, self.reviews = candidates, reviews

    def complete(self, messages: list[Message]) -> str:
        self.prompts.append(messages)
        asked = messages[-1]["content"]
        if "You review one attempt" in messages[0]["content"]:
            return self.reviews[asked.split("Verdict: ", 1)[1].split(":")[0]]
        earlier = asked.partition("## Earlier attempts in this run")[2].lstrip("\n")
        lines = earlier.split("\n\n", 1)[0].splitlines() if earlier else []
        return self.candidates[sum(line.startswith("- #") for line in lines)]


@dataclass(frozen=True)
class Replies:
    """Each task's scripted model, by slug: the candidates it writes in turn and its review of
    each verdict (a task it has nothing for gets a model that has nothing to say)."""

    candidates: dict[str, list[str]]
    reviews: dict[str, dict[str, str]]

    @classmethod
    def of(cls, root: Path, examples: dict[str, str]) -> Replies:
        """The test_batch scripts of the examples the tasks copy (slug -> example)."""
        candidates, reviews = {}, {}
        for slug, name in examples.items():
            wrong, review_wrong, faster, review_faster = script(root, (name,))
            candidates[slug] = [wrong, faster]
            reviews[slug] = {"wrong": review_wrong, "correct": review_faster}
        return cls(candidates, reviews)

    def __call__(self, settings: Settings, task: TaskState) -> PromptScriptedLLM:
        return PromptScriptedLLM(
            self.candidates.get(task.slug, []), self.reviews.get(task.slug, {})
        )


@dataclass(frozen=True)
class FakeGpus:
    """How each worker's fake GPU behaves, by candidate key. `kill`: key -> "once" (kill the
    worker checking it the first time) or "always"; `lost`: the GPU ids whose every check
    crashes, as on a GPU off the bus, and whose health check then says so."""

    replay: ReplayGpu
    folder: Path  # the log of every check, and the markers
    kill: dict[str, str] = field(default_factory=dict)
    lost: tuple[str, ...] = ()
    park: str = ""  # a key whose check marks itself parked, then waits on the test's lock
    after_park: str = ""  # a key whose check first waits until `park` is parked

    def __call__(self, settings: Settings) -> FakeGpu:
        return FakeGpu(self)

    def health(self, visible: str) -> str:
        return "it fell off the bus (fake)" if visible in self.lost else ""


class FakeGpu:
    def __init__(self, spec: FakeGpus) -> None:
        self.spec = spec

    def check(self, task: Task, candidate: Candidate) -> CheckReport:
        spec, gpu = self.spec, os.environ.get("CUDA_VISIBLE_DEVICES", "")
        key = candidate_key(task, candidate)
        start = time.monotonic_ns()  # one clock for every process of the machine
        rule, marker = spec.kill.get(key), spec.folder / f"killed-{key}"
        if rule == "always" or (rule == "once" and not marker.exists()):
            marker.touch()
            os._exit(1)  # the worker process dies mid-check, as on a segfault or an OOM kill
        if key == spec.park:
            (spec.folder / "parked").touch()
            with open(spec.folder / "lock", "a") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)  # the test holds it during the first run
        if key == spec.after_park:
            _wait_for(spec.folder / "parked")
        if gpu in spec.lost:
            report = check_report(task, "crashed", 0.1, None, "CUDA error: unspecified launch")
        else:
            report = spec.replay.check(task, candidate)
        row = {"gpu": gpu, "path": str(Path(task.path).resolve()), "key": key, "start": start}
        with open(spec.folder / "checks.jsonl", "a") as log:
            log.write(json.dumps({**row, "end": time.monotonic_ns()}) + "\n")
        return report

    def profile(self, task: Task, candidate: Candidate) -> ProfileResult:
        return self.spec.replay.profile(task, candidate)

    def sanitize(self, task: Task, candidate: Candidate) -> SanitizeResult:
        return self.spec.replay.sanitize(task, candidate)

    def close(self) -> None:
        pass


def _wait_for(path: Path) -> None:
    deadline = time.monotonic() + WAIT_S
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.02)


# --- fixtures and helpers ---


# The plain batch's fixtures: runs and memory in the test's folder (the workers inherit it),
# and a folder of tasks: gelu, softmax and `broken` (a dtype that does not exist).
own_data_dir = plain.own_data_dir
three = plain.root


@pytest.fixture
def tree(three: Path) -> Path:
    """gelu and softmax, as in examples/."""
    shutil.rmtree(three / "broken")
    return three


def parts(tmp_path: Path, root: Path, slugs: dict[str, str], **gpus: Any) -> WorkerParts:
    fake = FakeGpus(replay(root), tmp_path / "gpu", **gpus)
    fake.folder.mkdir(exist_ok=True)
    return WorkerParts(model=Replies.of(root, slugs), gpu=fake, health=fake.health, arch="sm_90")


def batch(root: Path, out: Path, p: WorkerParts, memory: bool = False, **kwargs: Any) -> int:
    """The command on the two fake GPUs; the memory (a server started for the batch) only
    where a test asks for it, as it takes a second to start."""
    kwargs.setdefault("gpus", "all")
    kwargs.setdefault("loop", {} if memory else {"memory": False})
    return run_batch_command(
        root, out, budget=2, model=ScriptedLLM(), device=H100, slots=SLOTS, parts=p, **kwargs
    )


def logged(tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / "gpu" / "checks.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def key(root: Path, name: str, which: str) -> str:
    from kernelwright.agent.nodes.common import as_candidate

    task = load_task(root / name)
    if which == "original":
        return candidate_key(task, reference_candidate(task))
    path = root / name / "candidates" / f"{which}.cu"
    launch = proposed_launch(path)
    return candidate_key(task, as_candidate(task, path.read_text(), launch))


def tasks(out: Path) -> dict[str, dict[str, Any]]:
    return {t["id"]: t for t in json.loads((out / "batch.json").read_text())["tasks"]}


# --- the tests ---


def test_every_gpu_runs_one_task_at_a_time(
    three: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Five tasks on two pinned workers: every task runs on one GPU, no GPU runs two tasks at
    once, both GPUs work, and the report says which GPU ran each and the batch's wall time."""
    for name in ("gelu", "softmax"):
        shutil.copytree(three / name, three / f"{name}2")
    slugs = {"gelu": "gelu", "gelu2-gelu": "gelu", "softmax": "softmax"}
    slugs["softmax2-softmax"] = "softmax"
    out = tmp_path / "report"

    code = batch(three, out, parts(tmp_path, three, slugs), memory=True)
    err = capsys.readouterr().err
    assert code == 1, err  # broken failed, with its reason from the worker
    report = json.loads((out / "batch.json").read_text())
    assert report["counts"]["faster"] == 4 and report["failed"][0]["id"] == "broken"
    assert "floot32" in report["failed"][0]["reason"]

    spans: dict[str, list[tuple[int, int, str]]] = defaultdict(list)  # gpu -> (start, end, task)
    ran_on: dict[str, set[str]] = defaultdict(set)  # task file -> the GPUs its checks ran on
    rows_by_task: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in logged(tmp_path):
        rows_by_task[(row["path"], row["gpu"])].append(row)
    for (path, gpu), rows in rows_by_task.items():
        ran_on[path].add(gpu)
        spans[gpu].append((min(r["start"] for r in rows), max(r["end"] for r in rows), path))
    done = {str(Path(t["path"]).resolve()): t for t in report["tasks"] if t["status"] == "done"}
    assert set(ran_on) == set(done)
    for path, gpus in ran_on.items():
        (gpu,) = gpus  # each task on one GPU, the one the report names
        assert done[path]["gpu"].startswith(gpu + " on ")
    for gpu, runs in spans.items():
        runs.sort()
        for (_, end, path), (start, _, other) in pairwise(runs):
            assert end < start, f"{gpu} ran {path} and {other} at once"
    assert set(spans) == {"GPU-fake-0", "GPU-fake-1"}  # both GPUs worked

    state = BatchState.load(out)
    assert state is not None and state.gpus == "all" and state.wall_s > 0
    md = (out / "report.md").read_text()
    assert "s of wall time on 2 GPUs for" in md and "| gpu |" in md
    assert "| gelu | faster | 0.1100 | 0.0846 | 1.30x (IQR 0.020) |  | 36% → 47% | 2 |" in md
    assert "GPU-fake-" in (out / "report.html").read_text()


def test_a_task_whose_worker_dies_once_still_finishes(
    tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The worker dies checking gelu's faster candidate; Dask runs the task again, which
    resumes from its checkpoints: nothing is lost, and the run is the same run."""
    faster = key(tree, "gelu", "faster")
    p = parts(tmp_path, tree, {"gelu": "gelu", "softmax": "softmax"}, kill={faster: "once"})
    out = tmp_path / "report"
    code = batch(tree, out, p)
    err = capsys.readouterr().err
    assert code == 0, err
    assert (tmp_path / "gpu" / f"killed-{faster}").exists()  # it did die
    assert "gelu: its worker died; running it again on GPU-fake-" in err
    gelu = tasks(out)["gelu"]
    assert gelu["verdict"] == "faster" and gelu["speedup"] == 1.3
    assert [a["verdict"] for a in gelu["attempts"]] == ["wrong", "correct"]
    (run,) = (d for d in (out / "runs" / "gelu").iterdir() if d.is_dir())  # one run, resumed
    assert (run / "summary.md").is_file()
    assert faster in [row["key"] for row in logged(tmp_path) if "gelu" in row["path"]]
    assert tasks(out)["softmax"]["verdict"] == "faster"


def test_a_task_that_always_kills_its_worker_is_failed_with_the_reason(
    tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """gelu's own kernel kills every worker that checks it: after its retry it is failed with
    the reason, and softmax finishes."""
    original = key(tree, "gelu", "original")
    p = parts(tmp_path, tree, {"gelu": "gelu", "softmax": "softmax"}, kill={original: "always"})
    out = tmp_path / "report"
    code = batch(tree, out, p, retries=1)
    err = capsys.readouterr().err
    assert code == 1, err
    report = json.loads((out / "batch.json").read_text())
    (failure,) = report["failed"]
    assert failure["id"] == "gelu"
    assert failure["reason"].startswith("the worker running it died 2 times (the last on GPU-fake-")
    assert "gelu: the worker running it died 2 times" in err
    assert tasks(out)["softmax"]["verdict"] == "faster"
    state = BatchState.load(out)
    assert state is not None and state.retries == 1


def test_a_lost_gpu_retires_its_worker_and_its_task_runs_on_another(
    tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """GPU 0 falls off the bus: its first check crashes, the health check finds it lost, its
    worker is retired, and the task runs on GPU 1; no check is recorded as crashed."""
    p = parts(tmp_path, tree, {"gelu": "gelu", "softmax": "softmax"}, lost=("GPU-fake-0",))
    out = tmp_path / "report"
    code = batch(tree, out, p)
    err = capsys.readouterr().err
    assert code == 0, err
    assert "GPU-fake-0 on " in err and "is lost: it fell off the bus (fake)" in err
    for name in ("gelu", "softmax"):
        task = tasks(out)[name]
        assert task["verdict"] == "faster" and task["gpu"].startswith("GPU-fake-1 on ")
        assert [a["verdict"] for a in task["attempts"]] == ["wrong", "correct"]
        recorded = (out / "runs" / name / "checks.jsonl").read_text()
        assert '"crashed"' not in recorded  # the lost GPU's crash was never kept


def test_when_every_gpu_is_lost_the_tasks_wait_for_a_resume(
    tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    p = parts(
        tmp_path, tree, {"gelu": "gelu", "softmax": "softmax"}, lost=("GPU-fake-0", "GPU-fake-1")
    )
    out = tmp_path / "report"
    code = batch(tree, out, p)
    err = capsys.readouterr().err
    assert code == 2, err
    assert "error: every GPU of the batch was lost" in err and "--resume" in err
    state = BatchState.load(out)
    assert state is not None and all(t.status in ("pending", "running") for t in state.tasks)
    assert (out / "report.md").is_file()


def test_an_interrupted_batch_resumes_without_rerunning_what_finished(
    tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C in the coordinator as gelu finishes, while softmax waits in its last check: the
    workers stop, softmax stays running; --resume re-runs nothing finished and softmax goes on
    from its checkpoints."""
    soft_faster = key(tree, "softmax", "faster")
    p = parts(
        tmp_path,
        tree,
        {"gelu": "gelu", "softmax": "softmax"},
        park=soft_faster,
        after_park=key(tree, "gelu", "faster"),
    )
    real = cli_batch.RichBatchProgress.task_finished

    def ctrl_c(self: Any, index: int, task: TaskState, report: Any) -> None:
        real(self, index, task, report)
        if task.slug == "gelu":
            raise KeyboardInterrupt

    out = tmp_path / "report"
    with open(tmp_path / "gpu" / "lock", "a") as lock, monkeypatch.context() as m:
        fcntl.flock(lock, fcntl.LOCK_EX)  # softmax's last check waits on it
        m.setattr(cli_batch.RichBatchProgress, "task_finished", ctrl_c)
        assert batch(tree, out, p) == 130
    assert "--resume" in capsys.readouterr().err
    state = BatchState.load(out)
    assert state is not None
    assert {t.id: t.status for t in state.tasks} == {"gelu": "done", "softmax": "running"}
    first = logged(tmp_path)

    assert batch(tree, out, p, resume=True, gpus=None) == 0  # on the GPUs it ran on
    assert "resuming: 1 of 2 tasks already finished" in capsys.readouterr().err
    again = [row["key"] for row in logged(tmp_path)[len(first) :]]
    assert not {row["key"] for row in first if "gelu" in row["path"]} & set(again)  # gelu: none
    assert soft_faster in again and key(tree, "softmax", "original") not in again
    softmax = tasks(out)["softmax"]
    assert softmax["verdict"] == "faster" and softmax["speedup"] == 6.1
    assert [a["verdict"] for a in softmax["attempts"]] == ["wrong", "correct"]
    (run,) = (d for d in (out / "runs" / "softmax").iterdir() if d.is_dir())
    assert (run / "summary.md").is_file()  # the same run, resumed
    assert tasks(out)["gelu"]["speedup"] == 1.3


DASK = shutil.which("dask")


@pytest.mark.skipif(DASK is None, reason="the dask command is not installed")
def test_a_cluster_started_as_the_readme_says_runs_the_batch(
    tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`dask scheduler` and a `dask worker` per (fake) GPU, as the README starts them; the
    batch reaches them with --scheduler. The memory needs a server every host reaches: without
    memory.url it is one line and exit 2, and --no-memory runs."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    address = f"tcp://127.0.0.1:{port}"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # the workers import this module's stand-ins
    logs = tmp_path / "logs"
    logs.mkdir()
    commands = [([DASK, "scheduler", "--host", "127.0.0.1", "--port", str(port)], {})]
    for slot in SLOTS:
        worker = [DASK, "worker", address, "--nthreads", "1", "--resources", "GPU=1"]
        worker += ["--memory-limit", "0", "--name", f"host-gpu{slot.index}"]
        commands.append((worker, {"CUDA_VISIBLE_DEVICES": slot.uuid}))
    procs = []
    try:
        for i, (command, extra) in enumerate(commands):
            with open(logs / f"{i}.log", "w") as log:
                procs.append(
                    subprocess.Popen(
                        [str(c) for c in command], env={**env, **extra}, stdout=log, stderr=log
                    )
                )
        from distributed import Client

        with Client(address, timeout=WAIT_S) as client:
            client.wait_for_workers(len(SLOTS), timeout=WAIT_S)
        p = parts(tmp_path, tree, {"gelu": "gelu", "softmax": "softmax"})
        out = tmp_path / "report"
        kwargs = {"gpus": None, "scheduler": address}
        assert batch(tree, out, p, memory=True, **kwargs) == 2
        (line,) = capsys.readouterr().err.strip().splitlines()
        assert "--scheduler with the memory on needs a memory server" in line
        code = batch(tree, out, p, **kwargs)
        err = capsys.readouterr().err
        assert code == 0, err + "".join(f.read_text() for f in logs.iterdir())
    finally:
        for proc in reversed(procs):
            proc.terminate()
            proc.wait(timeout=WAIT_S)
    report = tasks(out)
    assert {t["verdict"] for t in report.values()} == {"faster"}
    assert {t["gpu"].split(" on ")[0] for t in report.values()} <= {s.uuid for s in SLOTS}
    state = BatchState.load(out)
    assert state is not None and state.scheduler == address and state.gpus is None
    assert state.retries is None  # the scheduler's allowed-failures, not ours


def test_a_suspicious_check_asks_the_gpu_how_it_is(tree: Path) -> None:
    """A crashed check is followed by a health check: a healthy GPU lets the report through
    (the candidate's fault), a lost one raises GpuLost before anything records the crash; a
    wrong answer asks nothing. A GPU NVML does not know (or no NVML at all) is lost."""
    from kernelwright.agent.doors.batch_worker import GpuLost, HealthChecked, gpu_health

    gelu = load_task(tree / "gelu")
    gpu = replay(tree, ("gelu",))
    crash = check_report(gelu, "crashed", 0.1, None, "illegal memory access")
    gpu.add(gelu, reference_candidate(gelu), crash)
    asked: list[str] = []

    def health(answer: str) -> str:
        asked.append(answer)
        return answer

    assert HealthChecked(gpu, partial(health, "")).check(gelu, reference_candidate(gelu)) is crash
    with pytest.raises(GpuLost, match=r"^gone \(after a check: crashed: illegal memory access\)"):
        HealthChecked(gpu, partial(health, "gone")).check(gelu, reference_candidate(gelu))
    wrong = (tree / "gelu" / "candidates" / "wrong.cu").read_text()
    from kernelwright.agent.nodes.common import as_candidate

    HealthChecked(gpu, partial(health, "gone")).check(gelu, as_candidate(gelu, wrong, None))
    assert asked == ["", "gone"]
    assert gpu_health("GPU-00000000-0000-0000-0000-000000000000").startswith("NVML ")


# --- where the batch runs: bad input is one line and exit 2 ---


def test_gpu_lists_parse() -> None:
    assert parse_gpus("all") is None and parse_gpus(" ALL ") is None
    assert parse_gpus("0,1,3") == [0, 1, 3] and parse_gpus("0-2,1,5") == [0, 1, 2, 5]
    for bad in ("abc", "", "1,,2", "3-1", "-1", "0.5"):
        with pytest.raises(BatchSetupError, match="expected GPU numbers"):
            parse_gpus(bad)
    assert pick_gpus("1", SLOTS) == [SLOTS[1]] and pick_gpus("all", SLOTS) == SLOTS
    with pytest.raises(BatchSetupError, match=r"no GPU 9 on this machine \(it has 0, 1\)"):
        pick_gpus("0,9", SLOTS)


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        ({"gpus": "9"}, "--gpus 9: no GPU 9 on this machine (it has 0, 1)"),
        ({"gpus": "abc"}, "--gpus abc: expected GPU numbers"),
        ({"gpus": "0", "scheduler": "tcp://127.0.0.1:9"}, "--gpus and --scheduler: choose one"),
        ({"gpus": None, "retries": 1}, "--retries goes with --gpus (a batch on several GPUs)"),
        (
            {"gpus": None, "scheduler": "tcp://127.0.0.1:9", "retries": 1},
            "--retries goes with --gpus:",
        ),
        (
            {"gpus": None, "scheduler": "tcp://127.0.0.1:9"},
            "--scheduler tcp://127.0.0.1:9: no Dask scheduler answers there",
        ),
    ],
)
def test_bad_places_are_one_line_and_leave_no_folder(
    tree: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    flags: dict[str, Any],
    expected: str,
) -> None:
    monkeypatch.setattr(batch_dask, "CONNECT_TIMEOUT_S", 1.0)
    out = tmp_path / "out"
    assert batch(tree, out, WorkerParts(), **flags) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("error: ") and expected in line, line
    assert not out.exists()


@pytest.mark.skipif(shutil.which("kernelwright") is None, reason="no kernelwright script")
def test_the_flags_reach_the_command(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLES / "gelu", tmp_path / "tasks" / "gelu")
    proc = kw(tmp_path, str(tmp_path / "tasks"), "--out", str(tmp_path / "out"), "--gpus", "abc")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("error: --gpus abc: expected GPU numbers")


def test_the_memory_server_starts_without_a_chroma_script_anywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A --target or --user install leaves chromadb's `chroma` script off PATH and away from
    the interpreter (the GPU machine's did: `batch --gpus all` ended in an error after both
    tasks had finished). The server is chromadb's own app, run by this Python."""
    import sys

    import httpx

    bare = tmp_path / "bin"
    bare.mkdir()
    python = bare / "python3"
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(python))
    monkeypatch.setenv("PATH", str(bare))
    server, url = batch_dask._chroma(tmp_path / "memory", tmp_path / "server.log")
    try:
        assert httpx.get(f"{url}/api/v2/heartbeat", timeout=5.0).status_code == 200
    finally:
        server.terminate()
        server.wait(timeout=30)
