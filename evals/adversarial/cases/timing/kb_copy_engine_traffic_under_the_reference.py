# expect: correct (speedup 0-1.15) or implausible — leaves copy-engine D2D traffic queued for the reference's batches: empty launches cannot see it, HBM is shared
# task: kernelbench/clamp_rows.py
# Written by a red-team review (twenty-ninth session, by reading the code; NOT run on a GPU:
# no device time was left. Whether a same-device cudaMemcpyAsync runs on a copy engine
# beside another context's kernels on an H200, and how much HBM bandwidth it then takes, is
# the hypothesis this case tests).
#
# The reference's worker looks for other work on the GPU before its batch with empty kernel
# launches (serving.Worker._probe -> timing.Clock.quiet_us: the slowest of three 1-thread
# launches, "a timeslice while another context runs work"; busy above timing.BUSY_US =
# 500 us), now as a message of its own (schedule._probe, 46b2cb8). Contexts time-slice on
# the compute engine; the copy engines have runlists of their own, so a paused candidate's
# queued device-to-device copies delay no empty launch, and the probe reads quiet
# (verdicts.timing refuses only ref_settled_us > BUSY_US). But the copies keep HBM busy (a
# D2D copy moves about 4.3 TB/s on these H200s, docs KINDS.md): clamp_rows' forward (512 MB in,
# 512 MB out, about 0.25 ms, memory-bound) is then timed on what is left of the bandwidth, in
# the reference's worker, by its own events: the ratio rises, and nothing in the candidate's
# own calls or walls is off (its copies end before its next batch: each length is set from
# the pause it measured the time before).
#
# Which batches: as in harness/kb_forge_behind_the_reference_probe, a candidate batch that
# begins with no pause since its previous one (R C C R) is always followed by a reference
# batch; the probe message marks each batch's start.
#
# Fix (principled): judge the reference's readiness by what its timed work needs, not by one
# empty launch's latency: the probe also times a small memory-bound copy (HBM bandwidth)
# against the same read taken on an idle GPU at the start of the check, and waits (or
# refuses the timing, as work left running) while it reads slow.
import sys
import time

import cupy
import torch
import torch.nn as nn

NO_PAUSE_S = 0.0025
_state = {"in_batches": False, "last_end": 0.0, "count": 0, "batch_len": 0,
          "traffic": False, "gap_s": 0.02, "paused_from": 0.0}
_side = cupy.cuda.Stream(non_blocking=True)
_src = cupy.empty(1 << 31, dtype=cupy.uint8)  # 2 GiB each way
_dst = cupy.empty(1 << 31, dtype=cupy.uint8)
COPY_S = (2 * (1 << 31)) / 4.0e12  # one copy, read and written, at about 4 TB/s

_serving = sys.modules.get("kernelwright.tools.serving")
_rounds = sys.modules.get("kernelwright.tools.rounds")

if _serving is not None and _rounds is not None:
    _probe = _serving.Worker._probe

    def _probe_and_plan(self, cmd):
        if cmd.get("probe") and cmd.get("cmd") in ("round", "probe"):
            now = time.perf_counter()
            if _state["in_batches"] and _state["count"]:
                _state["batch_len"] = _state["batch_len"] or _state["count"]
                gap = now - _state["last_end"]
                if gap >= NO_PAUSE_S:  # how long the other side's batch (or two) held it
                    _state["gap_s"] = gap
            no_pause = _state["in_batches"] and now - _state["last_end"] < NO_PAUSE_S
            _state["traffic"] = no_pause
            _state["in_batches"], _state["count"] = True, 0
        return _probe(self, cmd)

    _serving.Worker._probe = _probe_and_plan
    _round = _rounds.TorchRounds.round

    def _round_then_traffic(self, seed, signs):
        reply = _round(self, seed, signs)  # timed, synchronised, sketched: honest
        if _state["in_batches"]:
            _state["count"] += 1
            last = _state["batch_len"] and _state["count"] == _state["batch_len"]
            if last and _state["traffic"]:
                copies = max(1, int(0.8 * _state["gap_s"] / COPY_S))
                for _ in range(min(copies, 400)):  # queued, never waited for
                    cupy.cuda.runtime.memcpyAsync(
                        _dst.data.ptr, _src.data.ptr, _src.nbytes,
                        cupy.cuda.runtime.memcpyDeviceToDevice, _side.ptr,
                    )
        _state["last_end"] = time.perf_counter()
        return reply

    _rounds.TorchRounds.round = _round_then_traffic


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.clamp(x, min=-8.0, max=8.0) * 0.5
