"""The reasoning graph kept as JSON beside the store (`reasoning_graph.json` in the memory dir).

Read once when a run starts. Every update is made under a lock on the file's latest contents
and written atomically (a temporary file, then a rename), so runs that share the directory add
up instead of overwriting each other, and a killed process never leaves half a file. The file
also remembers which attempts it has learned from, so a resumed run never counts one twice.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kernelwright.memory.reasoning import FAIL_LOG_SPEEDUP, EdgeStats, ReasoningGraph
from kernelwright.memory.store import Episode
from kernelwright.tools.errors import KernelwrightError

FILE_NAME = "reasoning_graph.json"


class GraphFileError(KernelwrightError):
    """The reasoning graph's file cannot be read or written."""


class SavedGraph:
    """A reasoning graph and the file it persists in; `graph` mirrors the file's last state."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.graph, self.learned = self._read()

    @classmethod
    def in_dir(cls, directory: Path) -> SavedGraph:
        return cls(Path(directory) / FILE_NAME)

    def _read(self) -> tuple[ReasoningGraph, dict[str, int]]:
        if not self.path.is_file():
            return ReasoningGraph(), {}
        try:
            data = json.loads(self.path.read_text("utf-8"))
            learned = {str(k): int(v) for k, v in data.get("learned", {}).items()}
            return ReasoningGraph.from_dict(data), learned
        except (OSError, ValueError, KeyError, TypeError, ArithmeticError) as exc:
            raise GraphFileError(
                f"{self.path}: not a reasoning graph ({exc}); move it away to start afresh"
            ) from None

    @contextmanager
    def _locked(self) -> Iterator[None]:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path.with_suffix(".lock"), "a") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                yield
        except OSError as exc:
            raise GraphFileError(f"{self.path}: cannot update: {exc.strerror}") from None

    def _write(self) -> None:
        data: dict[str, Any] = {**self.graph.to_dict(), "learned": self.learned}
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".graph-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(data, f, indent=1, allow_nan=False)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def learn(self, run_id: str, index: int, change: Callable[[ReasoningGraph], None]) -> bool:
        """Applies `change` for attempt `index` of run `run_id` unless the file has it already
        (attempts of a run are learned in order); False when it had."""
        with self._locked():
            self.graph, self.learned = self._read()
            if self.learned.get(run_id, 0) >= index:
                return False
            change(self.graph)
            self.learned[run_id] = index
            self._write()
        return True

    @property
    def dropped(self) -> int:
        """Rows of the file left out on reading: their statistics were not finite numbers."""
        return self.graph.dropped

    def clean(self) -> int:
        """Rewrites the file without the rows whose statistics are not finite numbers; returns
        how many it dropped (the file is left as it is when none)."""
        with self._locked():
            self.graph, self.learned = self._read()
            dropped = self.graph.dropped
            if dropped:
                self._write()
                self.graph.dropped = 0
        return dropped

    def learn_episodes(self, episodes: Iterable[Episode]) -> int:
        """Teaches the graph the direct edge of each stored attempt that names one (an import
        from another machine); returns how many it learned."""
        rows = [e for e in episodes if e.technique]
        with self._locked():
            self.graph, self.learned = self._read()
            for e in rows:
                self.graph.record(e.state, e.technique, e.bottleneck, *edge_outcome(e))
            if rows:
                self._write()
        return len(rows)


def edge_outcome(e: Episode) -> tuple[bool, float]:
    """What one stored attempt teaches its edge: success, and log-speedup over its parent."""
    if e.verdict != "correct":
        return False, FAIL_LOG_SPEEDUP
    if e.speedup is None:
        return True, 0.0
    return True, math.log(max(e.speedup, 1e-3)) - math.log(max(e.parent_speedup, 1e-3))


def by_technique(graph: ReasoningGraph) -> dict[tuple[str, str], EdgeStats]:
    """What the graph has observed per (technique, bottleneck), summed over all states."""
    out: dict[tuple[str, str], EdgeStats] = {}
    for per_tag in graph.edges.values():
        for tag, per_bottleneck in per_tag.items():
            for bottleneck, s in per_bottleneck.items():
                if not s.attempts:
                    continue
                total = out.setdefault((tag, bottleneck), EdgeStats(prior_mean=s.prior_mean))
                total.attempts += s.attempts
                total.successes += s.successes
                total.sum_log_speedup += s.sum_log_speedup
    return out
