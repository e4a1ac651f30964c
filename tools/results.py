"""What the tools return: frozen values with units in their field names.

A kernel that fails to compile, computes the wrong answer or hangs is a result, not an exception.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict


class Result(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class CompileResult(Result):
    ok: bool
    backend: Literal["nvrtc", "nvcc", "python"]
    arch: str
    duration_ms: float
    log: str = ""
    registers: int | None = None
    shared_mem_bytes: int | None = None  # static shared memory per block
    local_mem_bytes: int | None = None  # stack frame per thread
    spill_stores_bytes: int | None = None
    spill_loads_bytes: int | None = None
    cached: bool = False  # an unchanged candidate's earlier build, not built again
    # the GPU's clocks its code reads (%clock, %clock64, %globaltimer, %pm*: compile.clock_reads)
    reads_clock: tuple[str, ...] = ()

    @property
    def first_error(self) -> str:
        for line in self.log.splitlines():
            if "error" in line.lower():
                return line.strip()
        return self.log.strip().splitlines()[0] if self.log.strip() else "compile failed"


class TrialResult(Result):
    sizes: dict[str, int]
    held_out: bool = False
    phase: Literal["check", "post-timing"] = "check"
    process: int = 1  # which of the candidate's timing processes ran it (post-timing trials)
    ok: bool
    reason: str = ""
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    inits: dict[str, str] = {}  # inputs drawn from a wider distribution than usual here
    on_gpu: bool = False  # outputs compared on the GPU, in the reference's worker
    scale: float = 1.0  # floating-point inputs multiplied by this (plan.SCALES)
    counted: bool = True  # False: a scaled trial where PyTorch's own forward failed (its reason)


class CheckResult(Result):
    ok: bool
    reason: str
    trials: tuple[TrialResult, ...] = ()
    reference: Literal[
        "float64 reference",
        "reference kernel",
        "PyTorch eager",
        "PyTorch eager in float64",
        "C++ reference",
    ] = "reference kernel"


class KernelTiming(Result):
    median_ms: float
    iqr_ms: float  # spread: 75th minus 25th percentile
    min_ms: float
    max_ms: float
    samples: int


class ClockSample(Result):
    sm_mhz: int | None = None
    mem_mhz: int | None = None
    temperature_c: int | None = None
    power_w: float | None = None
    throttle_reasons: tuple[str, ...] = ()


class TimingResult(Result):
    reference: KernelTiming
    candidate: KernelTiming
    speedup: float  # median of per-round ratios reference / candidate, on the same inputs
    speedup_iqr: float
    rounds: int  # timed calls on each side
    input_sets: int  # distinct inputs timed: every call's are fresh
    calls_per_round: int = 1  # KernelBench: timed calls a round, each on its own input set
    # KernelBench: every timed call's inputs had a span scaled by this, as the check's scaled
    # trial's were (1: get_inputs()'s own)
    input_scale: float = 1.0
    # KernelBench: every timed call's inputs were made by the reference's worker and handed
    # over (handover.py), and checked there after the call; False: made where they were timed
    inputs_handed_over: bool = False
    processes: int = 1  # each side timed in this many processes, in turns (KernelBench)
    # the controller's wall time of the workers' warm-ups (with, for KernelBench, the reference's
    # calls a round measured), and of the rounds after them
    warmup_ms: float | None = None
    rounds_ms: float | None = None
    # KernelBench: a reference call's wall ms in its worker, inputs made and outputs sketched
    # (what sizes the batches of several processes a side)
    call_wall_ms: float | None = None
    # per pair of processes: the median ratio of its rounds, and its median unexplained us a call
    process_speedups: tuple[float, ...] = ()
    process_unexplained_us: tuple[float, ...] = ()
    l2_flush_bytes: int
    floor_ms: float | None = None  # roofline: least possible time at the bench size
    # per call, how much longer the candidate's worker kept the controller waiting than its
    # samples explain, beyond the reference's worker (verdicts.py)
    unexplained_us: float | None = None
    # the same, round by round: its 10th, 25th, 50th, 75th and 90th percentiles (how much the
    # median leaves out; on an H100, honest KernelBench candidates' spread about -160 to +170
    # us a call, 10th to 90th: far too wide for a bound on any one round)
    unexplained_spread_us: tuple[float, ...] = ()
    charged_us: float = 0.0  # added to the candidate's samples (KernelBench only)
    clocks_before: ClockSample | None = None
    clocks_after: ClockSample | None = None
    notes: tuple[str, ...] = ()


class ProfileResult(Result):
    available: bool
    reason: str = ""  # why profiling is unavailable, when it is
    kernel_name: str = ""
    duration_ms: float | None = None
    sm_pct: float | None = None  # SM throughput, % of peak
    dram_pct: float | None = None  # DRAM throughput, % of peak
    memory_pct: float | None = None  # memory-system throughput (L1/L2/DRAM), % of peak
    achieved_occupancy_pct: float | None = None
    theoretical_occupancy_pct: float | None = None
    registers_per_thread: int | None = None
    bottleneck: Literal["memory-bound", "compute-bound", "latency-bound", "unknown"] = "unknown"


class DeviceInfo(Result):
    name: str
    arch: str  # "sm_90"
    driver_version: str
    memory_total_bytes: int
    sm_count: int | None = None
    l2_bytes: int | None = None
    peak_dram_gbps: float | None = None  # theoretical, from memory clock and bus width
    peak_fp32_tflops: float | None = None
    # device code can reach pageable host memory (HMM; Grace Hopper): a CUDA kernel could then
    # read and write its own worker's host memory; None where not asked
    pageable_memory_access: bool | None = None


Verdict = Literal["correct", "wrong", "compile_error", "crashed", "timeout", "implausible", "error"]


class SanitizeResult(Result):
    """compute-sanitizer's tools over the launches (or the forward) the controller drew, each
    made as a trial's is, at small sizes (sanitize.watched)."""

    available: bool  # False: compute-sanitizer is not installed here (nothing was watched)
    ok: bool = True  # every tool finished and found nothing
    # False: installed, but it did not get through this candidate (a tool timed out or never
    # summarised, its worker failed): not a pass, whatever the reason
    finished: bool = True
    reason: str = ""  # the first finding, or why the sanitizer did not run or finish
    errors: dict[str, int] = {}  # tool: errors reported
    findings: tuple[str, ...] = ()  # the first lines of what each tool reported
    sizes: dict[str, int] = {}  # the first launch's sizes
    launch_sizes: tuple[dict[str, int], ...] = ()  # every launch's, in the order they ran


class Speedups(Result):
    """A C++ task's three speedups, each labelled by what it is against (cpp_check.py); None
    where the check could not measure it."""

    # against the C++ function, g++ -O3, on one pinned core: its median time over the kernel's
    cpu_core: float | None = None
    cpu_ms: float | None = None
    cpu_samples: int = 0
    # end to end: the copies in, the kernel and the copies out, with the allocations, as the
    # drop-in best_host.cu does them (often below 1x for O(N) work)
    end_to_end: float | None = None
    end_to_end_ms: float | None = None
    copies_ms: float | None = None  # measured by the GPU-side reference's worker
    end_to_end_measured: bool = False  # best_host.cu itself timed, not copies + kernel
    # against the first correct port, on the GPU, in paired rounds
    port: float | None = None
    port_iqr: float | None = None
    port_ms: float | None = None
    port_is: str = ""  # which port: "the task's port (port.cu)", "attempt 1", "itself"


class ExtensionBuild(Result):
    """One load_inline build a KernelBench candidate asked for (extbuild.py)."""

    name: str
    ok: bool
    cached: bool  # answered from the cache: not built again
    seconds: float
    log: str = ""


class CheckReport(Result):
    """Everything `kernelwright check` learns about one candidate."""

    task: str
    candidate: str
    verdict: Verdict
    reason: str
    compile: CompileResult | None = None
    check: CheckResult | None = None
    timing: TimingResult | None = None
    profile: ProfileResult | None = None
    sanitizer: SanitizeResult | None = None
    device: DeviceInfo | None = None
    speedups: Speedups | None = None  # a C++ task's three (timing's is against one core)
    wall_ms: float = 0.0
    phase_ms: dict[str, float] = {}  # where the wall time went: start, reference, compile, ...
    # where the first reference's and candidate's workers spent their start (by label), by
    # their own account: interpreter, confine, imports, torch, meta warm-up, job wait, cuda,
    # warm-up, vmm (ms)
    worker_start_ms: dict[str, dict[str, float]] = {}
    # `kernelwright check`'s own time around the check, ms a step: before the workers (its
    # interpreter and imports, from the process's start), starting them (NVML where no device
    # node is seen, and the pool), until the check (the verifier's import, the task's load),
    # check (the door's job: the verifier's wall_ms and its workers' stop), close
    command_ms: dict[str, float] = {}
    extensions: tuple[ExtensionBuild, ...] = ()  # a KernelBench candidate's load_inline builds
    # host memory at its peak: the controller's process so far, and each worker's process tree
    # by its label, sampled every 50 ms at most while the controller waited on it
    peak_host_bytes: dict[str, int] = {}
    # GPU memory at its peak, each worker's process tree by its label, as NVML counted it after
    # each trial and after the rounds (contexts and allocators' pools included); empty where
    # NVML cannot say
    peak_gpu_bytes: dict[str, int] = {}
    # the check's GPU memory as the reference saw it: gpu_peak_bytes (its largest trial, torch's
    # count), gpu_native_peak_bytes (its largest native forward's, float64 copies apart),
    # gpu_free_bytes (the least its trials left free); for a KernelBench problem, sized
    # before any trial ran, gpu_needed_bytes (the estimate its fit was judged by) and
    # gpu_free_at_start_bytes, and timed_in_bytes (a timed call's inputs, which the
    # reference's worker packs again to hand over)
    gpu_bytes: dict[str, int] = {}

    @property
    def ok(self) -> bool:
        return self.verdict == "correct"

    def with_sanitizer(self, found: SanitizeResult) -> CheckReport:
        """This report with compute-sanitizer's result: a finding makes it wrong, a sanitizer
        that did not finish on it (a hang under it) a timeout. Only a sanitizer that is not
        installed leaves the verdict as it was; found.reason then says so."""
        update: dict[str, Any] = {"sanitizer": found}
        if found.available and not found.ok:
            verdict = "wrong" if found.finished else "timeout"
            update |= {"verdict": verdict, "reason": found.reason}
        return self.model_copy(update=update)


class Attempt(Result):
    """One candidate of an optimization run, measured: what the memory and the summary keep."""

    index: int  # 1-based, in the order the run proposed them
    parent: int  # the attempt it improved on (0: the original kernel)
    tags: tuple[str, ...] = ()
    rationale: str = ""
    source: str
    launch: dict[str, Any] | None = None
    verdict: Verdict
    reason: str
    speedup: float | None = None  # against the original kernel, when timed
    speedup_iqr: float | None = None
    candidate_ms: float | None = None
    repairs: int = 0  # compile repairs before this verdict
    explanation: str = ""  # the reflect node's few sentences
    kept: bool = False  # became the new best
    wall_ms: float = 0.0
    model_ms: float = 0.0
