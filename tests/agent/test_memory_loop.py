"""The loop with its memory, on the CPU: every measured attempt lands in a real ChromaDB store,
the reasoning graph learns and persists, the search's choice reaches the prompt and the
progress, and a second process on a related task is shown pairs from the first."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kernelwright.agent.experience import TechniqueChoice
from kernelwright.agent.llm import ScriptedLLM
from kernelwright.agent.optimize import optimize
from kernelwright.agent.rundir import RunDir
from kernelwright.agent.settings import load
from kernelwright.memory.embeddings import CodeHashEmbedding
from kernelwright.memory.graph_file import SavedGraph
from kernelwright.memory.store import ChromaStore
from kernelwright.tools.backend import ReplayGpu
from kernelwright.tools.spec import CudaTask
from tests.agent.test_graph import FASTER, FASTER_LAUNCH, GELU, WRONG, replay_for, reply, report
from tests.conftest import EXAMPLES, ROOT, chroma_open


@pytest.fixture(autouse=True)
def no_user_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for key in list(os.environ):
        if key.startswith("KERNELWRIGHT_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("KERNELWRIGHT_CONFIG", os.devnull)


@pytest.fixture
def gelu(nvrtc: None) -> CudaTask:
    from kernelwright.tools.task import load_task

    task = load_task(GELU)
    assert isinstance(task, CudaTask)
    return task


def store_at(data: Path) -> ChromaStore:
    return ChromaStore.open(data / "memory", embedding=CodeHashEmbedding())


def three_candidates(gelu: CudaTask) -> tuple[ScriptedLLM, ReplayGpu]:
    """Faster (kept), wrong (rejected), and one that fails to compile twice."""
    gpu = replay_for(
        gelu,
        [
            (FASTER, FASTER_LAUNCH, report(gelu, "correct", 1.3)),
            (WRONG, FASTER_LAUNCH, report(gelu, "wrong", None, "output 'y' not fully written")),
        ],
    )
    broken = FASTER.replace("tanhf", "tanhff")
    model = ScriptedLLM(
        [
            reply(FASTER, FASTER_LAUNCH, ["16-byte vector loads and stores"]),
            "Vector loads helped.",
            reply(WRONG, None, ["grid-stride"]),
            "It skipped the last element.",
            reply(broken, FASTER_LAUNCH, ["unroll"]),
            reply(broken, FASTER_LAUNCH, ["unroll"]),
            "It never compiled.",
        ]
    )
    return model, gpu


def run(data: Path, model: Any, gpu: ReplayGpu, **kw: Any) -> tuple[dict[str, Any], RunDir]:
    kw.setdefault("budget", 3)
    kw.setdefault("plateau", 5)
    kw.setdefault("tune", False)  # the loop's memory; the tune's is tests/agent/test_tune.py's
    return optimize(
        GELU, load(data_dir=data), model=model, gpu=gpu, arch="sm_90", max_repairs=1, **kw
    )


def test_every_measured_attempt_is_stored_with_its_metadata(tmp_path: Path, gelu: CudaTask) -> None:
    model, gpu = three_candidates(gelu)
    out, rundir = run(tmp_path, model, gpu)
    assert [a.verdict for a in out["attempts"]] == ["correct", "wrong", "compile_error"]
    assert chroma_open() == []  # the run let its memory go
    store = store_at(tmp_path)
    assert store.count() == 3
    got = store.collection.get(include=["metadatas", "documents"])
    rows = {
        i: (doc, meta)
        for i, doc, meta in zip(
            got["ids"], got["documents"] or [], got["metadatas"] or [], strict=True
        )
    }
    run_id = rundir.path.name
    doc, meta = rows[f"{run_id}:1"]
    assert doc == FASTER
    assert meta["task_signature"] == "gelu(f32[N])->f32[N]" and meta["op_class"] == "elementwise"
    assert meta["bottleneck"] == "unknown"  # the replay has no Nsight Compute profile
    assert meta["arch"] == "sm_90" and meta["model"] == "scripted" and meta["run_id"] == run_id
    assert meta["tags"] == "vector-access-16b" and meta["technique"] == "vector-access-16b"
    assert meta["verdict"] == "correct" and meta["speedup"] == pytest.approx(1.3)
    assert meta["parent"] == "" and meta["state"] == "" and meta["kept"] is True
    assert meta["explanation"] == "Vector loads helped."
    _, wrong = rows[f"{run_id}:2"]
    assert wrong["verdict"] == "wrong" and wrong["speedup"] == -1.0
    assert wrong["parent"] == f"{run_id}:1" and wrong["state"] == "vector-access-16b"
    assert wrong["parent_speedup"] == pytest.approx(1.3) and wrong["technique"] == "grid-stride"
    _, broken = rows[f"{run_id}:3"]
    assert broken["verdict"] == "compile_error" and "tanhff" in broken["reason"]


def test_without_memory_nothing_is_written_or_searched(tmp_path: Path, gelu: CudaTask) -> None:
    model, gpu = three_candidates(gelu)
    out, _ = run(tmp_path, model, gpu, memory=False)
    assert len(out["attempts"]) == 3 and out["choices"] == []
    assert not (tmp_path / "memory").exists()
    assert "## Technique to apply" not in model.prompts[0][1]["content"]
    assert "coalescing, vector-access-16b, smem-tiling" in model.prompts[0][1]["content"]


def test_the_search_chooses_and_the_graph_learns_and_persists(
    tmp_path: Path, gelu: CudaTask
) -> None:
    model, gpu = three_candidates(gelu)
    events: list[dict[str, Any]] = []
    out, rundir = run(tmp_path, model, gpu, progress=events.append)
    choices = [e["choice"] for e in events if "choice" in e]
    assert len(choices) == 3  # one per candidate, none for the compile repair
    first = choices[0]
    assert isinstance(first, TechniqueChoice) and first.state == ()
    assert first.attempts == 0 and first.visits == 1.0  # a fresh memory: the prior alone
    shown = next(e["message"] for e in events if "choice" in e)
    assert shown.startswith(f"search: {first.tag} for unknown (prior only: 1 visits")
    assert "mean log-speedup" in shown
    prompt = model.prompts[0][1]["content"]
    assert f"(tag: {first.tag})" in prompt and f'"tags": ["{first.tag}"]' in prompt
    assert [c.attempt for c in out["choices"]] == [1, 2, 3]

    saved = SavedGraph.in_dir(tmp_path / "memory")  # read back from the file
    root = saved.graph.peek((), "vector-access-16b", "unknown")
    # its own 1.3x, then credited again (never below what it achieved) by the two attempts
    # made from the kernel it produced
    assert root.attempts == 3 and root.successes == 3
    assert root.sum_log_speedup == pytest.approx(3 * 0.26236, abs=1e-4)
    wrong = saved.graph.peek(("vector-access-16b",), "grid-stride", "unknown")
    assert (wrong.attempts, wrong.successes) == (1, 0) and wrong.mean_log_speedup < 0
    assert saved.learned == {rundir.path.name: 3}

    summary = (rundir.path / "summary.md").read_text()
    assert "## The search: MCGS over the reasoning graph" in summary
    assert "- techniques in the best kernel: vector-access-16b" in summary
    search = summary.split("## The search")[1]
    line = next(ln for ln in search.splitlines() if ln.startswith("| 1 | "))
    assert f"| 1 | {first.tag} | unknown | (original) | 1, 50%, " in line
    assert line.endswith("| vector-access-16b | correct 1.30x kept |")

    # a second run starts from what the first learned
    model2, gpu2 = three_candidates(gelu)
    events2: list[dict[str, Any]] = []
    run(tmp_path, model2, gpu2, progress=events2.append, budget=1)
    again = next(e["choice"] for e in events2 if "choice" in e)
    learned = saved.graph.peek((), again.tag, "unknown")
    assert (again.attempts, again.mean_log_speedup) == (learned.attempts, learned.mean_log_speedup)


class KillAtAttempt:
    """Progress that dies like a killed process when reflect reports attempt `at`: after the
    memory has the attempt, before LangGraph's checkpoint does."""

    def __init__(self, at: int) -> None:
        self.at: int | None = at

    def __call__(self, event: dict[str, Any]) -> None:
        attempt = event.get("attempt")
        if attempt is not None and attempt.index == self.at:
            self.at = None
            raise KeyboardInterrupt


def test_a_resumed_run_never_counts_an_attempt_twice(tmp_path: Path, gelu: CudaTask) -> None:
    second = FASTER.replace("// ", "// second: ", 1)
    gpu = replay_for(
        gelu,
        [
            (FASTER, FASTER_LAUNCH, report(gelu, "correct", 1.3)),
            (second, FASTER_LAUNCH, report(gelu, "correct", 1.4)),
        ],
    )
    script = [
        reply(FASTER, FASTER_LAUNCH, ["coalescing"]),
        "first.",
        reply(second, FASTER_LAUNCH, ["unroll"]),
        "second.",
        "second, explained again after the resume.",
    ]
    model = ScriptedLLM(script)
    with pytest.raises(KeyboardInterrupt):
        run(tmp_path, model, gpu, budget=2, progress=KillAtAttempt(2))
    out, rundir = run(tmp_path, model, gpu, budget=2, resume=True)
    assert [a.speedup for a in out["attempts"]] == [1.3, 1.4]
    assert [a.index for a in rundir.attempts()] == [1, 2]
    assert store_at(tmp_path).count() == 2
    graph = SavedGraph.in_dir(tmp_path / "memory").graph
    total = sum(
        s.attempts for out_ in graph.edges.values() for per in out_.values() for s in per.values()
    )
    assert total == 3  # coalescing, unroll after it, and coalescing credited once more


def test_a_second_process_on_a_related_task_sees_pairs_from_the_first(
    tmp_path: Path, nvrtc: None
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELWRIGHT_")}
    env["KERNELWRIGHT_CONFIG"] = os.devnull
    data = tmp_path / "data"

    def scripted(task: str) -> dict[str, Any]:
        out = tmp_path / f"{task}.json"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "tests.agent.scripted_run",
                str(EXAMPLES / task),
                str(data),
                str(out),
            ],
            cwd=ROOT,
            env=env,
            check=True,
            timeout=300,
        )
        return json.loads(out.read_text())

    first = scripted("softmax")
    assert [a["verdict"] for a in first["attempts"]] == ["wrong", "correct"]
    second = scripted("rowsum")
    prompt = second["prompts"][0][1]["content"]  # rowsum's very first proposal
    assert "## Related attempts measured on this GPU" in prompt
    assert "an earlier run on softmax(f32[M,N])->f32[M,N]), faster (40.00x its original)" in prompt
    softmax = EXAMPLES / "softmax" / "candidates"
    assert (softmax / "faster.cu").read_text().rstrip() in prompt
    assert (softmax / "wrong.cu").read_text().rstrip() in prompt
    assert "rejected: wrong: output 'y' wrong at 7 of 4,096 elements" in prompt
    assert any(
        m.startswith("memory: 1 contrastive pair(s), 0 from this run") for m in second["events"]
    )
    # and the memory outlived the first process: the second run's attempts join the first's
    assert store_at(data).count() == 4


def test_the_search_offers_only_techniques_that_can_apply() -> None:
    """fewer-atomics has the highest prior for a latency-bound kernel, but a softmax with no
    atomics never gets it; one with atomics does. An elementwise kernel gets no reduction work."""
    from kernelwright.agent.experience import choose
    from kernelwright.memory.reasoning import ReasoningGraph

    graph = ReasoningGraph()
    softmax = (EXAMPLES / "softmax" / "softmax.cu").read_text()
    assert "atomic" not in softmax
    first = choose(graph, [], "latency-bound", [], softmax, "reduction")
    assert first is not None and first.tag in ("warp-shuffle", "hierarchical-reduction")
    with_atomics = softmax + "\n__device__ void bump(float* y) { atomicAdd(&y[0], 1.0f); }\n"
    assert choose(graph, [], "latency-bound", [], with_atomics, "reduction").tag == "fewer-atomics"
    offered = set()
    for _ in range(len(graph.options(()))):
        c = choose(graph, [], "latency-bound", sorted(offered), "y[i] = x[i];", "elementwise")
        if c is None or c.tag in offered:
            break
        offered.add(c.tag)
    assert offered and not offered & {"fewer-atomics", "hierarchical-reduction", "warp-shuffle"}


def test_a_verified_step_is_the_next_runs_worked_example(tmp_path: Path, gelu: CudaTask) -> None:
    """Run 1 measures the search's first technique at 1.3x on gelu; run 2 chooses it again from
    the original kernel and shows that very step as the worked example (before: gelu.cu, after:
    run 1's kernel), measured on this GPU's architecture. Run 1 had only a shipped pair."""

    def one_run() -> tuple[ScriptedLLM, list[dict[str, Any]]]:
        gpu = replay_for(gelu, [(FASTER, FASTER_LAUNCH, report(gelu, "correct", 1.3))])
        model = ScriptedLLM([reply(FASTER, FASTER_LAUNCH, []), "Vector loads helped."])
        events: list[dict[str, Any]] = []
        run(tmp_path, model, gpu, budget=1, progress=events.append)
        return model, events

    first_model, first_events = one_run()
    second_model, second_events = one_run()
    tag = next(e["choice"] for e in first_events if "choice" in e).tag
    assert next(e["choice"] for e in second_events if "choice" in e).tag == tag

    shown = [e for e in first_events if "worked_example" in e]
    first = first_model.prompts[0][1]["content"]
    if shown:  # a shipped pair for the technique, on another task: never this run's kernel
        assert "(shipped, " in shown[0]["message"] and FASTER.rstrip() not in first
        assert "## Worked example of this step" in first
    sig = "gelu(f32[N])->f32[N]"
    (event,) = [e for e in second_events if "worked_example" in e]
    assert event["message"] == (
        f"example: {tag} on {sig} (memory, measured 1.30x on an sm_90 GPU, as here)"
    )
    section = second_model.prompts[0][1]["content"].split("## Worked example of this step")[1]
    assert section.split("## Answer format")[0].count("```cuda") == 2
    assert (
        "Measured on an sm_90 GPU, as here: the after kernel ran 1.30x as fast as the before "
        f"one, on this task ({sig}); both were verified correct." in section
    )
    assert f"Before:\n```cuda\n{gelu.source.rstrip()}\n```" in section
    assert f"After:\n```cuda\n{FASTER.rstrip()}\n```" in section
