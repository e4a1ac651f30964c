"""A drop-in host file's timed calls (cpp_check.check_host), on the CPU with g++ builds in the
drop-in's place: each call served on its own command, on inputs made from a seed sent only with
it; the calls' sketches audited against the C++ function on the same seeds; the controller's
clock bounding what the library's own wrapper reports."""

from __future__ import annotations

import statistics
import textwrap
from pathlib import Path
from typing import Any

import pytest

from kernelwright.tools import sketch
from kernelwright.tools.cpp import load_cpp_task
from kernelwright.tools.cpp_check import Allowance, audit_calls, timed_seconds, unseen_problem
from kernelwright.tools.cpp_reference import (
    CallPlan,
    TimedCall,
    build_library,
    run_library,
    translation_unit,
    wrapper_unit,
)
from tests.tools.test_cpp import GEMV, GEMV_TOML, inputs_of, needs_gxx, write_task

# The same function, but wrong once it has been called 3 times (the trials are done by then).
LATER_WRONG = GEMV.replace(
    "y[i] = s;", "static long calls = 0; y[i] = (i == 0 && ++calls > 3) ? 0.0 : s;"
)
# Right, 100 ms a call, and its wrapper made to report none of it: the library's own
# definition of steady_clock::now() binds before libstdc++'s, in a wrapper of any unit.
SLOW_HIDDEN = (
    "#include <chrono>\n#include <thread>\n"
    + textwrap.dedent(GEMV).replace(
        "for (std::size_t i = 0;",
        "std::this_thread::sleep_for(std::chrono::milliseconds(100));\n"
        "        for (std::size_t i = 0;",
        1,
    )
    + textwrap.dedent(
        """
        namespace std { namespace chrono { inline namespace _V2 {
        steady_clock::time_point steady_clock::now() noexcept {
            static long long ticks = 0;
            ticks += 1000;
            return time_point(duration(ticks));
        }
        }}}
        """
    )
)

# Right, but it returns at once and does its work (and 50 ms more) in a thread; the outputs'
# pages are protected, and a fault handler holds the wrapper's copy back of them until the
# thread is done: the call's reply leaves before the work is over.
AFTER_RETURN = """
#include <atomic>
#include <cstdint>
#include <cstring>
#include <csignal>
#include <cstddef>
#include <thread>
#include <vector>
#include <sys/mman.h>
#include <unistd.h>
static std::atomic<int> kw_done{1};
static double* kw_dst = nullptr;
static double* kw_out = nullptr;
static std::size_t kw_m = 0;
static char* kw_lo = nullptr;
static std::size_t kw_len = 0;
static void kw_hold(int, siginfo_t* info, void*) {
    char* at = static_cast<char*>(info->si_addr);
    if (at < kw_lo || at >= kw_lo + kw_len) {
        signal(SIGSEGV, SIG_DFL);
        return;
    }
    while (!kw_done.load()) {
    }
    mprotect(kw_lo, kw_len, PROT_READ | PROT_WRITE);
    std::memcpy(kw_dst, kw_out, kw_m * sizeof(double));
}
void gemv(const std::vector<double>& A, const std::vector<double>& x,
          std::vector<double>& y, std::size_t M, std::size_t N) {
    static bool installed = false;
    if (!installed) {
        struct sigaction sa;
        std::memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = kw_hold;
        sa.sa_flags = SA_SIGINFO;
        sigaction(SIGSEGV, &sa, nullptr);
        installed = true;
    }
    y.reserve(1 << 17);  // pages of their own
    std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    kw_out = static_cast<double*>(mmap(nullptr, (M * sizeof(double) / page + 1) * page,
                                       PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    kw_dst = y.data();
    kw_m = M;
    kw_done = 0;
    const double* a = A.data();
    const double* v = x.data();
    double* out = kw_out;
    std::thread([a, v, out, M, N] {
        for (std::size_t i = 0; i < M; ++i) {
            double s = 0;
            for (std::size_t j = 0; j < N; ++j) s += a[i * N + j] * v[j];
            out[i] = s;
        }
        usleep(50000);
        kw_done = 1;
    }).detach();
    kw_lo = reinterpret_cast<char*>(reinterpret_cast<std::uintptr_t>(y.data()) & ~(page - 1));
    kw_len = ((reinterpret_cast<char*>(y.data() + M) - kw_lo) / page + 1) * page;
    mprotect(kw_lo, kw_len, PROT_NONE);
}
"""


def _task(tmp_path: Path, source: str = GEMV, name: str = "gemv") -> Any:
    return load_cpp_task(write_task(tmp_path / name, source, GEMV_TOML, "gemv"))


def _served(task: Any, cache: Path, plan: CallPlan) -> list[TimedCall]:
    built, log = build_library(task, cache)
    assert built is not None, log
    run_library(task, built, [], 30.0, calls=plan)
    return plan.made


@needs_gxx
def test_each_call_is_on_fresh_inputs_and_its_sketch_is_its_outputs(tmp_path: Path) -> None:
    task = _task(tmp_path)
    plan = CallPlan(
        sizes={"M": 64, "N": 128}, least=3, most=3, then=[({"M": 7, "N": 9}, 5, (11, 12))]
    )
    made = _served(task, tmp_path / "cache", plan)
    assert [c.timed for c in made] == [True, True, True, False]
    assert len({c.seed for c in made[:3]}) == 3  # drawn afresh for each call
    for c in made:
        ins = inputs_of(task, c.sizes, c.seed)
        want = sketch.sketch_of(ins["A"] @ ins["x"], c.signs)
        why, _ = sketch.problem("y", c.sketch["y"], want, c.sizes["M"], 1e-9, 1e-9)
        assert why == ""
        assert 0 <= c.reported_s <= c.wall_s  # the controller's clock holds the wrapper's
        assert c.stage_s > 0
    assert made[-1].sizes == {"M": 7, "N": 9} and made[-1].seed == 5


@needs_gxx
def test_calls_that_go_wrong_after_the_trials_are_caught(tmp_path: Path, verifier: Any) -> None:
    task, bad = _task(tmp_path), _task(tmp_path, LATER_WRONG, "later")
    plan = CallPlan(sizes=dict(task.bench), least=5, most=5)
    made = _served(bad, tmp_path / "cache", plan)
    why, _ = audit_calls(verifier, task, made, [0.01], set())
    assert why.startswith("timed call 4 of 5: output 'y' differs from the C++ function's")


@needs_gxx
def test_a_right_drop_in_passes_its_audit(tmp_path: Path, verifier: Any) -> None:
    task = _task(tmp_path)
    made = _served(task, tmp_path / "cache", CallPlan(sizes=dict(task.bench), least=4, most=4))
    why, allowance = audit_calls(verifier, task, made, [0.01], set())
    # the channel's trip (milliseconds on a loaded 2-core machine), the copies of 64 KiB
    assert why == "" and 0 < allowance.call_s < 0.05 and 0 < allowance.stage_s < 0.05
    seconds, _ = timed_seconds(made, allowance)
    assert unseen_problem(made, seconds) == ""  # its own clock saw its time


@needs_gxx
def test_a_wrapper_made_to_under_report_is_held_to_the_controllers_clock(
    tmp_path: Path, verifier: Any
) -> None:
    task, slow = _task(tmp_path), _task(tmp_path, SLOW_HIDDEN, "slow")
    made = _served(slow, tmp_path / "cache", CallPlan(sizes=dict(task.bench), least=4, most=4))
    assert all(c.reported_s < 1e-5 for c in made)  # what its own clock says
    why, allowance = audit_calls(verifier, task, made, [0.01], set())
    seconds, charged = timed_seconds(made, allowance)
    assert why == ""  # its outputs are right
    assert statistics.median(seconds) >= 0.05 and charged >= 4 * 0.05
    assert unseen_problem(made, seconds).startswith("timing refused: a call took")


@needs_gxx
def test_work_finished_after_the_call_returned_is_counted(tmp_path: Path, verifier: Any) -> None:
    """A call that returns at once and finishes its work while its outputs are copied back
    (a thread, and a fault handler holding the copy): its reply leaves early, but the clock
    runs on until the outputs' sketch is back, and what that takes beyond the C++ function's
    own copy and sketch counts as the call's."""
    task, early = _task(tmp_path), _task(tmp_path, AFTER_RETURN, "early")
    made = _served(early, tmp_path / "cache", CallPlan(sizes=dict(task.bench), least=4, most=4))
    assert statistics.median(c.wall_s for c in made) < 0.03  # the reply came before the work
    why, allowance = audit_calls(verifier, task, made, [0.01], set())
    assert why == ""  # its outputs are right
    assert allowance.finish_s < 0.03 and statistics.median(c.finish_s for c in made) >= 0.045
    seconds, charged = timed_seconds(made, allowance)
    assert statistics.median(seconds) >= 0.04 and charged >= 4 * 0.03


@needs_gxx
def test_the_wrappers_copies_are_not_in_a_calls_time(tmp_path: Path) -> None:
    """A 256 MiB input's copies into the wrapper's vectors are a step of their own (on
    "stage"), timed apart: the call's time by the controller's clock is the function's call
    and the channel's trip, a small part of the copies' even on a loaded machine."""
    task = _task(tmp_path)
    big = {"M": 2048, "N": 16384}
    given = [(big, seed, (seed + 1, seed + 2)) for seed in (1, 4, 7)]
    made = _served(task, tmp_path / "cache", CallPlan(given=given))
    extra = statistics.median(c.wall_s - c.reported_s for c in made)
    staging = statistics.median(c.stage_s for c in made)
    assert 0 <= extra < 0.3 * staging, (extra, staging)


def test_timed_seconds_never_below_what_the_wrapper_reported() -> None:
    def call(reported: float, wall: float, stage: float = 0.0) -> TimedCall:
        return TimedCall({}, 1, (1, 2), reported, wall, {}, stage_s=stage)

    allow = Allowance(call_s=0.0002, stage_s=0.010, finish_s=0.002)
    seconds, charged = timed_seconds([call(0.010, 0.0101), call(0.001, 0.0100)], allow)
    assert seconds == pytest.approx([0.010, 0.0098]) and charged == pytest.approx(0.0088)
    # staging as long as the C++ function's counts nothing; beyond it, the drop-in's work
    seconds, charged = timed_seconds(
        [call(0.001, 0.0012, 0.009), call(0.001, 0.0012, 0.030)], allow
    )
    assert seconds == pytest.approx([0.001, 0.021]) and charged == pytest.approx(0.020)
    # the outputs' return the same: beyond the C++ function's, the drop-in's work
    finished = [
        TimedCall({}, 1, (1, 2), 0.001, 0.0012, {}, finish_s=0.0015),
        TimedCall({}, 1, (1, 2), 0.001, 0.0012, {}, finish_s=0.052),
    ]
    seconds, charged = timed_seconds(finished, allow)
    assert seconds == pytest.approx([0.001, 0.051]) and charged == pytest.approx(0.050)


def test_time_that_escaped_is_refused_only_past_the_channels_jitter() -> None:
    def call(reported: float) -> TimedCall:
        return TimedCall({}, 1, (1, 2), reported, 0.0, {})

    tiny = [call(0.00001)] * 3  # an honest 10 us call behind 8 ms trips (a loaded machine)
    assert unseen_problem(tiny, [0.008] * 3) == ""
    hidden = [call(0.000001)] * 3  # reports 1 us, takes 40 ms
    assert unseen_problem(hidden, [0.040, 0.041, 0.039]).startswith("timing refused")
    half = [call(0.030)] * 3  # 30 ms of its own, 35 ms more unseen: refused
    assert unseen_problem(half, [0.065] * 3).startswith("timing refused")
    assert unseen_problem(half, [0.055] * 3) == ""  # 25 ms unseen: less than its own


class _Forged:
    """A drop-in's worker whose channel the drop-in wrote: a sketch that is not a list."""

    def __init__(self, sketch: Any) -> None:
        self.replies = iter(
            [
                {"type": "made"},
                {"type": "staged"},
                {"type": "called", "seconds": 0.001},
                {"type": "sketch", **sketch},
            ]
        )
        self.sent: list[dict[str, Any]] = []

    def spin(self, seconds: float) -> None:
        pass

    def send(self, header: dict[str, Any], arrays: Any = None) -> None:
        self.sent.append(header)

    def receive(self, timeout_s: float, phase: str, expect: Any = None) -> Any:
        return next(self.replies), []


@pytest.mark.parametrize("sketch", [{"sketch": {"y": 5}}, {"sketch": [1, 2]}, {}])
def test_a_call_whose_reply_is_not_a_sketch_is_a_crash(tmp_path: Path, sketch: Any) -> None:
    from kernelwright.tools.cpp_reference import _serve_calls
    from kernelwright.tools.sandbox import WorkerFailure

    task = _task(tmp_path)
    with pytest.raises(WorkerFailure, match="sent no valid call"):
        _serve_calls(_Forged(sketch), task, CallPlan(sizes={"M": 2, "N": 2}, least=1), 5.0, "x")  # type: ignore[arg-type]


def test_a_drop_in_never_shares_a_translation_unit_with_its_wrapper(tmp_path: Path) -> None:
    """A macro at the end of a drop-in host file reached the wrapper compiled after it (its
    clock, its copies); the wrapper is now a unit of its own, declaring the function."""
    task = _task(tmp_path)
    host = "#define count() count() * 0.0\n"
    unit, wrapper = translation_unit(task, host), wrapper_unit(task)
    assert host in unit and "kw_invoke" not in unit
    assert "kw_invoke" in wrapper and "count() * 0.0" not in wrapper
    assert "void gemv(const std::vector<double>& A" in wrapper


# Right through its trials, then 7e-10 off in every output (7x the float64 tolerance of 1e-10
# relative): each call's sketch alone often passes; together they do not.
SLIGHTLY_OFF = GEMV.replace(
    "y[i] = s;", "static long calls = 0; y[i] = ++calls > 3 * 64 ? s * (1 + 7e-10) : s;"
)


@needs_gxx
def test_calls_a_little_off_in_every_call_are_caught(tmp_path: Path, verifier: Any) -> None:
    task, bad = _task(tmp_path), _task(tmp_path, SLIGHTLY_OFF, "off")
    made = _served(bad, tmp_path / "cache", CallPlan(sizes=dict(task.bench), least=16, most=16))
    why, _ = audit_calls(verifier, task, made, [0.01], set())
    assert why.startswith(("during timing: outputs are consistently further", "timed call")), why
    assert "the C++ function's" in why


def test_the_calls_drift_is_judged_over_all_of_them(
    tmp_path: Path, verifier: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each call within its bound (|z| 2.5 < 6), but every one of them that far: the mean z^2
    over all the audited calls is what fails, as for a kernel's timed calls."""
    from kernelwright.tools import cpp_check

    task = _task(tmp_path)
    made = _served(task, tmp_path / "cache", CallPlan(sizes=dict(task.bench), least=8, most=8))
    monkeypatch.setattr(cpp_check, "sketch_problem", lambda *a: ("", [2.5, -2.5]))
    why, _ = audit_calls(verifier, task, made, [0.01], set())
    assert why.startswith("during timing: outputs are consistently further from the C++")
    monkeypatch.setattr(cpp_check, "sketch_problem", lambda *a: ("", [0.5, -0.5]))
    assert audit_calls(verifier, task, made, [0.01], set())[0] == ""
