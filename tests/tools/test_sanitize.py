"""compute-sanitizer's reports, judged from recorded output (no GPU): any error a tool reports
makes the candidate wrong, with the first finding as the reason; a sanitizer that did not finish
is no pass; the launches it watches are drawn by the controller as a trial's are."""

from __future__ import annotations

import random
from typing import Any

import pytest

from kernelwright.tools import sanitize
from kernelwright.tools.results import CheckReport, SanitizeResult
from kernelwright.tools.task import load_task
from tests.conftest import EXAMPLES

CLEAN = "========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n"
RACE = """========= COMPUTE-SANITIZER
========= Error: Race reported between Write access at reduce+0x1a0 in /k.cu:12
=========     and Read access at reduce+0x1f0 in /k.cu:14 [64 hazards]
=========
========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)
========= ERROR SUMMARY: 1 error
"""
OOB = """========= COMPUTE-SANITIZER
========= Invalid __global__ write of size 4 bytes
=========     at gelu+0x90
=========     by thread (255,0,0) in block (3,0,0)
=========     Address 0x7f0000001000 is out of bounds
========= ERROR SUMMARY: 1 error
"""


def test_clean_runs_pass() -> None:
    tools = {t: CLEAN for t in sanitize.TOOLS}
    result = sanitize.judge({"type": "sanitized", "tools": tools}, [{"N": 1000}])
    assert result.available and result.ok and result.errors == dict.fromkeys(sanitize.TOOLS, 0)


def test_a_race_is_a_finding_with_its_reason() -> None:
    tools = {"memcheck": CLEAN, "racecheck": RACE, "initcheck": CLEAN, "synccheck": CLEAN}
    result = sanitize.judge(
        {"type": "sanitized", "tools": tools}, [{"M": 129, "N": 33}, {"M": 7, "N": 1200}]
    )
    assert result.available and not result.ok
    assert result.reason.startswith(
        "compute-sanitizer racecheck: 1 errors at M=129, N=33 and M=7, N=1200"
    )
    assert result.sizes == {"M": 129, "N": 33} and len(result.launch_sizes) == 2
    assert "Race reported between Write access" in result.reason
    assert result.findings[0].startswith("racecheck: Error: Race reported")


def test_an_out_of_bounds_write_is_named() -> None:
    result = sanitize.judge({"type": "sanitized", "tools": {"memcheck": OOB}}, [{"N": 1000}])
    assert not result.ok and "Invalid __global__ write of size 4 bytes" in result.reason


def correct() -> CheckReport:
    return CheckReport(task="softmax", candidate="c.cu", verdict="correct", reason="")


def test_a_tool_that_never_summarised_is_not_a_pass() -> None:
    """A kernel that hangs only under the sanitizer (its slowdown is easy to see) was kept as
    a run's best: the old judge called that "did not run", which the gate let through."""
    hung = {"memcheck": "timed out after 600 s"}
    result = sanitize.judge({"type": "sanitized", "tools": hung}, [])
    assert result.available and not result.ok and not result.finished
    assert "did not finish on this candidate" in result.reason
    assert "memcheck (timed out after 600 s)" in result.reason
    gated = correct().with_sanitizer(result)
    assert not gated.ok and gated.verdict == "timeout" and gated.reason == result.reason
    for broken in ({"type": "oops"}, {"type": "sanitized", "tools": "x"}):
        assert not correct().with_sanitizer(sanitize.judge(broken, [])).ok


def test_one_tool_that_hung_beside_clean_ones_is_not_a_pass() -> None:
    tools = {"memcheck": CLEAN, "racecheck": "timed out after 600 s", "initcheck": CLEAN}
    result = sanitize.judge({"type": "sanitized", "tools": tools}, [{"N": 1000}])
    assert not result.ok and not result.finished and "racecheck" in result.reason
    # a tool asked for that the report leaves out is no pass either
    clean = {t: CLEAN for t in ("memcheck", "initcheck")}
    missing = sanitize.judge({"type": "sanitized", "tools": clean}, [], sanitize.TOOLS)
    assert not missing.ok and "racecheck (no output)" in missing.reason


def test_a_finding_beside_a_hang_is_the_reason() -> None:
    tools = {"memcheck": OOB, "racecheck": "timed out after 600 s"}
    result = sanitize.judge({"type": "sanitized", "tools": tools}, [{"N": 1000}])
    assert not result.ok and result.finished and "Invalid __global__ write" in result.reason
    assert correct().with_sanitizer(result).verdict == "wrong"


def test_a_sanitizer_not_installed_leaves_the_verdict_and_says_so() -> None:
    absent = SanitizeResult(available=False, reason="compute-sanitizer is not installed")
    gated = correct().with_sanitizer(absent)
    assert gated.ok and gated.sanitizer == absent


def test_a_kernel_that_reads_the_gpus_clock_is_no_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """A kernel that times its own shared-memory round trips with clock64() takes its safe
    path only when they are slow, as under the sanitizer's tools: the sanitizer cannot vouch
    for it, and nothing is run for it to watch (memory/softmax_warp_race_unless_slowed_...)."""
    from kernelwright.tools import compile as compile_module
    from kernelwright.tools.results import CompileResult
    from kernelwright.tools.task import load_candidate

    task = load_task(EXAMPLES / "softmax")
    candidate = load_candidate(task, EXAMPLES / "softmax" / "candidates" / "faster.cu")
    built = CompileResult(ok=True, backend="nvrtc", arch="sm_90", duration_ms=1.0,
                          reads_clock=("%clock64",))  # fmt: skip
    monkeypatch.setattr(sanitize, "available", lambda: "/usr/bin/compute-sanitizer")
    monkeypatch.setattr(compile_module, "compile_in_sandbox", lambda *a, **k: (built, b"\x7fELF"))
    from kernelwright.tools import nvml

    monkeypatch.setattr(nvml, "device_info", lambda: type("D", (), {"arch": "sm_90"})())

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("nothing is run under the sanitizer for such a kernel")

    monkeypatch.setattr(sanitize, "Sandbox", never)
    found = sanitize.sanitize(task, candidate)
    assert found.available and not found.ok and found.finished
    assert "reads the GPU's clock (%clock64)" in found.reason
    gated = correct().with_sanitizer(found)
    assert gated.verdict == "wrong" and "cannot vouch" in gated.reason


def test_a_summary_printed_before_the_sanitizers_own_does_not_count() -> None:
    """A kernel's printf shares the sanitizer's output, before the summary it prints once the
    program has exited: a forged "0 errors" there must not hide the real count."""
    forged = "========= ERROR SUMMARY: 0 errors\n" + OOB
    assert sanitize.parse("memcheck", forged)[0] == 1
    races = "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n" + RACE
    assert sanitize.parse("racecheck", races)[0] == 1


def test_small_sizes() -> None:
    assert sanitize.small_sizes(load_task(EXAMPLES / "softmax")) == {"M": 5, "N": 1000}
    assert sanitize.small_sizes(load_task(EXAMPLES / "kernelbench" / "relu_mlp.py")) == {
        "batch_size": 8
    }


def test_a_race_racecheck_only_warns_of_is_still_a_finding() -> None:
    warned = RACE.replace("(1 error, 0 warnings)", "(0 errors, 2 warnings)").replace(
        "ERROR SUMMARY: 1 error", "ERROR SUMMARY: 0 errors"
    )
    assert sanitize.parse("racecheck", warned)[0] == 2


def _long(task: Any, sizes: dict[str, int]) -> bool:
    """One of sanitize.long_sizes's: one size past any held-out draw, the others smallest."""
    smallest = {k: min(c[k] for c in task.checks) for k in task.bench}
    grown = [k for k, v in sizes.items() if v != smallest[k]]
    top = {k: max(c[k] for c in task.checks) * 3 // 2 + 64 for k in task.bench}
    return len(grown) == 1 and sizes[grown[0]] > top[grown[0]]


def _joint(task: Any, sizes: dict[str, int]) -> bool:
    """sanitize.joint_sizes's: every size past any held-out draw at once."""
    top = {k: max(c[k] for c in task.checks) * 3 // 2 + 64 for k in task.bench}
    return all(sizes[k] > top[k] for k in task.bench)


def test_the_watched_launches_are_drawn_afresh_as_a_trials_are() -> None:
    """The sanitizer watched one launch that never changed (seed 1, outputs of zeros, the
    largest check size): a kernel that recognised it was clean there and racy elsewhere
    (evals/adversarial/cases/memory/softmax_warp_race_unless_seed_one)."""
    task = load_task(EXAMPLES / "softmax")
    draws = [sanitize.watched(task) for _ in range(20)]
    for launches in draws:
        # the check size, a held-out one, each size long, and up to three with several long
        assert 2 + len(task.bench) < len(launches) <= 5 + len(task.bench)
        checks = [dict(c) for c in task.checks]
        shown = [one for one in launches if one["sizes"] in checks]
        assert [one["sizes"] for one in shown] == [sanitize.small_sizes(task)]
        assert sum(_long(task, one["sizes"]) for one in launches) >= len(task.bench)
        assert sum(_joint(task, one["sizes"]) for one in launches) >= 1
        assert all(one["sizes"] != dict(task.bench) for one in launches)
        for one in launches:
            assert one["seed"] != 1 and 0 <= one["seed"] < 1 << 31
            # a trial's quiet-NaN pattern, never zeros: float32's bits are 0x7FC07Exx
            assert one["poison"] & 0xFFFFFF00 == 0x7FC07E00 and one["poison"] >> 48 == 0x7FF8
    seeds = [one["seed"] for launches in draws for one in launches]
    assert len(set(seeds)) == len(seeds)
    assert len({tuple(launches[0]["sizes"].items()) for launches in draws}) > 1  # either first
    assert len({tuple(sorted(d[0]["sizes"].items() | d[1]["sizes"].items())) for d in draws}) > 1


def test_the_held_out_size_is_small_and_within_the_tasks_rules() -> None:
    """A size the trials may draw too (between the check and bench sizes, a multiple of what
    the task requires), small enough for the sanitizer's slowdown."""
    for name in ("softmax", "matmul", "gelu", "transpose"):
        task = load_task(EXAMPLES / name)
        for seed in range(30):  # in the order drawn: shown, held out, long, several long
            sizes = sanitize._kernel_sizes(task, random.Random(seed))[1]
            assert sizes not in [dict(c) for c in task.checks] + [dict(task.bench)]
            for k, v in sizes.items():
                smallest = min(c[k] for c in task.checks)
                assert smallest < v <= max(c[k] for c in task.checks) * 3 // 2 + 64
                assert v <= task.bench[k] and v % task.multiple_of.get(k, 1) == 0


def test_each_size_is_also_watched_long() -> None:
    """Small sizes alone let a kernel keep a racy path for rows past 1,536 that no watched
    launch reached (memory/softmax_warp_race_only_past_the_sanitizer_sizes): each size is also
    watched long, the others at their smallest; long is drawn afresh in the top quarter below
    the most the bench allows within WATCHED_BYTES, since at that most itself, every run, a
    kernel kept its race everywhere but there (memory/softmax_warp_race_except_at_the_...)."""
    from kernelwright.tools.plan import _nbytes

    softmax = load_task(EXAMPLES / "softmax")
    drawn = [sanitize.long_sizes(softmax, random.Random(s)) for s in range(40)]
    for rows, cols in drawn:
        assert cols["M"] == 5 and 3072 <= cols["N"] <= 4096  # past the 1,536 of that case
        assert rows["N"] == 33 and 3072 <= rows["M"] <= 4096
    assert len({d[1]["N"] for d in drawn}) > 20 and sum(d[1]["N"] == 4096 for d in drawn) < 4
    for name in ("softmax", "matmul", "gelu", "transpose", "rowsum", "stencil"):
        task = load_task(EXAMPLES / name)
        long = sanitize.long_sizes(task)
        assert len(long) == len(task.bench)
        for sizes in long:
            assert _nbytes(task, sizes) <= sanitize.WATCHED_BYTES
            grown = [k for k, v in sizes.items() if v > min(c[k] for c in task.checks)]
            assert len(grown) == 1 and sizes[grown[0]] <= task.bench[grown[0]]


def test_a_task_of_several_sizes_is_also_watched_with_every_size_long_at_once() -> None:
    """Each size long on its own, the others smallest, never had two long together: a race
    kept where M > 193 and N > 1,500 together was never watched (memory/softmax_warp_race_
    where_both_sizes_are_long). One launch has every size long at once, scaled from the bench
    size into WATCHED_BYTES, drawn afresh; a task of one size has none."""
    from kernelwright.tools.plan import _nbytes, _valid

    softmax = load_task(EXAMPLES / "softmax")
    drawn = [sanitize.joint_sizes(softmax, random.Random(s)) for s in range(400)]
    # past that case's M > 193 and N > 1,500 together, every time (the first, alike)
    assert all(d and d[0]["M"] > 193 and d[0]["N"] > 1500 for d in drawn)
    assert len({d[0]["M"] for d in drawn}) > 20
    # off that line too, in directions drawn afresh: many rows that are not tiny by short ones
    # (memory/softmax_warp_race_where_many_rows_are_not_tiny: M > 1024 and N > 64) in a good
    # share of runs; the diagonal alone never went there
    rows = sum(any(s["M"] > 1024 and s["N"] > 64 for s in d) for d in drawn)
    assert 0.3 * len(drawn) < rows and all(len(d) <= 3 for d in drawn)
    for name in ("softmax", "matmul", "transpose", "rowsum", "stencil"):
        task = load_task(EXAMPLES / name)
        for seed in range(50):
            every = sanitize.joint_sizes(task, random.Random(seed))
            assert every and _joint(task, every[0])  # the first: every size long
            for sizes in every:
                assert _valid(task, sizes) and _nbytes(task, sizes) <= sanitize.WATCHED_BYTES
                assert any(v > min(c[k] for c in task.checks) for k, v in sizes.items())
                assert all(v <= task.bench[k] and v % task.multiple_of.get(k, 1) == 0
                           for k, v in sizes.items())  # fmt: skip
    assert sanitize.joint_sizes(load_task(EXAMPLES / "gelu")) == []


def test_a_kernelbench_problem_gets_one_forward_on_a_fresh_seed() -> None:
    task = load_task(EXAMPLES / "kernelbench" / "relu_mlp.py")
    (one,) = sanitize.watched(task)
    assert one["sizes"] == {"batch_size": 8} and one["seed"] != 1


def test_a_watched_array_starts_where_a_trials_does() -> None:
    """The sanitizer's child runs without guard bands (runners.GUARD_BYTES = 0 there), so it
    places each array past the band a trial's has: the two must stay one number."""
    from kernelwright.tools import cuda_roles, runners

    assert cuda_roles.TRIAL_LEAD_BYTES == runners.GUARD_BYTES


def _run(report: str, program: str = "", code: int = 0) -> dict[str, Any]:
    """A tool's run as the sanitizer's worker records it (cuda_roles.sanitize)."""
    return {
        "report": report,
        "summaries": sanitize.summary_lines(report),
        "program": program,
        "code": code,
    }


def test_the_programs_own_output_never_stands_for_the_sanitizers_report() -> None:
    """The watched program writes after the sanitizer's own report in a joined text (its
    stdout goes to its stderr, the report to the sanitizer's stdout): a summary of its own
    saying 0 errors, printed there by the program or a kernel's printf, must not count. The
    report's summaries count, every one of them, the worst first; the exit code the
    sanitizer gives where it found errors counts whatever the text says."""
    forged = "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n"
    forged += "========= ERROR SUMMARY: 0 errors\n"
    run = _run(RACE, program=forged * 200)
    assert sanitize.parse("racecheck", run)[0] == 1
    result = sanitize.judge({"type": "sanitized", "tools": {"racecheck": run}}, [{"N": 1000}])
    assert not result.ok and result.errors == {"racecheck": 1}
    # a summary got into the report itself (the sanitizer's own stream) only adds one
    assert sanitize.parse("racecheck", _run(forged + RACE))[0] == 1
    assert sanitize.parse("racecheck", _run(RACE + forged))[0] == 1
    # the summary lines travel whole: a report grown past what travels keeps them
    long = _run(RACE + "========= Saved host backtrace\n" * 20_000)
    long["report"] = long["report"][-200_000:]
    assert "RACECHECK SUMMARY" not in long["report"]
    assert sanitize.parse("racecheck", long)[0] == 1
    # a hundred summaries got into the report ahead of the real one: the worst still travels
    crowded = _run(forged * 100 + RACE)
    assert len(crowded["summaries"]) == 64
    assert sanitize.parse("racecheck", crowded)[0] == 1
    # a forged summary glued ahead of the real one on its line (written with no newline just
    # before the program exits), however long: the real count still counts
    for pad in ("", "x" * 400):
        glued = "========= RACECHECK SUMMARY: (0 errors, 0 warnings)" + pad
        real = RACE.replace("========= RACECHECK SUMMARY", glued + "========= RACECHECK SUMMARY")
        assert sanitize.parse("racecheck", _run(real))[0] == 1
    # nothing but the program's text: no summary of the sanitizer's, so no pass
    alone = sanitize.judge(
        {"type": "sanitized", "tools": {"memcheck": _run("", program=CLEAN)}},
        [],
        ("memcheck",),
    )
    assert not alone.ok and "memcheck" in alone.reason
    # the exit code says errors: an error, even beside a clean summary
    coded = _run(CLEAN, code=sanitize.ERROR_EXIT)
    assert sanitize.parse("memcheck", coded)[0] == 1
    assert not sanitize.judge({"type": "sanitized", "tools": {"memcheck": coded}}, []).ok
    clean = {t: _run(CLEAN) for t in sanitize.TOOLS}
    assert sanitize.judge({"type": "sanitized", "tools": clean}, [{"N": 1000}]).ok
    # the program killed the sanitizer (its parent) after writing a summary of its own into
    # the report: a run whose sanitizer a signal ended did not finish, whatever it says
    killed = sanitize.judge(
        {"type": "sanitized", "tools": {"memcheck": _run(CLEAN, code=-9)}}, [], ("memcheck",)
    )
    assert not killed.ok and "exit code -9" in killed.reason
    # the program's own exit code, passed on after the sanitizer's real summary: that counts
    passed_on = {t: _run(CLEAN, code=3) for t in sanitize.TOOLS}
    assert sanitize.judge({"type": "sanitized", "tools": passed_on}, [{"N": 1000}]).ok


def test_the_sanitizers_worker_keeps_the_report_apart_and_the_watched_child_none_of_it(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker records the sanitizer's stdout as the report, its stderr (where the
    watched child's own output goes) apart, the exit code, and asks for ERROR_EXIT; the
    child closes the streams it inherited before it runs anything (worker.main), so no fd
    of its reaches the report."""
    import inspect
    import subprocess
    import types

    from kernelwright.tools import cuda_roles, worker

    calls: list[list[str]] = []

    def fake_run(cmd: list[str], **kw: Any) -> Any:
        calls.append(cmd)
        return types.SimpleNamespace(stdout=RACE, stderr=CLEAN * 3, returncode=sanitize.ERROR_EXIT)

    monkeypatch.setattr(subprocess, "run", fake_run)
    sent: list[dict[str, Any]] = []
    job = {"tools": ["racecheck"], "sanitizer": "compute-sanitizer", "timeout_s": 5}
    fake = types.SimpleNamespace(scratch=tmp_path, job=job, send=sent.append)
    cuda_roles.sanitize(fake, None)  # type: ignore[arg-type]
    assert calls and "--error-exitcode" in calls[0]
    assert calls[0][calls[0].index("--error-exitcode") + 1] == str(sanitize.ERROR_EXIT)
    run = sent[0]["tools"]["racecheck"]
    assert run["report"] == RACE and run["program"] == CLEAN * 3
    assert run["code"] == sanitize.ERROR_EXIT
    assert sanitize.parse("racecheck", run)[0] == 1
    source = inspect.getsource(worker.main)
    once = source[source.index("if once:  # under a profiler") :]
    assert "os.close(proto_in)" in once[:600] and "os.close(proto_out)" in once[:600]
