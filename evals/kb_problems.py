"""A user's KernelBench clone, read where it lies (nothing of it is vendored): its problems
(KernelBench/levelN/ID_Name.py), its representative subset, and the commit it is at.

As KernelBench's own `LocalKernelBenchDataset` reads a level (src/kernelbench/dataset.py): a
problem's id is the integer before the first "_" of its file name, and files without one are
not problems. The representative subset is read from the clone's own source with `ast`
(`LEVEL1_REPRESENTATIVE_IDS = [...]` in src/kernelbench/dataset.py, or the older
`level1_representative_subset_problem_ids` in src/dataset.py), never imported; ids it names that
the clone lacks are left out, as KernelBench's `get_representative_subset` leaves them out.
"""

from __future__ import annotations

import ast
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from kernelwright.tools.errors import KernelwrightError

DATASET_FILES = ("src/kernelbench/dataset.py", "src/dataset.py")  # newest layout first
SUBSET_NAME = re.compile(r"^level(\d+)_representative_(?:ids|subset_problem_ids)$", re.IGNORECASE)
SUBSET_FILES = re.compile(r"^level(\d+)_representative_subset$", re.IGNORECASE)
T = TypeVar("T", int, str)
IDS = re.compile(r"^\s*\d+(?:\s*-\s*\d+)?(?:\s*,\s*\d+(?:\s*-\s*\d+)?)*\s*$")


class KbError(KernelwrightError):
    """The clone, or the selection asked of it, cannot be used as given: the message says why."""


@dataclass(frozen=True)
class KbProblem:
    level: int
    id: int
    name: str  # the file's name, as KernelBench's baseline files key it: "1_Square_matrix_....py"
    path: Path

    @property
    def stem(self) -> str:
        return self.name.removesuffix(".py")

    @property
    def slug(self) -> str:
        """A folder name unique over levels: "L1-1_Square_matrix_multiplication_"."""
        return f"L{self.level}-{self.stem}"


@dataclass(frozen=True)
class Clone:
    root: Path  # the clone: it holds KernelBench/ and (usually) src/
    problems_dir: Path  # root/KernelBench
    commit: str = ""  # "" when it cannot be read
    modified: bool = False  # git says its problem files differ from the commit
    subsets: dict[int, list[int]] = field(default_factory=dict)  # level: representative ids
    subsets_from: str = ""  # the file they were read from, relative to root

    def levels(self) -> list[int]:
        found = []
        for d in self.problems_dir.iterdir():
            m = re.fullmatch(r"level(\d+)", d.name)
            if m and d.is_dir():
                found.append(int(m.group(1)))
        return sorted(found)

    def problems(self, level: int) -> list[KbProblem]:
        """The level's problems by id; KbError for two files of one id."""
        folder = self.problems_dir / f"level{level}"
        if not folder.is_dir():
            raise KbError(f"{self.problems_dir}: no level{level} folder (levels: {self.levels()})")
        by_id: dict[int, KbProblem] = {}
        for path in sorted(folder.iterdir()):
            if path.suffix != ".py" or not path.is_file():
                continue
            head = path.name.split("_")[0]
            if not head.isdigit():
                continue
            pid = int(head)
            if pid in by_id:
                raise KbError(
                    f"{folder}: two problems have id {pid} ({by_id[pid].name}, {path.name})"
                )
            by_id[pid] = KbProblem(level=level, id=pid, name=path.name, path=path)
        return [by_id[k] for k in sorted(by_id)]

    def representative(self, level: int) -> list[KbProblem]:
        """The level's representative subset, as the clone defines it."""
        if level not in self.subsets:
            where = self.subsets_from or " or ".join(DATASET_FILES)
            raise KbError(
                f"the clone defines no representative subset for level {level} (read {where}): "
                "use --subset all or --subset IDS"
            )
        wanted = set(self.subsets[level])
        return [p for p in self.problems(level) if p.id in wanted]

    @property
    def described(self) -> str:
        """The clone as a person reads it: its path, commit and whether it is modified."""
        commit = self.commit[:12] if self.commit else "commit unknown"
        return f"{self.root} @ {commit}" + (" (problem files modified)" if self.modified else "")


def open_clone(path: Path) -> Clone:
    """The clone at `path` (its root, or its KernelBench/ folder); KbError if it has no levels."""
    path = path.expanduser().resolve()
    if (path / "KernelBench").is_dir():
        root, problems = path, path / "KernelBench"
    elif any(path.glob("level[0-9]*")):
        root, problems = path.parent, path
    else:
        raise KbError(
            f"{path}: not a KernelBench clone (expected KernelBench/level1/... inside; "
            "git clone https://github.com/ScalingIntelligence/KernelBench)"
        )
    subsets, source = read_subsets(root)
    commit, modified = clone_commit(root)
    clone = Clone(root, problems, commit, modified, subsets, source)
    if not clone.levels():
        raise KbError(f"{problems}: no levelN folders")
    return clone


def read_subsets(root: Path) -> tuple[dict[int, list[int]], str]:
    """The representative ids per level from the clone's dataset module (read, not imported),
    and the file they came from; ({}, "") when it defines none."""
    for rel in DATASET_FILES:
        path = root / rel
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (OSError, SyntaxError, ValueError):
            continue
        found = subsets_in(tree)
        if found:
            return found, rel
    return {}, ""


def subsets_in(tree: ast.Module) -> dict[int, list[int]]:
    """Representative ids by level in a module: lists of ids named LEVELn_REPRESENTATIVE_IDS
    (or levelN_representative_subset_problem_ids), else lists of file names named
    LEVELn_REPRESENTATIVE_SUBSET, else a `{1: [...], ...}` dict inside a function whose name
    says representative."""
    by_ids: dict[int, list[int]] = {}
    by_files: dict[int, list[int]] = {}
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        target = node.targets[0]
        if not isinstance(target, ast.Name):
            continue
        if m := SUBSET_NAME.match(target.id):
            ids = _constants(node.value, int)
            if ids is not None:
                by_ids[int(m.group(1))] = ids
        elif m := SUBSET_FILES.match(target.id):
            names = _constants(node.value, str)
            if names is not None:
                heads = [n.split("_")[0] for n in names]
                by_files[int(m.group(1))] = [int(h) for h in heads if h.isdigit()]
    if by_ids or by_files:
        return by_files | by_ids
    for func in ast.walk(tree):
        if isinstance(func, ast.FunctionDef) and "representative" in func.name:
            for inner in ast.walk(func):
                if isinstance(inner, ast.Dict) and inner.keys:
                    found = _level_dict(inner)
                    if found:
                        return found
    return {}


def _constants(node: ast.expr, kind: type[T]) -> list[T] | None:
    if not isinstance(node, ast.List | ast.Tuple):
        return None
    values: list[T] = []
    for e in node.elts:
        if not (isinstance(e, ast.Constant) and type(e.value) is kind):
            return None
        values.append(e.value)
    return values


def _level_dict(node: ast.Dict) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for key, value in zip(node.keys, node.values, strict=True):
        if not (isinstance(key, ast.Constant) and type(key.value) is int):
            return {}
        ids = _constants(value, int)
        if ids is None:
            return {}
        out[key.value] = ids
    return out


def clone_commit(root: Path) -> tuple[str, bool]:
    """The commit the clone is at and whether its problem files differ from it (git, when the
    clone is a repository's top), or what its .git/ says without git; ("", False) when
    neither knows."""
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--show-toplevel", "HEAD"],
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
        top, _, commit = head.stdout.strip().partition("\n")
        # a folder inside another repository (a download, a test's stand-in) is not a clone
        if head.returncode == 0 and commit and Path(top).resolve() == root.resolve():
            status = subprocess.run(
                ["git", "-C", str(root), "status", "--porcelain", "--", "KernelBench"],
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            return commit.strip(), status.returncode == 0 and bool(status.stdout.strip())
    except (OSError, subprocess.SubprocessError):
        pass
    return commit_from_files(root / ".git"), False


def commit_from_files(git: Path) -> str:
    """HEAD's commit read from a .git folder's files (a loose or packed ref); "" if unknown."""
    try:
        head = (git / "HEAD").read_text().strip()
    except OSError:
        return ""
    if not head.startswith("ref: "):
        return head if re.fullmatch(r"[0-9a-f]{40}", head) else ""
    ref = head.removeprefix("ref: ").strip()
    try:
        return (git / ref).read_text().strip()
    except OSError:
        pass
    try:
        for line in (git / "packed-refs").read_text().splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[1] == ref:
                return parts[0]
    except OSError:
        pass
    return ""


def parse_levels(text: str | None, available: list[int]) -> list[int]:
    """--level: "1", "1,2" ...; None: levels 1 to 3 that the clone has (level 4 only when
    asked for: its problems download models)."""
    if text is None:
        levels = [lv for lv in available if lv <= 3]
        if not levels:
            raise KbError(f"the clone has no level 1, 2 or 3 (levels: {available}): use --level")
        return levels
    try:
        levels = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        raise KbError(f"--level {text!r}: expected level numbers, such as 1 or 1,2") from None
    if not levels:
        raise KbError("--level: no level named")
    missing = [lv for lv in levels if lv not in available]
    if missing:
        raise KbError(f"the clone has no level {missing[0]} (levels: {available})")
    return levels


def parse_ids(text: str) -> list[int]:
    """ "1,3,5-9" -> [1, 3, 5, 6, 7, 8, 9]; KbError for anything else."""
    if not IDS.match(text):
        raise KbError(
            f"--subset {text!r}: expected representative, all, or problem ids such as 1,3,5-9"
        )
    ids: set[int] = set()
    for part in text.split(","):
        lo, _, hi = part.strip().partition("-")
        first, last = int(lo), int(hi or lo)
        if last < first:
            raise KbError(f"--subset: the range {part.strip()} runs backwards")
        ids.update(range(first, last + 1))
    return sorted(ids)


def select(clone: Clone, levels: list[int], subset: str) -> list[KbProblem]:
    """The problems the selection names, level by level, by id; KbError when it names none, or
    names ids a level lacks."""
    subset = subset.strip()
    chosen: list[KbProblem] = []
    if subset.lower() not in ("representative", "all"):
        ids = parse_ids(subset)
        if len(levels) != 1:
            raise KbError("--subset IDS names problems of one level: add --level N")
        (level,) = levels
        by_id = {p.id: p for p in clone.problems(level)}
        missing = [i for i in ids if i not in by_id]
        if missing:
            shown = ", ".join(map(str, missing[:5])) + (" ..." if len(missing) > 5 else "")
            raise KbError(f"level {level} of the clone has no problem {shown}")
        return [by_id[i] for i in ids]
    for level in levels:
        if subset.lower() == "all":
            chosen += clone.problems(level)
        else:
            chosen += clone.representative(level)
    if not chosen:
        raise KbError(f"no problems selected in levels {levels} ({subset})")
    return chosen
