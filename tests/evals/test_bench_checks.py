"""The side-by-side check benchmark's plumbing, without a GPU: each tree's own kernelwright
answers, and bad arguments are refused in one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GELU = ROOT / "examples" / "gelu" / "gelu.toml"


def _bench(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kernelwright.evals.bench_checks", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )


def test_each_tree_runs_its_own_kernelwright(tmp_path: Path) -> None:
    # A tree whose CLI says who it is: the bench must run that one, not the installed one.
    fake = tmp_path / "tree" / "kernelwright" / "agent"
    fake.mkdir(parents=True)
    (fake.parent / "__init__.py").write_text("")
    (fake / "__init__.py").write_text("")
    (fake / "cli.py").write_text(
        "import json\n"
        "def main():\n"
        "    report = {'verdict': 'correct', 'wall_ms': 12.5, 'timing': {'speedup': 3.0}}\n"
        "    print(json.dumps(report))\n"
    )
    out = tmp_path / "rows.json"
    done = _bench(
        str(GELU),
        "--repeat",
        "1",
        "--tree",
        f"fake={tmp_path / 'tree'}",
        "--json",
        str(out),
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    rows = {r["tree"]: r for r in json.loads(out.read_text())}
    assert rows["fake"]["verdicts"] == ["correct"]
    assert rows["fake"]["check_ms"] == 12.5 and rows["fake"]["speedup"] == 3.0
    assert "installed" in rows  # beside it, always
    assert rows["installed"]["wall_vs_installed"] == 1.0
    assert (
        rows["fake"]["wall_vs_installed"] == rows["fake"]["wall_ms"] / rows["installed"]["wall_ms"]
    )
    assert "fake" in done.stdout and "installed" in done.stdout


def test_bad_arguments_are_refused_in_one_line(tmp_path: Path) -> None:
    done = _bench(str(tmp_path / "missing.toml"), cwd=tmp_path)
    assert done.returncode == 2
    assert "want TASK[:CANDIDATE]" in done.stderr.strip().splitlines()[-1]
    done = _bench(str(GELU), "--tree", f"x={tmp_path}", cwd=tmp_path)
    assert done.returncode == 2
    assert "holding a kernelwright package" in done.stderr.strip().splitlines()[-1]
