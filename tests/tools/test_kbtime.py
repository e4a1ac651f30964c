"""KernelBench's own timing run from a user's clone in a sandboxed worker (tools/kbtime.py) and
the live timers of `eval kernelbench` on it, without a GPU: the clone here is a stand-in whose
`measure_ref_program_time` and `eval_kernel_against_ref` check that they are called as
KernelBench's scripts call them, and answer with made-up stats."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelwright.evals.kb_baselines import LiveBaselines, LiveRetimer, NeedsGpu
from kernelwright.tools.kbtime import KbTimeError, has_timing, kb_time
from kernelwright.tools.kernelbench import KernelBenchCandidate, KernelBenchTask

TIMING = """
def measure_ref_program_time(ref_arch_name, ref_arch_src, num_warmup=5, num_trials=100,
                             discard_first=1, timing_method="cuda_event",
                             use_torch_compile=False, torch_compile_backend="inductor",
                             torch_compile_options="default", verbose=False):
    assert num_trials == 100 and num_warmup == 5 and timing_method == "cuda_event"
    assert torch_compile_backend == "inductor" and torch_compile_options == "default"
    assert not verbose and "class Model" in ref_arch_src
    if "FAIL_COMPILE" in ref_arch_src and use_torch_compile or "FAIL_EAGER" in ref_arch_src:
        print("[Eval] Error in Measuring Performance: backend='inductor' raised: boom")
        return None
    mean = 2.0 if use_torch_compile else 4.0
    return {"mean": mean, "std": 0.1, "min": mean - 0.2, "max": mean + 0.3, "num_trials": 100}
"""

EVAL = """
import types
from pathlib import Path

def eval_kernel_against_ref(original_model_src, custom_model_src, seed_num=42,
                            num_correct_trials=1, num_perf_trials=10, measure_performance=False,
                            build_dir=None, **rest):
    assert seed_num == 42 and num_correct_trials == 5 and num_perf_trials == 100
    assert measure_performance and not rest
    (Path(build_dir) / "built").write_text("x")  # its build directory is writable
    assert "class Model" in original_model_src and "class ModelNew" in custom_model_src
    stats = {"mean": 1.0, "std": 0.05, "min": 0.9, "max": 1.2, "num_trials": 100}
    return types.SimpleNamespace(compiled="NOT_BUILT" not in custom_model_src,
                                 correctness="WRONG" not in custom_model_src,
                                 runtime=1.0, runtime_stats=stats,
                                 metadata={"hardware": "stand-in"})
"""

PROBLEM = "class Model:\n    pass\n\ndef get_inputs():\n    return []\n"
KERNEL = "class ModelNew:\n    pass\n"


@pytest.fixture()
def src(tmp_path: Path) -> Path:
    pkg = tmp_path / "clone" / "src" / "kernelbench"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "timing.py").write_text(TIMING)
    (pkg / "eval.py").write_text(EVAL)
    return pkg.parent


def _task(source: str = PROBLEM) -> KernelBenchTask:
    return KernelBenchTask(name="1_Stand_in", path="1_Stand_in.py", source=source, size_globals={})


def test_the_clones_own_timing_runs_in_a_worker_as_its_scripts_call_it(src: Path) -> None:
    assert has_timing(src) and not has_timing(src.parent)
    eager, peak = kb_time(src, "eager", "1_Stand_in", PROBLEM, timeout_s=60)
    assert eager == {"mean": 4.0, "std": 0.1, "min": 3.8, "max": 4.3, "num_trials": 100.0}
    assert peak is None  # no torch here to say
    compiled, _ = kb_time(src, "compile", "1_Stand_in", PROBLEM, timeout_s=60)
    assert compiled["mean"] == 2.0
    kernel, _ = kb_time(src, "kernel", "1_Stand_in", PROBLEM, KERNEL, timeout_s=60)
    assert kernel["mean"] == 1.0 and kernel["num_trials"] == 100


def test_what_kernelbench_printed_of_its_failure_is_in_the_one_line(src: Path) -> None:
    with pytest.raises(KbTimeError) as info:
        kb_time(src, "eager", "1_Stand_in", PROBLEM + "# FAIL_EAGER\n", timeout_s=60)
    line = str(info.value)
    assert "\n" not in line and line.startswith("KernelBench's timing (eager): ")
    assert "gave no times" in line and "backend='inductor' raised: boom" in line
    with pytest.raises(KbTimeError, match="not correct in KernelBench's eval"):
        kb_time(src, "kernel", "1_Stand_in", PROBLEM, KERNEL + "# WRONG\n", timeout_s=60)
    with pytest.raises(KbTimeError, match="did not compile in KernelBench's eval"):
        kb_time(src, "kernel", "1_Stand_in", PROBLEM, KERNEL + "# NOT_BUILT\n", timeout_s=60)


def test_stats_that_are_not_times_are_refused(src: Path) -> None:
    timing = src / "kernelbench" / "timing.py"
    timing.write_text(timing.read_text().replace('"mean": mean,', '"mean": float("nan"),'))
    with pytest.raises(KbTimeError, match="mean is nan"):
        kb_time(src, "eager", "1_Stand_in", PROBLEM, timeout_s=60)


def test_live_baselines_time_eager_and_compile_alike_and_keep_eager_when_compile_fails(
    src: Path,
) -> None:
    times = LiveBaselines(src, timeout_s=60).time(_task())
    assert times.eager is not None and times.eager.mean_ms == 4.0
    assert times.compile is not None and times.compile.mean_ms == 2.0
    assert times.compile_factor() == 0.5 and not times.compile_error
    assert "measure_ref_program_time" in times.how
    failing = LiveBaselines(src, timeout_s=60).time(_task(PROBLEM + "# FAIL_COMPILE\n"))
    assert failing.eager is not None and failing.compile is None
    assert "boom" in failing.compile_error and "\n" not in failing.compile_error


def test_live_retimer_gives_kernelbenchs_speedup(src: Path) -> None:
    retimed = LiveRetimer(src, timeout_s=60).retime(
        _task(), KernelBenchCandidate(path="final.py", source=KERNEL)
    )
    assert retimed.eager.mean_ms == 4.0 and retimed.kernel.mean_ms == 1.0
    assert retimed.speedup == 4.0


def test_without_the_clones_timing_the_live_timers_say_so_in_one_line(tmp_path: Path) -> None:
    for timer in (LiveBaselines(None), LiveBaselines(tmp_path)):
        with pytest.raises(
            NeedsGpu, match="needs a GPU with torch and the clone's own KernelBench timing"
        ):
            timer.time(_task())
    with pytest.raises(NeedsGpu, match="--timing kernelbench"):
        LiveRetimer(tmp_path).retime(_task(), KernelBenchCandidate(path="f.py", source=KERNEL))


LIMITS = """
import resource, types
from pathlib import Path

def eval_kernel_against_ref(original_model_src, custom_model_src, **kw):
    soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    files, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert soft == 1 << 30 and files == 1024, (soft, files)
    try:
        Path("/etc/kw-kbtime-probe").write_text("x")  # outside its scratch: refused
    except OSError:
        pass
    else:
        raise AssertionError("wrote outside its scratch")
    stats = {"mean": 1.0, "std": 0.0, "min": 1.0, "max": 1.0, "num_trials": 100}
    return types.SimpleNamespace(compiled=True, correctness=True, runtime_stats=stats)
"""


def test_a_kernel_is_timed_under_a_check_workers_limits(src: Path) -> None:
    """The kernel is a candidate's code: its worker has the file-size and open-file limits a
    check's workers have, and cannot write outside its scratch."""
    (src / "kernelbench" / "eval.py").write_text(LIMITS)
    kernel, _ = kb_time(src, "kernel", "1_Stand_in", PROBLEM, KERNEL, timeout_s=60)
    assert kernel["mean"] == 1.0
