"""Reading a KernelBench clone where it lies (evals/kb_problems.py): its levels and problems, its
representative subset from its own source (in each layout KernelBench has had), the commit, and
the selection a command line asks for."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kernelwright.evals.kb_problems import (
    KbError,
    commit_from_files,
    open_clone,
    parse_ids,
    parse_levels,
    read_subsets,
    select,
)
from tests.conftest import FIXTURES

FAKE = FIXTURES / "kb_fake"
SHA = "0123456789abcdef0123456789abcdef01234567"


def test_levels_problems_and_the_representative_subset() -> None:
    clone = open_clone(FAKE)
    assert clone.root == FAKE.resolve() and clone.levels() == [1, 2]
    level1 = clone.problems(1)
    assert [(p.id, p.name) for p in level1] == [
        (1, "1_Square_matrix_multiplication_.py"),
        (2, "2_ReLU.py"),
        (3, "3_Softmax.py"),
        (4, "4_Huge_sum.py"),
    ]  # helpers.py has no id: not a problem
    assert level1[0].slug == "L1-1_Square_matrix_multiplication_"
    assert clone.subsets_from == "src/kernelbench/dataset.py"
    assert [p.id for p in clone.representative(1)] == [1, 3, 4]  # 99 is not in the clone
    assert [p.id for p in clone.representative(2)] == [2]
    # inside another repository (this one), the fake is not a clone of its own: no commit
    assert clone.commit == "" and "commit unknown" in clone.described


def test_the_kernelbench_folder_itself_is_accepted(tmp_path: Path) -> None:
    assert open_clone(FAKE / "KernelBench").root == FAKE.resolve()
    with pytest.raises(KbError, match="not a KernelBench clone"):
        open_clone(tmp_path)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (  # the layout since 2026-01: LEVELn_REPRESENTATIVE_IDS
            "LEVEL1_REPRESENTATIVE_IDS = [1, 3]\nLEVEL3_REPRESENTATIVE_IDS = [5]\n",
            {1: [1, 3], 3: [5]},
        ),
        (  # before: src/dataset.py's lower-case names
            "level1_representative_subset_problem_ids = [2, 6]\n",
            {1: [2, 6]},
        ),
        (  # only the file names: their ids
            'LEVEL2_REPRESENTATIVE_SUBSET = ["1_Conv.py", "8_Gemm.py"]\n',
            {2: [1, 8]},
        ),
        (  # only the method's own table
            "class D:\n    def get_representative_subset(self):\n"
            "        rep_ids = {1: [1, 3], 2: [4]}\n        return rep_ids\n",
            {1: [1, 3], 2: [4]},
        ),
        ("X = [1, 2]\n", {}),
    ],
    ids=["ids", "old-names", "file-names", "method", "none"],
)
def test_representative_subsets_in_each_layout(
    tmp_path: Path, source: str, expected: dict[int, list[int]]
) -> None:
    rel = "src/dataset.py" if "problem_ids" in source else "src/kernelbench/dataset.py"
    (tmp_path / rel).parent.mkdir(parents=True)
    (tmp_path / rel).write_text(source)
    subsets, where = read_subsets(tmp_path)
    assert subsets == expected
    assert where == (rel if expected else "")


def test_a_clone_without_a_subset_says_what_to_use(tmp_path: Path) -> None:
    shutil.copytree(FAKE / "KernelBench", tmp_path / "KernelBench")
    clone = open_clone(tmp_path)
    with pytest.raises(KbError, match=r"no representative subset for level 1.*--subset all"):
        select(clone, [1], "representative")
    assert [p.id for p in select(clone, [1, 2], "all")] == [1, 2, 3, 4, 1, 2]


def test_two_files_of_one_id_are_refused(tmp_path: Path) -> None:
    shutil.copytree(FAKE / "KernelBench", tmp_path / "KernelBench")
    (tmp_path / "KernelBench" / "level2" / "2_Other.py").write_text("x = 1\n")
    with pytest.raises(KbError, match="two problems have id 2"):
        open_clone(tmp_path).problems(2)


def test_levels() -> None:
    assert parse_levels(None, [1, 2, 3, 4]) == [1, 2, 3]  # level 4 only when asked for
    assert parse_levels("2,1", [1, 2]) == [1, 2]
    assert parse_levels("4", [1, 2, 3, 4]) == [4]
    with pytest.raises(KbError, match="has no level 3"):
        parse_levels("3", [1, 2])
    with pytest.raises(KbError, match="expected level numbers"):
        parse_levels("one", [1])
    with pytest.raises(KbError, match="no level 1, 2 or 3"):
        parse_levels(None, [4])


def test_ids_and_selection() -> None:
    assert parse_ids("1,3, 5-7") == [1, 3, 5, 6, 7]
    assert parse_ids("2,2,1") == [1, 2]
    for bad, why in (("7-5", "backwards"), ("a", "expected representative"), ("", "expected")):
        with pytest.raises(KbError, match=why):
            parse_ids(bad)
    clone = open_clone(FAKE)
    assert [p.name for p in select(clone, [1], "3,1")] == ["1_Square_matrix_multiplication_.py",
                                                           "3_Softmax.py"]  # fmt: skip
    assert [p.slug for p in select(clone, [1, 2], "representative")] == [
        "L1-1_Square_matrix_multiplication_",
        "L1-3_Softmax",
        "L1-4_Huge_sum",
        "L2-2_Gemm_Scale",
    ]
    with pytest.raises(KbError, match="one level: add --level N"):
        select(clone, [1, 2], "1")
    with pytest.raises(KbError, match="has no problem 9"):
        select(clone, [2], "1,9")


def test_commit_from_git_files(tmp_path: Path) -> None:
    git = tmp_path / ".git"
    assert commit_from_files(git) == ""
    (git / "refs" / "heads").mkdir(parents=True)
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    (git / "packed-refs").write_text(f"# pack-refs\n{SHA} refs/heads/main\n")
    assert commit_from_files(git) == SHA  # packed
    (git / "refs" / "heads" / "main").write_text(SHA.replace("0", "f") + "\n")
    assert commit_from_files(git) == SHA.replace("0", "f")  # loose wins
    (git / "HEAD").write_text(SHA + "\n")
    assert commit_from_files(git) == SHA  # detached
