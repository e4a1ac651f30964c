"""The prompt templates rendered with a real task and real-looking values, against snapshots.

Snapshots live in tests/prompts/snapshots/; `KW_UPDATE_SNAPSHOTS=1 python -m pytest tests/prompts`
rewrites them after a deliberate change to a template (review the diff before committing).
"""

from __future__ import annotations

import ast
import difflib
import os
import re
from pathlib import Path
from typing import Any

import jinja2
import pytest

from kernelwright.memory import shipped, worked
from kernelwright.prompts import render
from kernelwright.tools.results import Attempt, CompileResult, ProfileResult
from kernelwright.tools.spec import CudaTask
from kernelwright.tools.task import load_task
from tests.conftest import EXAMPLES

SNAPSHOTS = Path(__file__).resolve().parent / "snapshots"
UPDATE = os.environ.get("KW_UPDATE_SNAPSHOTS") == "1"

FASTER = (EXAMPLES / "softmax" / "candidates" / "faster.cu").read_text()
WRONG = (EXAMPLES / "softmax" / "candidates" / "wrong.cu").read_text()
WRONG_REASON = (
    "output 'y' wrong at 4,998 of 5,000 elements (max abs error 2.31 at [3, 17]: "
    "got 2.51193, expected 0.201843; ...)"
)
# A wrong variant of FASTER: the last pass forgets to subtract the row max.
WRONG_FAST = FASTER.replace("o[j] = expf(r[j] - mx) * inv;", "o[j] = expf(r[j]) * inv;")
# What NVRTC printed for FASTER with `s` misspelt (recorded).
BROKEN = FASTER.replace("float inv = 1.0f / s;", "float inv = 1.0f / total;")
BROKEN_LOG = (
    'candidate.cu(48): error: identifier "total" is undefined\n'
    "      float inv = 1.0f / total;\n"
    "                         ^\n\n"
    '1 error detected in the compilation of "candidate.cu".'
)
# Braces that a template engine would eat if a source were ever treated as template text.
BRACES = (
    'extern "C" __global__ void softmax(const float* x, float* y, int m, int n)\n'
    "{\n"
    "    // {{ not a variable }} {% if x %} {# not a comment #} {{- trim -}}\n"
    "    int pad[2] = {{0}};\n"
    "    if (m > 0) {{ y[0] = x[0] + pad[0]; }}\n"
    "}}\n"
)
VECTORIZE = {
    "tag": "vector-access-16b",
    "name": "vectorized memory access",
    "when": "memory-bound kernels whose threads read consecutive floats: float4 moves 16 bytes "
    "per instruction",
    "pitfalls": "needs 16-byte aligned addresses; the last n % 4 elements need a scalar tail",
    "bottleneck": "memory-bound",
    "attempts": 3,
    "success_rate": 0.625,
    "mean_speedup": 1.182,
}
TECHNIQUES = ["coalescing", "warp-per-row", "block-per-row", "vector-access-16b", "tiling"]
# How a shipped pair reads once measured, and before (set here: the index may be either).
MEASURED = {"speedup": 1.368, "gpu": "NVIDIA H100 80GB HBM3", "arch": "sm_90"}
UNMEASURED: dict[str, Any] = {"speedup": None, "gpu": "", "arch": ""}


def shipped_pair(name: str) -> worked.WorkedExample:
    return next(e for e in shipped.shipped() if e.id == name)


def worked_view(name: str, *, sig: str = "softmax(f32[M,N])->f32[M,N]", **update: Any) -> Any:
    """A shipped pair as the propose node shows it to a softmax task."""
    pair = shipped_pair(name).model_copy(update=update)
    return worked.as_prompt(pair, task_signature=sig, op_class="reduction", arch="sm_90")


VECTOR_PAIR = worked_view("gelu-vector-access", **MEASURED)


@pytest.fixture(scope="module")
def task() -> CudaTask:
    t = load_task(EXAMPLES / "softmax")
    assert isinstance(t, CudaTask)
    return t


def profile_view(profile: ProfileResult, compiled: CompileResult) -> dict[str, Any]:
    """What the propose node shows: Nsight Compute's metrics and the compiler's resources."""
    return {
        "bottleneck": profile.bottleneck,
        "duration_ms": profile.duration_ms,
        "sm_pct": profile.sm_pct,
        "dram_pct": profile.dram_pct,
        "achieved_occupancy_pct": profile.achieved_occupancy_pct,
        "theoretical_occupancy_pct": profile.theoretical_occupancy_pct,
        "registers": compiled.registers,
        "shared_mem_bytes": compiled.shared_mem_bytes,
        "spill_stores_bytes": compiled.spill_stores_bytes,
        "spill_loads_bytes": compiled.spill_loads_bytes,
    }


NAIVE_PROFILE = profile_view(
    ProfileResult(
        available=True,
        kernel_name="softmax",
        duration_ms=21.8734,
        sm_pct=4.1,
        dram_pct=11.7,
        memory_pct=38.2,
        achieved_occupancy_pct=6.2,
        theoretical_occupancy_pct=100.0,
        registers_per_thread=31,
        bottleneck="latency-bound",
    ),
    CompileResult(
        ok=True,
        backend="nvrtc",
        arch="sm_90",
        duration_ms=90.6,
        registers=31,
        shared_mem_bytes=0,
        local_mem_bytes=0,
        spill_stores_bytes=0,
        spill_loads_bytes=0,
    ),
)
FASTER_PROFILE = profile_view(
    ProfileResult(
        available=True,
        kernel_name="softmax",
        duration_ms=0.1412,
        sm_pct=41.3,
        dram_pct=79.6,
        achieved_occupancy_pct=88.9,
        theoretical_occupancy_pct=100.0,
        bottleneck="memory-bound",
    ),
    CompileResult(
        ok=True,
        backend="nvrtc",
        arch="sm_90",
        duration_ms=88.2,
        registers=26,
        shared_mem_bytes=64,
        spill_stores_bytes=0,
        spill_loads_bytes=0,
    ),
)
ATTEMPTS = [
    Attempt(
        index=1,
        parent=0,
        tags=("block-per-row",),
        source=FASTER,
        verdict="correct",
        reason="correct: 6 trials over 4 shapes (one held out)",
        speedup=154.9,
        kept=True,
    ),
    Attempt(
        index=2,
        parent=1,
        tags=("block-per-row", "tiling"),
        source=BROKEN,
        verdict="compile_error",
        reason='candidate.cu(48): error: identifier "total" is undefined',
    ),
    Attempt(
        index=3,
        parent=1,
        tags=("block-per-row", "strength reduction"),
        source=WRONG_FAST,
        verdict="wrong",
        reason=WRONG_REASON,
    ),
    Attempt(
        index=4,
        parent=1,
        tags=("block-per-row", "loop unrolling"),
        source=FASTER,
        verdict="correct",
        reason="correct: 6 trials over 4 shapes (one held out)",
        speedup=151.2,
    ),
]


def propose(task: CudaTask, **overrides: Any) -> list[dict[str, str]]:
    """The normal round: a best kernel with its profile and this run's earlier attempts."""
    values: dict[str, Any] = {
        "task": task,
        "launch": {"block": ["256"], "grid": ["M"], "shared_mem_bytes": "0"},
        "source": FASTER,
        "speedup": 154.9,
        "profile": FASTER_PROFILE,
        "technique": VECTORIZE,
        "techniques": TECHNIQUES,
        "attempts": ATTEMPTS,
        "max_attempts": 3,
        "contrastive": [],
        "worked_example": VECTOR_PAIR,
        "repair": None,
    }
    values.update(overrides)
    return render.render("propose", **values)


def first_round(task: CudaTask, **overrides: Any) -> list[dict[str, str]]:
    values: dict[str, Any] = {
        "launch": task.launch,
        "source": task.source,
        "speedup": 1.0,
        "profile": None,
        "technique": None,
        "attempts": [],
        "worked_example": None,
    }
    values.update(overrides)
    return propose(task, **values)


def reflect(**overrides: Any) -> list[dict[str, str]]:
    values: dict[str, Any] = {
        "tags": ["block-per-row"],
        "verdict": "correct",
        "reason": "correct: 6 trials over 4 shapes (one held out)",
        "speedup": 154.9,
        "best_speedup": 1.0,
        "profile_before": NAIVE_PROFILE,
        "profile_after": FASTER_PROFILE,
        "diff": unified_diff(
            (EXAMPLES / "softmax" / "softmax.cu").read_text(), FASTER, "best.cu", "candidate.cu"
        ),
    }
    values.update(overrides)
    return render.render("reflect", **values)


def unified_diff(before: str, after: str, a: str, b: str) -> str:
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True), after.splitlines(keepends=True), a, b
        )
    )


def as_text(messages: list[dict[str, str]]) -> str:
    return "".join(f"=== {m['role']} ===\n{m['content']}\n" for m in messages)


def assert_snapshot(case: str, messages: list[dict[str, str]]) -> None:
    path = SNAPSHOTS / f"{case}.txt"
    text = as_text(messages)
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return
    if not path.is_file():
        pytest.fail(f"no snapshot {path.name}: run with KW_UPDATE_SNAPSHOTS=1 to write it")
    expected = path.read_text()
    if text != expected:
        diff = difflib.unified_diff(
            expected.splitlines(keepends=True),
            text.splitlines(keepends=True),
            f"snapshots/{path.name}",
            "rendered",
        )
        pytest.fail(
            f"prompt {case!r} differs from its snapshot "
            "(KW_UPDATE_SNAPSHOTS=1 rewrites it):\n" + "".join(diff)
        )


def answer_format(messages: list[dict[str, str]]) -> str:
    user = messages[1]["content"]
    assert user.count("## Answer format") == 1
    return user.split("## Answer format", 1)[1]


# --- snapshots ---


def test_propose_normal(task: CudaTask) -> None:
    messages = propose(task)
    assert [m["role"] for m in messages] == ["system", "user"]
    assert_snapshot("propose_normal", messages)


def test_propose_first_round(task: CudaTask) -> None:
    assert_snapshot("propose_first_round", first_round(task))


def test_propose_repair(task: CudaTask) -> None:
    messages = propose(task, repair={"source": BROKEN, "log": BROKEN_LOG})
    assert_snapshot("propose_repair", messages)


def test_propose_contrastive(task: CudaTask) -> None:
    pairs = [
        {
            "origin": "this run",
            "task": "softmax(f32[M,N])->f32[M,N]",
            "faster": {"source": FASTER, "speedup": 154.9},
            "slower": {"source": WRONG, "speedup": None, "reason": f"wrong: {WRONG_REASON}"},
        },
        {
            "origin": "similar",
            "task": "rowsum(f32[M,N])->f32[M]",
            "faster": {"source": FASTER, "speedup": 154.9},
            "slower": {"source": task.source, "speedup": 1.0, "reason": ""},
        },
    ]
    messages = first_round(task, contrastive=pairs, attempts=ATTEMPTS[:1])
    assert "## Related attempts" in messages[1]["content"]
    assert_snapshot("propose_contrastive", messages)


def test_reflect_correct() -> None:
    assert_snapshot("reflect_correct", reflect())


def test_reflect_wrong() -> None:
    messages = reflect(
        tags=["block-per-row", "strength reduction"],
        verdict="wrong",
        reason=WRONG_REASON,
        speedup=None,
        best_speedup=154.9,
        profile_before=FASTER_PROFILE,
        profile_after=None,
        diff=unified_diff(FASTER, WRONG_FAST, "best.cu", "candidate.cu"),
    )
    assert_snapshot("reflect_wrong", messages)


# --- behaviour ---


@pytest.mark.parametrize("name", ["propose", "reflect", "ask"])
def test_templates_load_as_package_data(name: str) -> None:
    templates = render.load(name)
    assert {"system", "user"} <= set(templates)
    assert render.variables(name)


def test_a_missing_variable_raises(task: CudaTask) -> None:
    values = {name: None for name in render.variables("propose")}
    del values["source"]
    with pytest.raises(jinja2.UndefinedError, match="source"):
        render.render("propose", **values)
    values = {name: None for name in render.variables("reflect")}
    del values["diff"]
    with pytest.raises(jinja2.UndefinedError, match="diff"):
        render.render("reflect", **values)


def test_a_missing_field_raises(task: CudaTask) -> None:
    with pytest.raises(jinja2.UndefinedError, match="pitfalls"):
        propose(task, technique={k: v for k, v in VECTORIZE.items() if k != "pitfalls"})


def test_an_unknown_variable_raises(task: CudaTask) -> None:
    with pytest.raises(TypeError, match="attemps"):
        propose(task, attemps=[])


def test_cuda_braces_survive_unchanged(task: CudaTask) -> None:
    pair = {
        "origin": "same class",
        "task": "softmax(f32[M,N])->f32[M,N]",
        "faster": {"source": BRACES, "speedup": 2.0},
        "slower": {"source": BRACES, "speedup": 0.5, "reason": ""},
    }
    braced = {**VECTOR_PAIR, "before": {"source": BRACES, "hidden": 0, "launch": None}}
    braced["after"] = braced["before"]
    normal = propose(task, source=BRACES, contrastive=[pair], worked_example=braced)
    assert normal[1]["content"].count(BRACES.rstrip()) == 5
    repair = propose(task, repair={"source": BRACES, "log": "{{ log }}"})[1]["content"]
    assert BRACES.rstrip() in repair and "{{ log }}" in repair
    diff = unified_diff(task.source, BRACES, "best.cu", "candidate.cu")
    reflected = reflect(diff=diff)[1]["content"]
    assert diff.rstrip("\n") in reflected


@pytest.mark.parametrize("example", ["softmax", "gelu", "transpose"])
def test_answer_format_names_the_entry_point(example: str) -> None:
    t = load_task(EXAMPLES / example)
    assert isinstance(t, CudaTask)
    for messages in (first_round(t), propose(t, repair={"source": BROKEN, "log": BROKEN_LOG})):
        fmt = answer_format(messages)
        assert f'extern "C" __global__ void {t.entry}(...)' in fmt
        assert ", ".join(a.name for a in t.args) in fmt
        assert "```cuda" in fmt and "```json" in fmt
        assert "ceil_div(a, b)" in fmt


def test_answer_format_example_is_the_current_launch(task: CudaTask) -> None:
    fmt = answer_format(first_round(task))
    assert '"block": ["256"], "grid": ["ceil_div(M, 256)"], "shared_mem_bytes": "0"' in fmt


def test_no_contrastive_heading_without_pairs(task: CudaTask) -> None:
    user = propose(task, contrastive=[])[1]["content"]
    assert "Related attempts" not in user


def test_attempts_newest_last_and_at_most_n(task: CudaTask) -> None:
    user = propose(task, max_attempts=2)[1]["content"]
    assert "#1 " not in user and "#2 " not in user
    assert user.index("#3 [") < user.index("#4 [")
    assert "(2 older not shown)" in user
    assert "## Earlier attempts" not in propose(task, max_attempts=0)[1]["content"]


def test_absent_metrics_read_not_measured(task: CudaTask) -> None:
    user = propose(task, profile={"bottleneck": "memory-bound", "dram_pct": 83.0})[1]["content"]
    assert "- DRAM throughput: 83.0% of peak" in user
    assert "- duration: not measured" in user
    assert "- spill loads: not measured" in user
    assert "not measured" in first_round(task)[1]["content"].split("## Its profile")[1]


def test_no_technique_lists_the_candidates(task: CudaTask) -> None:
    user = first_round(task)[1]["content"]
    assert "## Technique to apply" not in user
    assert ", ".join(TECHNIQUES) in user


def test_multiple_of_is_shown_only_when_set(task: CudaTask) -> None:
    assert "multiples of" not in first_round(task)[1]["content"]
    aligned = task.model_copy(update={"multiple_of": {"N": 4}})
    assert "Sizes are always multiples of: N=4\n" in first_round(aligned)[1]["content"]


def test_the_recorded_variants_differ_from_the_kernel() -> None:
    assert FASTER not in (BROKEN, WRONG_FAST)


def test_a_long_compile_log_is_trimmed(task: CudaTask) -> None:
    log = "\n".join(f"candidate.cu({i}): error: expected a ';'" for i in range(1, 81))
    user = propose(task, repair={"source": BROKEN, "log": log})[1]["content"]
    assert "(first 30 of 80 lines)" in user
    assert "candidate.cu(30):" in user and "candidate.cu(31):" not in user


def test_a_long_diff_is_trimmed() -> None:
    diff = "--- best.cu\n+++ candidate.cu\n@@ -1,400 +1,400 @@\n" + "".join(
        f"+line {i}\n" for i in range(400)
    )
    user = reflect(diff=diff)[1]["content"]
    assert "(first 150 of 403 lines)" in user
    assert "+line 146\n" in user and "+line 147\n" not in user
    assert "(no change to the source)" in reflect(diff="")[1]["content"]


def test_the_searchs_evidence_is_shown_only_when_measured(task: CudaTask) -> None:
    user = propose(task)[1]["content"]
    assert "## Technique to apply: vectorized memory access (tag: vector-access-16b)" in user
    assert "On this GPU, for memory-bound kernels: 3 measured attempts, 62% correct" in user
    fresh = propose(task, technique={**VECTORIZE, "attempts": 0})[1]["content"]
    assert "On this GPU" not in fresh and "(tag: vector-access-16b)" in fresh
    assert '"tags": ["vector-access-16b"]' in answer_format(propose(task))


def test_a_measured_worked_example_says_where_and_how_much(task: CudaTask) -> None:
    user = propose(task)[1]["content"]
    assert "## Worked example of this step: 16-byte vector loads and stores\n" in user
    assert (
        "Measured on NVIDIA H100 80GB HBM3 (sm_90): the after kernel ran 1.37x as fast as the "
        "before one, on another kind of task (gelu(f32[N])->f32[N]); both were verified correct.\n"
    ) in user
    pair = shipped_pair("gelu-vector-access")
    before, after = pair.before.source, pair.after.source
    assert (
        f"Before (launch: block [256], grid [ceil_div(N, 256)]):\n```cuda\n{before.rstrip()}\n```"
        in user
    )
    assert (
        f"After (launch: block [256], grid [ceil_div(N, 1024)]):\n```cuda\n{after.rstrip()}\n```"
        in user
    )
    assert "slower there" not in user
    slower = worked_view("gelu-vector-access", **{**MEASURED, "speedup": 0.84})
    assert "ran 0.84x as fast" in propose(task, worked_example=slower)[1]["content"]
    assert "It was slower there" in propose(task, worked_example=slower)[1]["content"]


def test_an_unmeasured_worked_example_claims_no_speedup(task: CudaTask) -> None:
    view = worked_view("gelu-vector-access", sig="gelu(f32[N])->f32[N]", **UNMEASURED)
    user = propose(task, worked_example=view)[1]["content"]
    section = user.split("## Worked example of this step")[1].split("## Answer format")[0]
    assert "An illustration, not measured here, on this task (gelu(f32[N])->f32[N])" in section
    assert "Measured" not in section and "as fast" not in section
    assert re.search(r"\d+\.\d+x", section) is None


def test_a_long_worked_example_is_cut_at_sixty_lines(task: CudaTask) -> None:
    long = "\n".join(f"    int v{i} = {i};" for i in range(75))
    view = worked_view("gelu-vector-access", after=worked.Side(source=long), **MEASURED)
    user = propose(task, worked_example=view)[1]["content"]
    assert "    int v59 = 59;\n```\n(15 more lines not shown)\n" in user
    assert "v60" not in user


def test_no_worked_example_section_without_one(task: CudaTask) -> None:
    user = propose(task, worked_example=None)[1]["content"]
    assert "Worked example" not in user and "Example of the technique" not in user


# --- the KernelBench variant ---

KB_PROBLEM = EXAMPLES / "kernelbench" / "relu_mlp.py"
KB_SIG = "kernelbench:relu_mlp(batch_size=128,in_features=1024,out_features=1024)"
KB_FASTER = (EXAMPLES / "kernelbench" / "relu_mlp_candidate.py").read_text()
KB_BROKEN = KB_FASTER.replace("def forward(self, x):", "def forward(self, x)")
KB_LOG = "candidate.py, line 29: error: SyntaxError: expected ':'\n        def forward(self, x)"
KB_ATTEMPTS = [
    Attempt(
        index=1,
        parent=0,
        tags=("kernel-fusion",),
        source=KB_FASTER,
        verdict="correct",
        reason="correct: 6 trials over 3 shapes (one held out)",
        speedup=1.62,
        kept=True,
    ),
    Attempt(
        index=2,
        parent=1,
        tags=("vector-access-16b",),
        source=KB_FASTER,
        verdict="wrong",
        reason="output 0 wrong at 65,536 of 131,072 elements",
    ),
]


@pytest.fixture(scope="module")
def kb_task() -> Any:
    from kernelwright.tools.kernelbench import KernelBenchTask

    t = load_task(KB_PROBLEM)
    assert isinstance(t, KernelBenchTask)
    return t


def propose_kb(task: Any, **overrides: Any) -> list[dict[str, str]]:
    """A normal KernelBench round: a best ModelNew, the search's technique, earlier attempts."""
    values: dict[str, Any] = {
        "task": task,
        "source": KB_FASTER,
        "speedup": 1.62,
        "best_ms": 0.0494,
        "technique": VECTORIZE,
        "techniques": TECHNIQUES,
        "attempts": KB_ATTEMPTS,
        "max_attempts": 8,
        "contrastive": [],
        "worked_example": None,
        "repair": None,
    }
    values.update(overrides)
    return render.render("propose_kernelbench", **values)


def test_a_kernelbench_prompt_shows_its_kinds_pair(kb_task: Any) -> None:
    view = worked_view("relu-mlp-fusion", sig=KB_SIG, **UNMEASURED)
    user = propose_kb(kb_task, worked_example=view)[1]["content"]
    section = user.split("## Worked example of this step: Kernel and operator fusion\n")[1]
    assert section.startswith("An illustration, not measured here, on this task (kernelbench:")
    fused = shipped_pair("relu-mlp-fusion").after.source
    assert f"After:\n```python\n{fused.rstrip()}\n```" in section
    assert "Take the same step on the current file" in section


def test_propose_kernelbench_first_round(kb_task: Any) -> None:
    messages = propose_kb(
        kb_task, source=None, speedup=1.0, best_ms=0.0801, technique=None, attempts=[]
    )
    user = messages[1]["content"]
    assert kb_task.source.rstrip() in user and "Current best: PyTorch eager itself" in user
    assert "Earlier attempts" not in user and ", ".join(TECHNIQUES) in user
    assert_snapshot("propose_kernelbench_first_round", messages)


def test_propose_kernelbench_normal(kb_task: Any) -> None:
    messages = propose_kb(kb_task)
    user = messages[1]["content"]
    assert "## Current best ModelNew (1.62x PyTorch eager, 0.0494 ms)" in user
    assert KB_FASTER.rstrip() in user and "#2 [vector-access-16b] wrong: output 0" in user
    assert '"tags": ["vector-access-16b"]' in answer_format(messages)
    assert "```cuda" not in user
    assert_snapshot("propose_kernelbench_normal", messages)


def test_propose_kernelbench_repair(kb_task: Any) -> None:
    messages = propose_kb(kb_task, repair={"source": KB_BROKEN, "log": KB_LOG})
    user = messages[1]["content"]
    assert "did not pass its check" in user and KB_LOG.splitlines()[0] in user
    assert "## Current best" not in user
    assert_snapshot("propose_kernelbench_repair", messages)


def test_propose_kernelbench_contrastive(kb_task: Any) -> None:
    pairs = [
        {
            "origin": "this run",
            "task": "kernelbench:relu_mlp(batch_size=128,in_features=1024,out_features=1024)",
            "faster": {"source": KB_FASTER, "speedup": 1.62},
            "slower": {"source": KB_BROKEN, "speedup": None, "reason": "wrong: output 0 wrong"},
        }
    ]
    messages = propose_kb(kb_task, contrastive=pairs)
    assert "## Related attempts" in messages[1]["content"]
    assert_snapshot("propose_kernelbench_contrastive", messages)


def test_propose_kernelbench_system_states_the_contract(kb_task: Any) -> None:
    system = propose_kb(kb_task)[0]["content"]
    assert "class ModelNew(torch.nn.Module)" in system
    assert "cupy.RawKernel" in system and "about a second" in system
    assert "load_inline" in system and "50 seconds" in system
    assert "same __init__ arguments" in system


def test_python_braces_survive_unchanged(kb_task: Any) -> None:
    source = KB_FASTER + "\nX = {'a': {{1}}}  # {% raw %} {{ not a variable }}\n"
    user = propose_kb(kb_task, source=source)[1]["content"]
    assert source.rstrip() in user


# --- the other sentences the model reads: repair rounds, the technique hint, a chat question ---


@pytest.mark.parametrize("missing", ["code", "entry", "metadata"])
def test_repair_rounds(missing: str) -> None:
    from kernelwright.agent import replies, replies_kernelbench
    from kernelwright.agent.replies import ReplyError

    error = ReplyError(missing, "no ```cuda block {braces} found", "softmax_kernel")  # type: ignore[arg-type]
    cuda, kb = replies.repair_message(error), replies_kernelbench.repair_message(error)
    assert_snapshot(f"repair_{missing}", [dict(cuda)])
    assert_snapshot(f"repair_kernelbench_{missing}", [dict(kb)])
    assert cuda["content"].startswith(
        "Your last reply could not be used: no ```cuda block {braces}"
    )


def test_the_technique_hint_is_added_to_the_last_user_message() -> None:
    from kernelwright.agent.doors.jobs import GuidedModel
    from kernelwright.agent.llm import Message

    class Echo:
        name = "echo"

        def ensure_ready(self) -> None:
            pass

        def complete(self, messages: list[Message]) -> str:
            return "\n---\n".join(m["content"] for m in messages)

    model = GuidedModel(Echo(), "tiling {{ x }}")
    said = model.complete([Message(role="system", content="s"), Message(role="user", content="u")])
    assert said == "s\n---\nu\n\nThe user asked for this technique in this session: tiling {{ x }}."
    reply_last = [Message(role="user", content="u"), Message(role="assistant", content="a")]
    assert model.complete(reply_last) == "u\n---\na"  # only a user's message carries it


def test_a_chat_question(task: CudaTask) -> None:
    values: dict[str, Any] = {
        "kernel": task.name,
        "lang": "cuda",
        "source": task.source,
        "measured": ["time: 0.0123 ms ± 0.0001 (median ± half IQR, 40 samples)"],
        "best": {"speedup": 154.9, "tags": "block-per-row", "source": FASTER},
        "question": "why is it {% slow %}?",
    }
    assert_snapshot("ask", render.render("ask", **values))
    bare = render.render("ask", **{**values, "measured": None, "best": None})
    assert "- not measured\n\n## Question\nwhy is it {% slow %}?" in bare[1]["content"]
    assert "## Best candidate" not in bare[1]["content"]


def test_a_prompt_file_needs_a_system_or_a_user_template() -> None:
    assert [m["role"] for m in render.render("technique_hint", hint="x")] == ["user"]
    assert set(render.load("repair")) == {"user"}


def _sentence(text: str) -> bool:
    """Words, not a key or a role name ("content", "user") nor a joiner ("\\n\\n")."""
    return " " in text.strip() and any(c.isalpha() for c in text)


def _written(content: ast.AST) -> bool:
    """Whether an expression holds words written in code (in a string or an f-string), other
    than a key it reads a value by (m["content"]); joining texts with blank lines is no sentence."""
    keys = {id(n.slice) for n in ast.walk(content) if isinstance(n, ast.Subscript)}
    texts = [
        n.value
        for n in ast.walk(content)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in keys
    ]
    texts += [  # an f-string's words around its fields: f"use {x} now" is "use {} now"
        "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in n.values)
        for n in ast.walk(content)
        if isinstance(n, ast.JoinedStr)
    ]
    return any(_sentence(str(t)) for t in texts)


def _assigned(scope: ast.AST) -> dict[str, list[ast.AST]]:
    """What each name is given in a module or a function: `x = ...` and `x += ...`."""
    given: dict[str, list[ast.AST]] = {}
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign) and node.value:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Name):
                    given.setdefault(t.id, []).append(node.value)
    return given


def written_messages(source: str) -> list[int]:
    """Lines where a chat message gets words written in code: as a literal, or through a name
    the module or the function gives a literal."""
    tree = ast.parse(source)
    module = _assigned(tree)
    functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]
    found = []
    for fn in functions:
        names = {**module, **_assigned(fn)}
        for node in ast.walk(fn):
            content = None
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "Message":
                content = next((k.value for k in node.keywords if k.arg == "content"), None)
            elif isinstance(node, ast.Dict):
                keys = [k.value if isinstance(k, ast.Constant) else None for k in node.keys]
                if "role" in keys and "content" in keys:
                    content = node.values[keys.index("content")]
            if content is None:
                continue
            values = [content] + [
                v for n in ast.walk(content) if isinstance(n, ast.Name) for v in names.get(n.id, [])
            ]
            if any(_written(v) for v in values):
                found.append(node.lineno)
    return sorted(set(found))


def test_no_sentence_for_the_model_is_written_in_agent_code() -> None:
    # Every sentence the model reads lives in prompts/: a message built in agent/ code takes
    # its content from a render(), a reply, or the user's own words, never from a literal.
    root = Path(__file__).resolve().parents[2] / "agent"
    found = [
        f"{path.relative_to(root.parent)}:{line}"
        for path in sorted(root.rglob("*.py"))
        for line in written_messages(path.read_text())
    ]
    assert not found, "messages with sentences written in code: " + ", ".join(found)


def test_the_guard_sees_a_written_sentence() -> None:
    def written(expr: str) -> bool:
        return _written(ast.parse(expr, mode="eval").body)

    assert written('"Your reply was wrong"') and written('f"use {x} now"') and written('a + "x y"')
    assert not written('m["content"]') and not written("question") and not written("a + b")
    assert not written("f\"{system}\\n\\n{m['content']}\"")
