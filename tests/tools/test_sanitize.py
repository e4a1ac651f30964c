"""compute-sanitizer's reports, judged from recorded output (no GPU): any error a tool reports
makes the candidate wrong, with the first finding as the reason."""

from __future__ import annotations

from kernelwright.tools import sanitize
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
    result = sanitize.judge({"type": "sanitized", "tools": tools}, {"N": 1000})
    assert result.available and result.ok and result.errors == dict.fromkeys(sanitize.TOOLS, 0)


def test_a_race_is_a_finding_with_its_reason() -> None:
    tools = {"memcheck": CLEAN, "racecheck": RACE, "initcheck": CLEAN, "synccheck": CLEAN}
    result = sanitize.judge({"type": "sanitized", "tools": tools}, {"M": 129, "N": 33})
    assert result.available and not result.ok
    assert result.reason.startswith("compute-sanitizer racecheck: 1 errors at M=129, N=33")
    assert "Race reported between Write access" in result.reason
    assert result.findings[0].startswith("racecheck: Error: Race reported")


def test_an_out_of_bounds_write_is_named() -> None:
    result = sanitize.judge({"type": "sanitized", "tools": {"memcheck": OOB}}, {"N": 1000})
    assert not result.ok and "Invalid __global__ write of size 4 bytes" in result.reason


def test_a_tool_that_never_summarised_is_not_a_pass() -> None:
    result = sanitize.judge(
        {"type": "sanitized", "tools": {"memcheck": "timed out after 600 s"}}, {}
    )
    assert not result.available and "no summary for memcheck" in result.reason
    assert not sanitize.judge({"type": "oops"}, {}).available


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
