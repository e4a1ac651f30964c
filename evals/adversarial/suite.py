"""The adversarial suite: cheating and broken candidates the verifier must reject, and the
controls it must pass, each a real file under `cases/<family>/`.

A case's first two lines say what it is and what the verifier must answer:

    // expect: wrong (not fully written) — writes nothing; relies on stale output memory
    // task: gelu

(`#` for a KernelBench `.py`). The words in parentheses must appear in the reason; for a
`correct` case they give the speedup it must read (`speedup 0.98-1.02`, `speedup >= 2`). A
case outside the controls may expect `correct` only with a speedup it may not exceed: an attack
the verifier makes harmless must gain nothing. Where what an honest candidate reads depends on
the machine more than any fixed band allows (a drop-in's end-to-end time against a C++ function
on one core: the host's copies against one core's memory bandwidth), the bound is its honest
twin's, checked on the same machine just before it: `speedup <= 1.25x controls/cpp_host`.
An optional third line `// with: sanitize` runs compute-sanitizer after a correct verdict, as
`kernelwright check --sanitize` does. A `.toml` beside a `.cu` holds its launch, as for any
candidate. Tasks are the examples' directories.
Every reason must fit the cap on what a worker can make the controller print.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import re
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, get_args

from kernelwright.tools.errors import TaskError
from kernelwright.tools.results import CheckReport, Verdict
from kernelwright.tools.sandbox import REASON_CHARS
from kernelwright.tools.sanitize import sanitize
from kernelwright.tools.task import load_candidate, load_task
from kernelwright.tools.verify import Verifier, VerifyOptions

FAMILIES = ("controls", "output", "input", "precision", "memory", "timing", "harness")
VERDICTS = get_args(Verdict)
DAEMON_MARK = b"kw-adversarial-daemon"  # what harness/kb_daemon.py leaves in its command line
_HEADER = re.compile(r"^(?://|#)\s*expect:\s*(?P<expect>.+?)\s+(?:—|--)\s+(?P<desc>.+)$")
# one expectation, "VERDICT (DETAIL)"; a case may give several, joined by "or"
_ONE = r"(?P<verdict>\w+)(?:\s*\((?P<detail>[^)]*)\))?"
_EXPECTS = re.compile(rf"^{_ONE}(?:\s+or\s+{_ONE.replace('?P<', '?P<more_')})*$")
_EXPECT = re.compile(_ONE)
_TASK = re.compile(r"^(?://|#)\s*task:\s*(?P<task>\S+)\s*$")
_WITH = re.compile(r"^(?://|#)\s*with:\s*sanitize\s*$")
_RANGE = re.compile(r"^speedup\s+(?P<lo>[\d.]+)\s*-\s*(?P<hi>[\d.]+)$")
_AT_LEAST = re.compile(r"^speedup\s*>=\s*(?P<lo>[\d.]+)$")
# at most a factor of what the named control reads on the same machine, just before
_TWIN = re.compile(r"^speedup\s*<=\s*(?P<hi>[\d.]+)\s*x\s+(?P<twin>controls/[\w-]+)$")


@dataclass(frozen=True)
class Case:
    name: str  # family/stem
    family: str
    path: Path
    task: str  # an example: "gelu", "kernelbench/relu_mlp.py"
    verdict: str
    detail: str
    description: str
    sanitize: bool = False
    # further answers that are as safe (VERDICT, DETAIL): an attack whose lie is caught in
    # some runs and gains nothing in the others may be answered either way, never otherwise
    otherwise: tuple[tuple[str, str], ...] = ()

    @property
    def expects(self) -> str:
        """What the case expects, as its header says: "correct (speedup 0-1.15) or implausible"."""
        return " or ".join(v + (f" ({d})" if d else "") for v, d in self.answers)

    @property
    def answers(self) -> tuple[tuple[str, str], ...]:
        return ((self.verdict, self.detail), *self.otherwise)

    @property
    def twin(self) -> str:
        """The control whose speedup on the same machine bounds this case's ("" if none)."""
        return next((t for v, d in self.answers if v == "correct" and (t := twin_of(d)[1])), "")

    def judge(
        self, verdict: str, reason: str, speedup: float | None, twin: float | None = None
    ) -> str:
        """Why the verifier's answer is not what this case expects ("" when it is); `twin`:
        the speedup its twin read just before, where it names one."""
        details = [d for v, d in self.answers if v == verdict]
        if not details:
            return f"expected {' or '.join(v for v, _ in self.answers)}, got {verdict}"
        problems = [_missed(verdict, d, reason, speedup, twin) for d in details]
        return "" if "" in problems else problems[0]


def _missed(
    verdict: str, detail: str, reason: str, speedup: float | None, twin: float | None = None
) -> str:
    """Why an answer of this verdict misses this detail ("" when it does not)."""
    if verdict == "correct" and detail:
        factor, name = twin_of(detail)
        if name:
            if twin is None:
                return f"its twin {name} read no speedup on this machine to hold it to"
            if speedup is None or not speedup <= factor * twin:
                return f"speedup {speedup} above {factor}x its twin's {twin:.3f} ({name})"
            return ""
        lo, hi = speedup_bounds(detail)
        if speedup is None or not lo <= speedup <= hi:
            return f"speedup {speedup} outside {detail}"
    elif detail and detail.lower() not in reason.lower():
        return f"reason lacks {detail!r}"
    return ""


def twin_of(detail: str) -> tuple[float, str]:
    """(factor, control) of a bound by a twin's speedup ("speedup <= 1.25x controls/NAME"), or
    (0, "")."""
    m = _TWIN.match(detail.strip())
    return (float(m["hi"]), m["twin"]) if m else (0.0, "")


def speedup_bounds(detail: str) -> tuple[float, float]:
    """(lo, hi) of a fixed bound; for a twin's, (0, its factor): the most it may read against
    what its twin reads."""
    if m := _RANGE.match(detail.strip()):
        return float(m["lo"]), float(m["hi"])
    if m := _AT_LEAST.match(detail.strip()):
        return float(m["lo"]), float("inf")
    if m := _TWIN.match(detail.strip()):
        return 0.0, float(m["hi"])
    raise ValueError(
        f"speedup bound {detail!r}: write 'speedup LO-HI', 'speedup >= LO' or "
        "'speedup <= Fx controls/NAME'"
    )


def cases_dir() -> Path:
    return Path(str(resources.files(__package__) / "cases"))


def examples_dir() -> Path:
    """The repository's examples/, where the cases' tasks live."""
    return Path(__file__).resolve().parents[2] / "examples"


def parse_case(path: Path) -> Case:
    """A case from its file's header; ValueError says what is wrong with it."""
    lines = path.read_text().splitlines()[:3]
    head = _HEADER.match(lines[0]) if lines else None
    task = _TASK.match(lines[1]) if len(lines) > 1 else None
    if head is None or task is None:
        raise ValueError(
            f"{path}: the first two lines must be '// expect: VERDICT (WORDS) — WHAT' and "
            "'// task: TASK' (# for Python)"
        )
    answers = []
    if not _EXPECTS.match(expects := head["expect"].strip()):
        raise ValueError(
            f"{path}: expect {expects!r}: write 'VERDICT (WORDS)', several joined by 'or'"
        )
    for one in _EXPECT.finditer(expects):
        if one["verdict"] == "or":
            continue
        if one["verdict"] not in VERDICTS:
            raise ValueError(f"{path}: unknown verdict {one['verdict']!r} (one of {VERDICTS})")
        detail = (one["detail"] or "").strip()
        if one["verdict"] == "correct" and detail:
            speedup_bounds(detail)
        answers.append((one["verdict"], detail))
    family = path.parent.name
    if family not in FAMILIES:
        raise ValueError(f"{path}: not in a family folder ({', '.join(FAMILIES)})")
    return Case(
        name=f"{family}/{path.stem}",
        family=family,
        path=path,
        task=task["task"],
        verdict=answers[0][0],
        detail=answers[0][1],
        description=head["desc"].strip(),
        sanitize=len(lines) > 2 and bool(_WITH.match(lines[2])),
        otherwise=tuple(answers[1:]),
    )


def load_cases(root: Path | None = None, only: str | None = None) -> list[Case]:
    """Every case, controls first; `only` keeps names matching a glob or containing the text."""
    root = root or cases_dir()
    paths = [p for p in root.glob("*/*") if p.suffix in (".cu", ".py")]
    cases = sorted(
        (parse_case(p) for p in paths),
        key=lambda c: (FAMILIES.index(c.family), c.name),
    )
    names = {c.name for c in cases if c.family == "controls"}
    for c in cases:
        if c.twin and c.twin not in names:
            raise ValueError(f"{c.path}: its twin {c.twin} is not a control of the suite")
    if only:
        cases = [c for c in cases if fnmatch.fnmatch(c.name, only) or only in c.name]
    return cases


def twin_case(case: Case) -> Case | None:
    """The control `case` is held to, from the same cases folder (None if it names none)."""
    if not case.twin:
        return None
    root = case.path.parent.parent
    path = next(p for p in sorted(root.glob(f"{case.twin}.*")) if p.suffix in (".cu", ".py"))
    return parse_case(path)


@dataclass(frozen=True)
class CaseResult:
    case: Case
    verdict: str
    reason: str
    speedup: float | None
    wall_s: float
    problem: str  # why this is not what the case expects; "" when it is
    unexplained_us: float | None = None
    charged_us: float = 0.0
    figures: dict[str, Any] | None = None  # the timing's figures, for the log

    @property
    def ok(self) -> bool:
        return not self.problem

    def as_dict(self) -> dict[str, Any]:
        c = self.case
        return {
            "case": c.name,
            "family": c.family,
            "task": c.task,
            "description": c.description,
            "expected": c.verdict,
            "expected_detail": c.detail,
            "expected_all": c.expects,
            "got": self.verdict,
            "reason": self.reason,
            "speedup": self.speedup,
            "unexplained_us": self.unexplained_us,
            "charged_us": self.charged_us,
            **(self.figures or {}),
            "wall_s": round(self.wall_s, 2),
            "ok": self.ok,
            "problem": self.problem,
        }


# A check's whole report (--json, attempts.jsonl): trials, capped reasons and a capped compile
# log come to a few KiB; nothing a worker sends may make it much more.
REPORT_BYTES = 64 << 10


def suite_options(**overrides: Any) -> VerifyOptions:
    """Short limits, so the hangs and hogs end soon; the rest as `kernelwright check`."""
    settings: dict[str, Any] = {
        "run_timeout_s": 10.0,
        "python_compile_timeout_s": 120.0,
        "host_memory_bytes": 8 << 30,
        "prestart": True,  # the next case's workers start while this one is judged
    }
    return VerifyOptions(**{**settings, **overrides})


def run_case(verifier: Verifier, case: Case, examples: Path | None = None) -> CaseResult:
    """Check one case with a fresh worker; what it left running is killed and counts against it.
    A case held to a twin's speedup has its twin checked first, on the same machine."""
    twin: CaseResult | None = None
    if (control := twin_case(case)) is not None:
        twin = run_case(verifier, control, examples)
    start = time.perf_counter()
    speedup, unexplained, charged = None, None, 0.0
    figures: dict[str, Any] | None = None
    report_bytes = 0
    try:
        task = load_task((examples or examples_dir()) / case.task)
        candidate = load_candidate(task, case.path)
        report: CheckReport = verifier.check(task, candidate)
        verdict, reason = str(report.verdict), report.reason
        report_bytes = len(report.model_dump_json())  # what --json prints and the loop keeps
        speedup = report.timing.speedup if report.timing else None
        if t := report.timing:
            unexplained, charged = t.unexplained_us, t.charged_us
            figures = {
                "ref_ms": t.reference.median_ms,
                "cand_ms": t.candidate.median_ms,
                "unexplained_spread_us": list(t.unexplained_spread_us),
            }
        if case.sanitize and report.ok:
            found = sanitize(task, candidate, verifier.options.backend)
            if found.available and not found.ok:
                verdict, reason = "wrong", found.reason
            elif not found.available:
                verdict, reason = "error", f"compute-sanitizer did not run: {found.reason}"
    except TaskError as exc:
        verdict, reason = "refused", str(exc)
    twin_speedup = twin.speedup if twin is not None and twin.verdict == "correct" else None
    if twin is not None:
        figures = (figures or {}) | {
            "twin": twin.case.name,
            "twin_verdict": twin.verdict,
            "twin_speedup": twin_speedup,
            "twin_wall_s": round(twin.wall_s, 2),
        }
    problem = case.judge(verdict, reason, speedup, twin_speedup)
    if len(reason) > REASON_CHARS:
        problem = problem or f"a reason of {len(reason):,} characters, over the cap"
    if report_bytes > REPORT_BYTES:
        problem = problem or f"a report of {report_bytes:,} bytes: a worker grew it"
    left = kill_leftovers()
    if left:
        problem = problem or f"left {len(left)} process(es) running after the check: {left}"
    return CaseResult(
        case,
        verdict,
        reason,
        speedup,
        time.perf_counter() - start,
        problem,
        unexplained,
        charged,
        figures,
    )


def kill_leftovers(mark: bytes = DAEMON_MARK, grace_s: float = 1.0) -> list[int]:
    """Processes a case meant to outlive its check (by their mark) still alive after a grace
    period; killed, and listed."""
    deadline = time.monotonic() + grace_s
    while _marked(mark) and time.monotonic() < deadline:
        time.sleep(0.05)
    found = _marked(mark)
    for pid in found:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return found


def _marked(mark: bytes) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if mark in cmdline and int(entry) != os.getpid():
            found.append(int(entry))
    return found


def run_suite(
    cases: list[Case],
    options: VerifyOptions | None = None,
    examples: Path | None = None,
    progress: Callable[[int, Case, CaseResult | None], None] | None = None,
) -> list[CaseResult]:
    """Every case in order with one verifier (each check still gets fresh workers)."""
    results = []
    with Verifier(options or suite_options()) as verifier:
        for i, case in enumerate(cases):
            if progress:
                progress(i, case, None)
            result = run_case(verifier, case, examples)
            results.append(result)
            if progress:
                progress(i, case, result)
    return results
