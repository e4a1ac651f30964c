"""bench_kernelbench without a GPU: the selection from a clone, KernelBench's own eval imported
from a clone (a stand-in package with its real import-time dependencies missing), the memory
sampling of a process tree, and a check that cannot run here recorded with its one line."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from kernelwright.evals import bench_kernelbench as bench
from kernelwright.evals.kb_problems import KbError, open_clone


def _clone(tmp_path: Path, eval_body: str | None = None) -> Path:
    root = tmp_path / "KernelBench-clone"
    for level, names in {1: ["1_Square_matmul_.py", "26_GELU_.py"], 2: ["12_Gemm_Mul.py"]}.items():
        folder = root / "KernelBench" / f"level{level}"
        folder.mkdir(parents=True)
        for name in names:
            (folder / name).write_text("class Model:\n    pass\n")
    if eval_body is not None:
        pkg = root / "src" / "kernelbench"
        pkg.mkdir(parents=True)
        # as the real package does: its __init__ pulls in LLM clients this machine lacks
        (pkg / "__init__.py").write_text(
            "from openai import OpenAI\nfrom litellm import completion\n"
            "from dotenv import load_dotenv\nload_dotenv()\nfrom tqdm import tqdm\n"
        )
        (pkg / "eval.py").write_text(textwrap.dedent(eval_body))
    return root


def test_problems_are_read_as_level_and_id() -> None:
    assert bench.parse_problems("1/1, 1/26,2/12,1/1") == [(1, 1), (1, 26), (2, 12)]
    for bad in ("1-1", "a/3", "1/", ""):
        with pytest.raises(KbError, match="LEVEL/ID"):
            bench.parse_problems(bad)
    assert len(bench.parse_problems(bench.DEFAULT_PROBLEMS)) == 25


def test_the_clone_must_hold_every_problem_asked_for(tmp_path: Path) -> None:
    clone = open_clone(_clone(tmp_path))
    got = bench.resolve(clone, [(1, 26), (2, 12)])
    assert [(p.level, p.name) for p in got] == [(1, "26_GELU_.py"), (2, "12_Gemm_Mul.py")]
    with pytest.raises(KbError, match=r"no problem 1/2, 3/1"):
        bench.resolve(clone, [(1, 1), (1, 2), (3, 1)])


def test_kernelbenchs_own_eval_is_imported_from_the_clone_and_its_figures_kept(
    tmp_path: Path,
) -> None:
    body = """
        import types
        calls = []
        def eval_kernel_against_ref(ref, custom, **kw):
            assert "ModelNew = Model" in custom and custom.startswith(ref)
            assert kw["measure_performance"] and kw["num_perf_trials"] == 100
            return types.SimpleNamespace(compiled=True, correctness=True, runtime=250.0,
                                         ref_runtime=255.0, metadata={"hardware": "stand-in"})
    """
    root = _clone(tmp_path, body)
    clone = open_clone(root)
    (problem,) = bench.resolve(clone, [(1, 26)])
    (tmp_path / "build").mkdir()
    got = bench.their_eval(clone, problem, 60.0, tmp_path / "build")
    assert got["verdict"] == "correct" and got["speedup"] == pytest.approx(255.0 / 250.0)
    assert got["metadata"] == {"hardware": "stand-in"} and got["wall_s"] > 0
    # its runtimes are CUDA-event means, in ms
    assert got["runtime_ms"] == 250.0 and got["ref_runtime_ms"] == 255.0


def test_kernelbenchs_failure_is_recorded_in_one_line(tmp_path: Path) -> None:
    root = _clone(
        tmp_path, "def eval_kernel_against_ref(*a, **k):\n    raise RuntimeError('no CUDA')\n"
    )
    clone = open_clone(root)
    (problem,) = bench.resolve(clone, [(1, 1)])
    got = bench.their_eval(clone, problem, 60.0, tmp_path)
    assert got["verdict"].startswith("failed (exit 1): RuntimeError: no CUDA")
    bare = open_clone(_clone(tmp_path / "bare"))
    assert (
        "no src/kernelbench/eval.py" in bench.their_eval(bare, problem, 60.0, tmp_path)["verdict"]
    )


def test_a_process_trees_peak_host_memory_is_sampled(tmp_path: Path) -> None:
    """A child that holds 300 MB for a moment: the sampled peak sees it; a command past its
    timeout is killed, its whole group with it."""
    pytest.importorskip("psutil")
    child = (
        "import time; b = bytearray(300 << 20); b[::4096] = b'x' * len(b[::4096]); time.sleep(1.5)"
    )
    parent = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {child!r}])"
    got = bench.run_sampled([sys.executable, "-c", parent], 60.0)
    assert got.returncode == 0 and got.peak_host_bytes is not None
    assert got.peak_host_bytes >= 300 << 20
    slow = bench.run_sampled([sys.executable, "-c", "import time; time.sleep(30)"], 0.5)
    assert slow.returncode is None and slow.wall_s < 10


def test_a_check_that_cannot_run_is_a_row_with_its_reason(tmp_path: Path) -> None:
    (problem,) = bench.resolve(open_clone(_clone(tmp_path)), [(1, 1)])
    row = bench.Row("1/1_Square_matmul_", ours=bench.our_check(problem, 120.0))
    assert row.ours["verdict"] != "correct" and row.ours["wall_s"] > 0
    shown = bench.table([row])
    assert "1/1_Square_matmul_" in shown and "0 of 1 checked correct" in shown


def test_the_table_sets_each_problem_beside_kernelbenchs_time() -> None:
    rows = [
        bench.Row(
            f"1/{i}_P",
            ours={
                "verdict": "correct",
                "speedup": s,
                "wall_s": w,
                "phase_s": {"timing": 3.0},
                "peak_gpu_bytes": 6 << 30,
                "peak_host_bytes": 2 << 30,
            },
            theirs={"verdict": "correct", "speedup": 1.0, "wall_s": t, "peak_gpu_bytes": 7 << 30},
        )
        for i, (s, w, t) in enumerate([(1.004, 9.0, 4.0), (0.97, 12.0, 3.0), (1.01, 8.0, 5.0)])
    ]
    shown = bench.table(rows)
    assert "1.004x" in shown and "6.0" in shown and "2.2" in shown  # 9 s against 4 s
    assert bench.summary(rows) == (
        "3 of 3 checked correct; 2 of 3 read 1.00x within 2%; median wall 9.0 s (target: at "
        "most 10 s); KernelBench's harness median 4.0 s; 2 within 3x KernelBench's time"
    )


def test_bad_arguments_get_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert bench.main(["--kb", str(tmp_path), "--no-examples", "--no-builds"]) == 2
    assert "not a KernelBench clone" in capsys.readouterr().err
    root = _clone(tmp_path)
    assert bench.main(["--kb", str(root), "--problems", "1/99", "--no-examples"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no problem 1/99" in err


def test_the_load_inline_candidate_is_checked_twice_with_a_fresh_cache() -> None:
    """The files it checks exist where the package is; here, without a GPU, both checks end
    with kernelwright's one line, and each is shown."""
    assert bench.BUILD_TASK.is_file() and bench.BUILD_CANDIDATE.is_file()
    rows = bench.load_inline_twice(120.0)
    assert len(rows) == 2 and all(str(r["verdict"]).startswith("no JSON") for r in rows)
    shown = bench.builds_line(rows).splitlines()
    assert shown[0].startswith("load_inline, first check: no JSON")
    assert shown[1].startswith("load_inline, second check:") and "no build reported" in shown[1]


def test_the_two_checks_read_as_built_then_kept() -> None:
    rows = [
        {"verdict": "correct", "wall_s": 70.2, "compile_s": 55.0,
         "extensions": [{"name": "kw_relu_mlp_ext", "cached": False, "seconds": 52.1}]},
        {"verdict": "correct", "wall_s": 14.0, "compile_s": 2.1,
         "extensions": [{"name": "kw_relu_mlp_ext", "cached": True, "seconds": 0.04}]},
    ]  # fmt: skip
    assert bench.builds_line(rows).splitlines() == [
        "load_inline, first check: correct, whole command 70.2 s, import 55.0 s; "
        "kw_relu_mlp_ext built in 52.10 s",
        "load_inline, second check: correct, whole command 14.0 s, import 2.1 s; "
        "kw_relu_mlp_ext cached in 0.04 s",
    ]


def test_a_commands_gpu_base_is_read_once_the_last_ones_memory_is_freed() -> None:
    """The GPU's memory in use is read until it stops falling: a check's workers, just killed,
    still hold theirs for a moment, and a base read then hid the next command's use."""
    gib = 1 << 30
    readings = iter([8 * gib, 6 * gib, 3 * gib, 1 * gib, 1 * gib, 1 * gib])
    assert bench.settle_gpu(lambda: next(readings), step_s=0.0) == 1 * gib
    assert bench.settle_gpu(None) is None
    falling = iter(range(100 * gib, 0, -gib))
    assert bench.settle_gpu(lambda: next(falling), most_s=0.05, step_s=0.01) > 0  # stops anyway


def test_a_run_in_parts_is_tabled_together_and_a_cut_run_keeps_its_problems(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--json is written again after each problem (a call cut short by its time limit keeps
    the problems it finished); --table-from puts several runs' rows in one table and summary,
    a problem run twice keeping its last; an unreadable file is one line and exit 2."""
    import json

    clone = open_clone(_clone(tmp_path))

    def row(name: str, wall: float, speedup: float) -> bench.Row:
        ours = {"verdict": "correct", "speedup": speedup, "wall_s": wall}
        return bench.Row(name, ours, {"verdict": "correct", "wall_s": 8.0, "speedup": 1.0})

    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(bench._figures(clone, [row("1/1", 12.0, 1.0), row("2/12", 30.0, 1.0)])))
    b.write_text(json.dumps(bench._figures(clone, [row("1/19", 9.0, 0.97), row("1/1", 10.0, 1.0)])))
    assert bench.main(["--table-from", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert out.index("1/1 ") < out.index("2/12") < out.index("1/19")
    assert "3 of 3 checked correct; 2 of 3 read 1.00x within 2%; median wall 10.0 s" in out
    assert "2 within 3x KernelBench's time" in out
    (tmp_path / "bad.json").write_text("{")
    assert bench.main(["--table-from", str(tmp_path / "bad.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: cannot read the figures:") and err.count("\n") == 1
    with pytest.raises(SystemExit):
        bench.main([])  # neither a clone nor --table-from


def test_the_figures_are_written_after_each_problem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    root = _clone(tmp_path)
    seen: list[int] = []
    out = tmp_path / "figures.json"

    def check(problem: Any, timeout_s: float) -> dict[str, Any]:
        if out.exists():
            seen.append(len(json.loads(out.read_text())["rows"]))
        return {"verdict": "correct", "speedup": 1.0, "wall_s": 5.0}

    monkeypatch.setattr(bench, "our_check", check)
    argv = ["--kb", str(root), "--problems", "1/1,1/26,2/12", "--no-theirs", "--no-examples"]
    assert bench.main([*argv, "--no-builds", "--json", str(out)]) == 0
    assert seen == [1, 2]  # before the second and third problems, the ones before them
    assert len(json.loads(out.read_text())["rows"]) == 3


def test_our_row_is_kept_and_shown_before_kernelbenchs_harness_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """KernelBench's harness takes 84 to 110 s a problem: a run cut short in it (here, the
    harness interrupted) has already written and printed our check of that problem."""
    import json

    root = _clone(tmp_path)
    out = tmp_path / "figures.json"
    monkeypatch.setattr(
        bench, "our_check", lambda p, t: {"verdict": "correct", "speedup": 1.004, "wall_s": 9.5}
    )

    def theirs(*args: Any) -> dict[str, Any]:
        raise KeyboardInterrupt  # the call's time limit, in KernelBench's harness

    monkeypatch.setattr(bench, "their_eval", theirs)
    argv = ["--kb", str(root), "--problems", "1/26", "--no-examples", "--no-builds"]
    with pytest.raises(KeyboardInterrupt):
        bench.main([*argv, "--json", str(out)])
    (row,) = json.loads(out.read_text())["rows"]
    assert row["problem"] == "1/26_GELU_" and row["ours"]["speedup"] == 1.004
    assert row["theirs"] == {}
    assert "[1/1] 1/26_GELU_: ours correct 1.004x in 9.5 s" in capsys.readouterr().out


def _progress_line(
    root: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    report: dict[str, Any],
) -> str:
    """Problem 1/1's progress line, its check a correct 1.0x in 5 s with `report`'s fields."""

    def check(problem: Any, timeout_s: float) -> dict[str, Any]:
        return {"verdict": "correct", "speedup": 1.0, "wall_s": 5.0, **report}

    monkeypatch.setattr(bench, "our_check", check)
    argv = ["--kb", str(root), "--problems", "1/1", "--no-theirs", "--no-examples", "--no-builds"]
    assert bench.main(argv) == 0
    return next(x for x in capsys.readouterr().out.splitlines() if x.startswith("[1/1]"))


def test_a_progress_line_says_where_the_timing_went(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each problem's line gives the check's timing parts (its report's timing facts), so a
    call cut short still says where its time went."""
    root = _clone(tmp_path)
    facts = {"processes": 3, "rounds": 288, "calls_per_round": 1, "call_wall_ms": 10.2,
             "warmup_ms": 1400.0, "rounds_ms": 2900.0}  # fmt: skip

    line = _progress_line(root, monkeypatch, capsys, {"timing": facts})
    assert line.endswith(
        "[timing: 3 processes a side; 288 calls a side, 1 a round; 10.2 ms a call; "
        "warm-up 1.4 s; rounds 2.9 s]"
    )
    assert bench.timing_line({}) == ""


def test_a_progress_line_says_where_the_reference_workers_start_went(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The reference worker's start, step by step, as its report's worker_start_ms gives it
    (steps under 0.05 s left out): where a cold check's first seconds go."""
    root = _clone(tmp_path)
    starts = {
        "reference": {"interpreter": 0.12, "imports": 2.71, "job wait": 0.0, "cuda": 0.33},
        "candidate": {"imports": 2.9},
    }

    line = _progress_line(root, monkeypatch, capsys, {"worker_start_s": starts})
    assert line.endswith("[reference's start: interpreter 0.1, imports 2.7, cuda 0.3]")
    assert bench.start_line({}) == "" and bench.start_line({"candidate": {"cuda": 1.0}}) == ""


def test_a_checks_worker_starts_reach_its_row_in_seconds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (problem,) = bench.resolve(open_clone(_clone(tmp_path)), [(1, 1)])
    report = {
        "verdict": "correct",
        "wall_ms": 9000.0,
        "worker_start_ms": {"reference": {"imports": 2700.0}},
    }
    monkeypatch.setattr(bench, "kw_check", lambda argv, timeout_s: ({"wall_s": 9.5}, report))
    assert bench.our_check(problem, 60.0)["worker_start_s"] == {"reference": {"imports": 2.7}}


def test_the_commands_own_time_around_the_check_reaches_its_row_and_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`kernelwright check`'s command_ms (its start before its workers, the close after the
    check): the seconds a row's wall holds beyond the check's own, said on its line."""
    (problem,) = bench.resolve(open_clone(_clone(tmp_path)), [(1, 1)])
    spent = {"before the workers": 412.0, "starting them": 3.5, "check": 8100.0, "close": 650.0}
    report = {"verdict": "correct", "wall_ms": 8000.0, "command_ms": spent}
    monkeypatch.setattr(bench, "kw_check", lambda argv, timeout_s: ({"wall_s": 9.3}, report))
    row = bench.our_check(problem, 60.0)
    assert row["command_s"] == {
        "before the workers": 0.412, "starting them": 0.0035, "check": 8.1, "close": 0.65
    }  # fmt: skip
    line = bench.command_line(row["command_s"])
    assert line == " [command: before the workers 0.41, starting them 0.00, close 0.65]"
    assert bench.command_line({}) == "" and bench.command_line({"check": 8.1}) == ""


def test_the_table_says_where_the_scaled_trial_counted() -> None:
    """From the timing's input scale where the report keeps it, else from the reason (runs
    before it was kept); "no" where the trial did not count, "-" where nothing says."""

    def row(i: int, ours: dict[str, object]) -> Any:
        return bench.Row(f"1/{i}_P", ours={"verdict": "correct", "speedup": 1.0, "wall_s": 9.0,
                                           **ours})  # fmt: skip

    rows = [
        row(1, {"timing": {"input_scale": 64.0}, "reason": "12 trials"}),
        row(2, {"reason": "12 trials, inputs also x±128 (every timed call's x±128 too)"}),
        row(3, {"timing": {"input_scale": 1.0}, "reason": "6 trials; a trial not counted: ..."}),
        row(4, {"reason": "6 trials over 1 shapes"}),
    ]
    assert [bench.scaled(r.ours) for r in rows] == ["x±64", "x±128", "no", "-"]
    assert "x±64" in bench.table(rows).splitlines()[2]
    assert bench.summary(rows).endswith("; the scaled trial counted in 2 of 3")
