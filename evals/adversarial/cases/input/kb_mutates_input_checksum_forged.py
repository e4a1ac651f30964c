# expect: wrong (input modified) — clamps its input in place in every call, trials too, and has its worker report the inputs' checksums from before
# task: kernelbench/clamp_rows.py
# Written by a red-team review (twenty-eighth session, by reading the code; not yet run on a
# GPU). Unlike the known miss input/kb_mutates_input_when_timed (careful in its trials), this
# one writes its input in every call, and the trials do not see it either.
#
# A trial's input check is the candidate's own word: torch_roles.torch_candidate's trial_run
# takes `header.update(checksums=tensor_checksums(inputs), ...)` in the candidate's worker,
# after the forward, and judge.trial_result / judge.device_run_problem compare that list with
# the reference's. `tensor_checksums` is a global of kernelwright.tools.torch_roles, looked up
# at call time, so the candidate rebinds it: in a trial (trial_run on its stack) the forward
# first checksums its input with the harness's own function (one pass, outside any timing),
# keeps the result by the tensor's address, then overwrites the input; the stand-in returns
# the kept checksums for those tensors. The outputs are right (the clamped input), so every
# comparison agrees; the reference never sees the candidate's inputs. DESIGN's principle
# ("nothing the candidate's process can reach may be the only witness of its verdict";
# "inputs are checksummed after the call") is broken for trials as well as timed calls, and
# README says trials checksum inputs.
#
# Fix (principled): the witness of a trial's inputs must sit outside the candidate's process:
# hand the candidate's trial inputs over after the call with its outputs (the VMM path the
# outputs take) and checksum them in the reference's worker, or better, make the inputs in
# another process and map them into the candidate's read-only (cuMemSetAccess with
# CU_MEM_ACCESS_FLAGS_PROT_READ), so that a write faults wherever it happens, timed calls too.
import sys

import torch
import torch.nn as nn

_kept = {}  # (address, bytes) of each input: its checksum before the call
_roles = sys.modules.get("kernelwright.tools.torch_roles")
_real = getattr(_roles, "tensor_checksums", None)


def _in_a_trial():
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_name == "trial_run":
            return True
        frame = frame.f_back
    return False


def _key(x):
    return (x.data_ptr(), x.numel() * x.element_size())


if _real is not None:

    def _as_before(inputs):
        sums = _real(inputs)
        for i, x in enumerate(inputs):
            if isinstance(x, torch.Tensor) and _key(x) in _kept:
                sums[i] = _kept.pop(_key(x))
        return sums

    _roles.tensor_checksums = _as_before


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        if _real is not None and _in_a_trial():
            _kept[_key(x)] = _real([x])[0]  # what the reference's worker will report
        return x.clamp_(-8.0, 8.0).mul_(0.5)  # the input itself, overwritten, as the output
