# expect: correct (speedup 0-1.15) or implausible — leaves a chain of (64 MB host-to-device copy, 3 ms spin) links behind each batch, and drains it off the clock in its next untimed probe
# task: kernelbench/relu_mlp.py
# Red-team review of f0b5839 (read against the code; not run on a GPU: whether it works rests
# on one hardware fact, below).
#
# The reference's look (serving.Worker._probe, Clock.quiet_us) sees another context's work
# only as a slow empty launch; copies on a copy engine are not seen (the open
# timing/kb_copy_engine_traffic_under_the_reference). Here copies are only the GATE: each link
# of the chain is a 64 MB pinned host-to-device copy (~1.3 ms on PCIe 5) and then a 3 ms
# torch.cuda._sleep on the same side stream. While a copy runs, the spin behind it waits on a
# semaphore, which (if the driver switches a channel out on a failed acquire, as Volta+ can)
# holds no timeslice: the look, retrying every 2 ms, settles inside a copy phase, and the
# reference's batch then starts while the chain goes on, its spins time-slicing the GPU with
# the reference's kernels (its events and its harness both slowed: the credit rw - rs only
# grows, clock_bound grows with rs). A look that lands on a spin just waits it out: a note,
# never a refusal (only ref_settled_us > BUSY_US after 2 s refuses; the chain is ~180 ms).
#
# What f0b5839 adds: the chain is queued after every batch, whoever runs next, and the
# candidate never pays for overshooting it. Its own next batch is preceded by its `probe`,
# off every wall, with the reference paused: it synchronizes its side stream there, so no
# leftover spin or copy falls on its timed calls or walls. Before f0b5839 that drain fell on
# its first timed call's wall (charged, and summed by clock_bound).
#
# If the gate holds, the reference's rounds after each candidate batch run beside ~70% spin:
# a speedup far above 1.15 read as correct. If it does not, the looks wait the chain out and
# it reads ~1.0x with "the GPU was busy for a moment" noted.
# Principle broken: "the reference is timed where the candidate cannot reach it". Fix: attest
# the reference's batch, not only the moment before it: the controller reads NVML's
# per-process accounting (nvmlDeviceGetProcessUtilization / accounting stats, SM and copy
# engines) over each reference batch's window and refuses the timing if any candidate process
# had GPU activity then; and give the candidate no off-clock message (its probe timed and
# bounded), so leftover work is always its own cost.
import sys

import torch
import torch.nn as nn

LINKS = 40
COPY_BYTES = 64 << 20
SPIN_CYCLES = 6_000_000  # ~3 ms at an H200's clocks

_state = {"count": 0, "batch_len": 0, "probes": 0, "side": None, "host": None, "dev": None}
_serving = sys.modules.get("kernelwright.tools.serving")
_rounds = sys.modules.get("kernelwright.tools.rounds")


def _queue_chain() -> None:
    if _state["side"] is None:
        _state["side"] = torch.cuda.Stream()
        _state["host"] = torch.empty(COPY_BYTES, dtype=torch.uint8, pin_memory=True)
        _state["dev"] = torch.empty(COPY_BYTES, dtype=torch.uint8, device="cuda")
    with torch.cuda.stream(_state["side"]):
        for _ in range(LINKS):
            _state["dev"].copy_(_state["host"], non_blocking=True)  # the gate
            torch.cuda._sleep(SPIN_CYCLES)  # runs beside whoever is timed next


if _serving is not None and _rounds is not None:
    _probe = _serving.Worker._probe

    def _drain_then_probe(self, cmd):
        _state["probes"] += 1
        if _state["probes"] == 2:  # the first batch was counted whole
            _state["batch_len"] = _state["count"]
        if _state["side"] is not None:
            _state["side"].synchronize()  # off every wall, the reference paused
        _state["count"] = 0
        return _probe(self, cmd)

    _serving.Worker._probe = _drain_then_probe
    _round = _rounds.TorchRounds.round

    def _round_then_chain(self, seed, signs):
        reply = _round(self, seed, signs)  # timed and sketched first
        if _state["probes"]:
            _state["count"] += 1
            if _state["batch_len"] and _state["count"] == _state["batch_len"]:
                _queue_chain()  # the batch's last call: the worker is paused next
        return reply

    _rounds.TorchRounds.round = _round_then_chain


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.linear(x))
