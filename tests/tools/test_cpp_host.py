"""best_host.cu on the CPU: which arrays it copies each way, how it finds the sizes from the
function's own parameters, its expressions in C++ (evaluated by g++ against expr.py's), and the
file for every example compiling with `nvcc -c` (its end-to-end check needs a GPU:
tests/gpu/test_cpp_gpu.py)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from kernelwright.agent.best_host import best_host
from kernelwright.tools import expr
from kernelwright.tools.cpp import CppTask
from kernelwright.tools.cpp_host import copies, cxx, sizes_from_params
from kernelwright.tools.errors import TaskError
from kernelwright.tools.task import load_candidate, load_task
from tests.conftest import EXAMPLES
from tests.tools.test_cpp import needs_gxx, write_task
from tests.tools.test_cpp_examples import NAMES, example

CPP = EXAMPLES / "cpp"


def test_what_goes_to_the_device_and_what_comes_back() -> None:
    moves = {a.name: (h2d, d2h) for a, h2d, d2h in copies(example("histogram").args)}
    assert moves == {"pixels": (True, False), "counts": (True, True)}  # counts start at zero
    moves = {a.name: (h2d, d2h) for a, h2d, d2h in copies(example("axpy").args)}
    assert moves == {"x": (True, False), "y": (True, True)}  # scalars travel by value
    moves = {a.name: (h2d, d2h) for a, h2d, d2h in copies(example("gemv").args)}
    assert moves == {"A": (True, False), "x": (True, False), "y": (False, True)}


def test_sizes_come_from_scalars_and_from_containers() -> None:
    assert sizes_from_params(example("axpy")) == {"N": "static_cast<double>(n)"}
    assert sizes_from_params(example("jacobi2d")) == {
        "H": "static_cast<double>(rows)",
        "W": "static_cast<double>(cols)",
    }
    assert sizes_from_params(example("histogram"))["N"].startswith(
        "(static_cast<double>(pixels.size())"
    )


def test_a_size_no_parameter_says_is_one_line(tmp_path: Path) -> None:
    spec = write_task(
        tmp_path,
        "void scale(const float* x, float* y) { y[0] = x[0]; }\n",
        """
        kind = "cpp"
        function = "scale"
        [sizes]
        bench = { N = 1024 }
        checks = [ { N = 10 } ]
        [[args]]
        name = "x"
        dtype = "float32"
        shape = ["N"]
        role = "in"
        [[args]]
        name = "y"
        dtype = "float32"
        shape = ["N"]
        role = "out"
        [launch]
        block = [256]
        grid = ["ceil_div(N, 256)"]
        """,
        name="scale",
    )
    task = load_task(spec)
    assert isinstance(task, CppTask)
    with pytest.raises(TaskError) as err:
        best_host(task, "")
    assert "scale.cpp: scale(): best_host.cu cannot tell N from the parameters" in str(err.value)


EXPRESSIONS = [
    "ceil_div(N, 256)",
    "ceil_div(M * N, 1024) + 1",
    "min(ceil_div(N, 256), 1056)",
    "max(1, N // 3)",
    "N % 7 + 2 ** 5",
    "(M + N) * 4 - 1",
]


@needs_gxx
def test_expressions_in_cpp_give_what_expr_gives(tmp_path: Path) -> None:
    names = {"M": "M", "N": "N"}
    body = "\n".join(
        f'    std::printf("%lld\\n", static_cast<long long>(std::llround({cxx(e, names)})));'
        for e in EXPRESSIONS
    )
    program = tmp_path / "e.cpp"
    program.write_text(
        "#include <cmath>\n#include <cstdio>\nint main() {\n"
        "    const double M = 7.0, N = 100003.0;\n" + body + "\n}\n"
    )
    subprocess.run(["g++", "-O1", "-o", str(tmp_path / "e"), str(program)], check=True)
    got = subprocess.run([str(tmp_path / "e")], capture_output=True, text=True, check=True)
    want = [expr.evaluate_int(e, {"M": 7, "N": 100003}) for e in EXPRESSIONS]
    assert [int(v) for v in got.stdout.split()] == want


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
@pytest.mark.parametrize("name", NAMES)
def test_best_host_compiles_for_every_example(name: str, tmp_path: Path) -> None:
    task = example(name)
    for which in ("port", "faster"):
        kernel = load_candidate(task, CPP / name / "candidates" / f"{which}.cu")
        text = best_host(task, kernel.source, kernel.launch)  # type: ignore[union-attr]
        assert text.startswith("// kernelwright: drop-in host function for ")
        params = ", ".join(p.decl for p in task.params)
        assert f"{task.returns or 'void'} {task.function}({params})" in text
        path = tmp_path / f"{which}.cu"
        path.write_text(text)
        built = subprocess.run(
            ["nvcc", "-c", "-std=c++17", "-arch=sm_90", "-o", str(tmp_path / "o.o"), str(path)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert built.returncode == 0, built.stderr[-2000:]
