"""The GPU backend the optimization loop talks to: check a candidate, profile a kernel.

`LocalGpu` does it on this machine's GPU through the sandboxed verifier. `ReplayGpu` answers
with reports recorded on a real GPU (by `RecordingGpu`), so the loop can be tested without one.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .profile import profile
from .results import CheckReport, ProfileResult, SanitizeResult
from .sanitize import sanitize
from .task import Candidate, Task
from .verify import Verifier, VerifyOptions

if TYPE_CHECKING:
    from .pool import Pool

Recorded = CheckReport | ProfileResult | SanitizeResult


class GpuBackend(Protocol):
    def check(self, task: Task, candidate: Candidate) -> CheckReport: ...

    def profile(self, task: Task, candidate: Candidate) -> ProfileResult: ...

    def sanitize(self, task: Task, candidate: Candidate) -> SanitizeResult: ...

    def close(self) -> None: ...


def candidate_key(task: Task, candidate: Candidate) -> str:
    """What identifies a candidate for replay: the task's name, its source and its launch (as it
    runs: the knobs it names in place)."""
    launch = getattr(candidate, "bound_launch", getattr(candidate, "launch", None))
    parts: list[Any] = [task.name, candidate.source, launch.model_dump() if launch else None]
    if flags := candidate.compile_flags("nvrtc"):  # none: the keys recorded before options
        parts.append(list(flags))
    text = json.dumps(parts)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


class LocalGpu:
    """This machine's GPU. Spare workers start between checks, while the model writes
    (`options.prestart`); `progress` hears each check's steps ("compiling", "timing")."""

    def __init__(
        self,
        options: VerifyOptions | None = None,
        backend: str = "nvrtc",
        progress: Callable[[str], None] | None = None,
        pool: Pool | None = None,
    ) -> None:
        """`pool`: one made for `options` whose first workers are already starting."""
        self.verifier = Verifier(options or VerifyOptions(prestart=True), progress, pool)
        self.backend = backend

    def check(self, task: Task, candidate: Candidate) -> CheckReport:
        return self.verifier.check(task, candidate)

    def profile(self, task: Task, candidate: Candidate) -> ProfileResult:
        return profile(task, candidate, self.backend)

    def sanitize(self, task: Task, candidate: Candidate) -> SanitizeResult:
        return sanitize(task, candidate, self.backend)

    def close(self) -> None:
        self.verifier.close()


class RecordingGpu:
    """Wraps a backend and appends every answer to a JSONL file that ReplayGpu reads."""

    def __init__(self, inner: GpuBackend, path: Path) -> None:
        self.inner, self.path = inner, path

    def _write(self, kind: str, key: str, value: Recorded) -> None:
        with self.path.open("a") as f:
            f.write(
                json.dumps({"kind": kind, "key": key, "value": value.model_dump(mode="json")})
                + "\n"
            )

    def check(self, task: Task, candidate: Candidate) -> CheckReport:
        report = self.inner.check(task, candidate)
        self._write("check", candidate_key(task, candidate), report)
        return report

    def profile(self, task: Task, candidate: Candidate) -> ProfileResult:
        result = self.inner.profile(task, candidate)
        self._write("profile", candidate_key(task, candidate), result)
        return result

    def sanitize(self, task: Task, candidate: Candidate) -> SanitizeResult:
        result = self.inner.sanitize(task, candidate)
        self._write("sanitize", candidate_key(task, candidate), result)
        return result

    def close(self) -> None:
        self.inner.close()


class ReplayMiss(LookupError):
    """A candidate the recording never saw: the test asked for something not recorded."""


class ReplayGpu:
    """Answers from recorded reports, keyed by candidate; no GPU, no processes."""

    def __init__(
        self,
        checks: dict[str, CheckReport] | None = None,
        profiles: dict[str, ProfileResult] | None = None,
        sanitized: dict[str, SanitizeResult] | None = None,
    ) -> None:
        self.checks = dict(checks or {})
        self.profiles = dict(profiles or {})
        self.sanitized = dict(sanitized or {})
        self.calls: list[tuple[str, str]] = []

    @classmethod
    def from_file(cls, path: Path) -> ReplayGpu:
        replay = cls()
        for line in path.read_text().splitlines():
            if not line.strip():
                continue
            row = json.loads(line)
            if row["kind"] == "check":
                replay.checks[row["key"]] = CheckReport.model_validate(row["value"])
            elif row["kind"] == "sanitize":
                replay.sanitized[row["key"]] = SanitizeResult.model_validate(row["value"])
            else:
                replay.profiles[row["key"]] = ProfileResult.model_validate(row["value"])
        return replay

    def add(
        self,
        task: Task,
        candidate: Candidate,
        report: Recorded,
    ) -> None:
        key = candidate_key(task, candidate)
        if isinstance(report, CheckReport):
            self.checks[key] = report
        elif isinstance(report, SanitizeResult):
            self.sanitized[key] = report
        else:
            self.profiles[key] = report

    def check(self, task: Task, candidate: Candidate) -> CheckReport:
        key = candidate_key(task, candidate)
        self.calls.append(("check", key))
        if key not in self.checks:
            raise ReplayMiss(f"no recorded check for this candidate of {task.name} ({key})")
        return self.checks[key]

    def profile(self, task: Task, candidate: Candidate) -> ProfileResult:
        key = candidate_key(task, candidate)
        self.calls.append(("profile", key))
        return self.profiles.get(
            key, ProfileResult(available=False, reason="profiling unavailable: not recorded")
        )

    def sanitize(self, task: Task, candidate: Candidate) -> SanitizeResult:
        key = candidate_key(task, candidate)
        self.calls.append(("sanitize", key))
        return self.sanitized.get(
            key, SanitizeResult(available=False, reason="compute-sanitizer: not recorded")
        )

    def close(self) -> None:
        pass
