"""The cpp task (name.cpp + name.toml) on the CPU: the signature parser, the task file's checks
against it, the generated wrapper built with g++ and called in a confined worker on several
signatures, outputs read before written (init = "fill:V"), and a reference that throws,
crashes or hangs giving one line."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import numpy as np
import pytest

from kernelwright.tools.cpp import CppTask, SignatureError, load_cpp_task, parse_signature
from kernelwright.tools.cpp_inputs import arg_seed, generate
from kernelwright.tools.cpp_reference import (
    CppReferenceError,
    ReferenceTrial,
    build_key,
    reference_outputs,
    wrapper_source,
)
from kernelwright.tools.errors import TaskError

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")


@pytest.fixture(scope="session")
def cpp_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache of built libraries and outputs for the session: a build is done once."""
    return tmp_path_factory.mktemp("cpp-cache")


def write_task(directory: Path, source: str, toml: str, name: str = "t") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{name}.cpp").write_text(textwrap.dedent(source))
    spec = directory / f"{name}.toml"
    spec.write_text(textwrap.dedent(toml))
    return spec


def inputs_of(task: CppTask, sizes: dict[str, int], seed: int) -> dict[str, np.ndarray]:
    """The inputs the reference's worker makes (no input maker), made here."""
    return {
        a.name: generate(a.dtype, task.shape(a, sizes), arg_seed(seed, i), a.init)
        for i, a in enumerate(task.args)
        if a.role in ("in", "inout")
    }


# --- the signature ---------------------------------------------------------------------------


def test_vectors_pointers_scalars_and_arrays_are_read() -> None:
    source = """
        #include <vector>
        /* gemv(int) in a comment */ // gemv(
        const char* s = "gemv(";
        void gemv(std::vector<double> const& A, const std::vector<double> &x,
                  std::vector<double>& y, std::size_t M, size_t N) { y[0] = A[0] * x[0]; }
    """
    sig = parse_signature(source, "gemv")
    assert sig.returns == "" and sig.scope == ""
    a, x, y, m, n = sig.params
    assert (a.kind, a.elem, a.const, a.writable) == ("vector", "double", True, False)
    assert (x.kind, x.const) == ("vector", True)
    assert (y.kind, y.const, y.ref, y.writable) == ("vector", False, True, True)
    assert (m.kind, m.elem, m.is_array) == ("scalar", "std::size_t", False)
    assert n.elem == "size_t"

    sig = parse_signature(
        "static inline void axpy(int n, float a, const float* __restrict__ x, float *y, "
        "double z[], float* const w) {}",
        "axpy",
    )
    n_, a_, x_, y_, z_, w_ = sig.params
    assert (n_.kind, a_.kind) == ("scalar", "scalar")
    assert (x_.kind, x_.const, x_.writable) == ("pointer", True, False)
    assert (y_.kind, y_.writable) == ("pointer", True)
    assert (z_.kind, z_.elem) == ("pointer", "double")
    assert w_.writable  # a const pointer to data it may write

    sig = parse_signature(
        "#define NO_INLINE __attribute__((noinline))\n"
        "size_t NO_INLINE count(std::array<size_t, 256> &bins, const std::array<int, 4> q,"
        " std::vector<std::complex<double>> const& x, std::vector<bool> &mask, int& out) {}",
        "count",
    )
    bins, q, x, mask, out = sig.params
    assert sig.returns == "size_t"
    assert (bins.kind, bins.extent, bins.writable) == ("array", 256, True)
    assert (q.kind, q.extent, q.writable) == ("array", 4, False)
    assert (x.complex, x.component) == (True, "double")
    assert (mask.elem, mask.writable) == ("bool", True)
    assert (out.kind, out.is_array, out.writable) == ("scalar", True, True)


def test_a_function_in_namespaces_is_called_by_its_qualified_name() -> None:
    sig = parse_signature("namespace a { namespace b { int f(const int& k) { return k; } } }", "f")
    assert sig.scope == "a::b::" and sig.returns == "int"
    assert not sig.params[0].is_array  # const int&: a scalar


@pytest.mark.parametrize(
    ("source", "name", "problem"),
    [
        (
            "struct Point { double x, y; };\ndouble f(std::vector<Point> const& points) {}",
            "f",
            "Point is a struct",
        ),
        ("void f(std::vector<std::string> const& s) {}", "f", "strings are not supported"),
        ("void f(const std::string& s) {}", "f", "strings are not supported"),
        ("template <typename T> T f(std::vector<T> const& x) {}", "f", "is a template"),
        ("std::vector<int> f(int n) {}", "f", "returns std::vector<int>"),
        ("void f(std::map<int, int>& m) {}", "f", "std::map<int, int> is not supported"),
        ("void f(std::vector<std::vector<int>>& m) {}", "f", "nested containers"),
        ("void f(float** x) {}", "f", "pointer to a pointer"),
        ("void f(int) {}", "f", "has no name"),
        ("void f(int x); ", "f", "declared but not defined"),
        ("struct S { void f(int x) {} };", "f", "inside a class"),
        ("void f(int x) {} void f(double x) {}", "f", "defined 2 times"),
        ("void g(int x) {}", "f", "no function named 'f'"),
        ("void f(std::complex<double> z) {}", "f", "complex scalar"),
        ("void f(std::array<int, K>& a) {}", "f", "must be a number literal"),
    ],
)
def test_what_is_not_supported_is_refused_naming_it(source: str, name: str, problem: str) -> None:
    with pytest.raises(SignatureError) as info:
        parse_signature(source, name)
    assert problem in info.value.problem


# --- the task file ---------------------------------------------------------------------------

GEMV = """
    #include <cstddef>
    #include <vector>
    void gemv(const std::vector<double>& A, const std::vector<double>& x,
              std::vector<double>& y, std::size_t M, std::size_t N) {
        for (std::size_t i = 0; i < M; ++i) {
            double s = 0;
            for (std::size_t j = 0; j < N; ++j) s += A[i * N + j] * x[j];
            y[i] = s;
        }
    }
"""
GEMV_TOML = """
    kind = "cpp"
    function = "gemv"
    [sizes]
    bench = { M = 64, N = 128 }
    checks = [ { M = 3, N = 5 } ]
    [[args]]
    name = "A"
    dtype = "float64"
    shape = ["M", "N"]
    role = "in"
    [[args]]
    name = "x"
    dtype = "float64"
    shape = ["N"]
    role = "in"
    [[args]]
    name = "y"
    dtype = "float64"
    shape = ["M"]
    role = "out"
    [[args]]
    name = "M"
    dtype = "uint64"
    role = "scalar"
    value = "M"
    [[args]]
    name = "N"
    dtype = "uint64"
    role = "scalar"
    value = "N"
    [launch]
    block = [256]
    grid = ["ceil_div(M, 256)"]
"""


def test_a_task_loads_with_its_signature(tmp_path: Path) -> None:
    task = load_cpp_task(write_task(tmp_path, GEMV, GEMV_TOML, "gemv"))
    assert task.kind == "cpp" and task.function == "gemv" and task.std == "c++17"
    assert [a.name for a in task.args] == ["A", "x", "y", "M", "N"]
    assert [p.kind for p in task.params] == ["vector", "vector", "vector", "scalar", "scalar"]
    assert task.result is None and task.entry == "gemv"
    assert task.shape(task.args[0], {"M": 3, "N": 5}) == (3, 5)


@pytest.mark.parametrize(
    ("old", "new", "field", "problem"),
    [
        ('name = "x"', 'name = "z"', "args[1] (z).name", "parameter 2 is 'x'"),
        ('role = "out"', 'role = "in"', "args", "nothing to check"),
        (
            'shape = ["N"]\n    role = "in"',
            'shape = ["N"]\n    role = "out"',
            "args[1] (x).role",
            "role out, but 'x' is 'const std::vector<double>& x', const",
        ),
        (
            'dtype = "float64"\n    shape = ["M"]',
            'dtype = "float32"\n    shape = ["M"]',
            "args[2] (y).dtype",
            "float32 does not match 'double' of parameter 'y'",
        ),
        (
            'name = "M"\n    dtype = "uint64"',
            'name = "M"\n    dtype = "int32"',
            "args[3] (M).dtype",
            "int32 does not match 'std::size_t'",
        ),
        (
            'role = "scalar"\n    value = "M"',
            'role = "in"\n    shape = ["1"]',
            "args[3] (M).role",
            "passed by value: scalar",
        ),
        (
            'shape = ["M", "N"]\n    role = "in"',
            'role = "scalar"\n    value = "1"',
            "args[0] (A).role",
            "role scalar, but 'A'",
        ),
        ('function = "gemv"', 'function = "gemm"', "function", "no function named 'gemm'"),
        ('kind = "cpp"', 'kind = "cuda"', "kind", 'expected "cpp"'),
        ('kind = "cpp"', 'kind = "cpp"\nstd = "c++5"', "std", "expected a C++ standard"),
        ('kind = "cpp"', 'kind = "cpp"\nflags = ["-fplugin=evil.so"]', "flags[0]", "not allowed"),
        ('kind = "cpp"', 'kind = "cpp"\nflags = ["-Wl,-rpath,/x"]', "flags[0]", "not allowed"),
        ('kind = "cpp"', 'kind = "cpp"\ncompare = "fuzzy"', "compare", "unknown mode"),
        (
            'role = "out"',
            'role = "out"\n    init = "uniform"',
            "args[2] (y).init",
            "an output's init is the value it starts as",
        ),
        ('role = "out"', 'role = "out"\n    init = "fill:x"', "args[2] (y).init", None),
        (
            'grid = ["ceil_div(M, 256)"]',
            'grid = [1]\n[returns]\nname = "r"',
            "returns",
            "returns nothing",
        ),
    ],
)
def test_a_disagreement_with_the_signature_names_the_field(
    tmp_path: Path, old: str, new: str, field: str | None, problem: str | None
) -> None:
    toml = textwrap.dedent(GEMV_TOML).replace(old.replace("    ", ""), new.replace("    ", ""), 1)
    assert toml != textwrap.dedent(GEMV_TOML)
    spec = write_task(tmp_path, GEMV, toml, "gemv")
    if field is None:
        load_cpp_task(spec)
        return
    with pytest.raises(TaskError) as info:
        load_cpp_task(spec)
    assert info.value.field == field, str(info.value)
    assert problem is None or problem in info.value.problem, str(info.value)
    assert "\n" not in str(info.value)


def test_shapes_must_match_what_the_cpp_type_fixes(tmp_path: Path) -> None:
    source = """
        #include <array>
        #include <complex>
        #include <vector>
        void f(std::vector<std::complex<float>> const& x, std::array<int, 4>& q, float& s) {}
    """
    base = """
        kind = "cpp"
        function = "f"
        [sizes]
        bench = { N = 8 }
        checks = [ { N = 3 } ]
        [[args]]
        name = "x"
        dtype = "float32"
        shape = XSHAPE
        role = "in"
        [[args]]
        name = "q"
        dtype = "int32"
        shape = QSHAPE
        role = "out"
        [[args]]
        name = "s"
        dtype = "float32"
        shape = ["1"]
        role = "inout"
        [launch]
        block = [32]
        grid = [1]
    """
    good = base.replace("XSHAPE", '["N", "2"]').replace("QSHAPE", '["4"]')
    load_cpp_task(write_task(tmp_path / "a", source, good, "f"))
    cases = [
        (
            base.replace("XSHAPE", '["N"]').replace("QSHAPE", '["4"]'),
            "args[0] (x).shape",
            "the last dimension must be 2",
        ),
        (
            base.replace("XSHAPE", '["N", "2"]').replace("QSHAPE", '["N"]'),
            "args[1] (q).shape",
            "holds 4",
        ),
    ]
    for i, (toml, field, problem) in enumerate(cases):
        with pytest.raises(TaskError) as info:
            load_cpp_task(write_task(tmp_path / f"b{i}", source, toml, "f"))
        assert info.value.field == field and problem in info.value.problem


def test_a_struct_parameter_is_refused_naming_the_cpp_file(tmp_path: Path) -> None:
    source = "struct P { double x; };\ndouble f(std::vector<P> const& p) { return 0; }\n"
    toml = GEMV_TOML.replace('function = "gemv"', 'function = "f"')
    with pytest.raises(TaskError) as info:
        load_cpp_task(write_task(tmp_path, source, toml, "f"))
    assert info.value.path.endswith("f.cpp") and info.value.field == "f()"
    assert "parameter 'p'" in info.value.problem and "P is a struct" in info.value.problem


def test_a_quoted_include_is_refused(tmp_path: Path) -> None:
    spec = write_task(tmp_path, '#include "local.h"\n' + GEMV, GEMV_TOML, "gemv")
    with pytest.raises(TaskError, match="only <system> headers"):
        load_cpp_task(spec)


# --- the wrapper, built and run ----------------------------------------------------------------


@needs_gxx
def test_vectors_and_scalars_through_the_wrapper(tmp_path: Path, cpp_cache: Path) -> None:
    task = load_cpp_task(write_task(tmp_path, GEMV, GEMV_TOML, "gemv"))
    assert "static std::vector<double> kw_a0;" in wrapper_source(task)
    sizes = [{"M": 3, "N": 5}, {"M": 17, "N": 33}]
    results = reference_outputs(task, [ReferenceTrial(s, 11) for s in sizes], cpp_cache)
    for s, r in zip(sizes, results, strict=True):
        ins = inputs_of(task, s, 11)
        np.testing.assert_allclose(r.outputs["y"], ins["A"] @ ins["x"], rtol=1e-12)
        assert not r.cached and r.seconds >= 0
    again = reference_outputs(task, [ReferenceTrial(sizes[1], 11)], cpp_cache)
    assert again[0].cached and np.array_equal(again[0].outputs["y"], results[1].outputs["y"])
    other = reference_outputs(task, [ReferenceTrial(sizes[1], 12)], cpp_cache)[0]
    assert not other.cached and not np.array_equal(other.outputs["y"], results[1].outputs["y"])


MIXED = """
    #include <array>
    #include <complex>
    #include <cstddef>
    #include <cstdint>
    #include <vector>
    namespace lib {
    // pointers, std::array, std::complex, std::vector<bool>, a scalar reference and a return
    long long mixed(const float* x, float* y, int n, const std::array<int, 3>& w,
                    std::vector<std::complex<double>>& z, std::vector<bool>& positive,
                    double& total, bool flag) {
        long long count = 0;
        for (int i = 0; i < n; ++i) {
            y[i] = w[0] * x[i] + w[1];
            positive[i] = x[i] > 0;
            count += positive[i];
            total += x[i];
        }
        for (auto& c : z) c = std::conj(c) * 2.0;
        return flag ? count : -count;
    }
    }
"""
MIXED_TOML = """
    kind = "cpp"
    function = "mixed"
    [sizes]
    bench = { N = 1000 }
    checks = [ { N = 7 } ]
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
    [[args]]
    name = "n"
    dtype = "int32"
    role = "scalar"
    value = "N"
    [[args]]
    name = "w"
    dtype = "int32"
    shape = ["3"]
    role = "in"
    init = "randint:-5:5"
    [[args]]
    name = "z"
    dtype = "float64"
    shape = ["N", "2"]
    role = "inout"
    [[args]]
    name = "positive"
    dtype = "uint8"
    shape = ["N"]
    role = "out"
    [[args]]
    name = "total"
    dtype = "float64"
    shape = ["1"]
    role = "inout"
    [[args]]
    name = "flag"
    dtype = "uint8"
    role = "scalar"
    value = "1"
    [returns]
    name = "count"
    init = "fill:0"
    [launch]
    block = [128]
    grid = ["ceil_div(N, 128)"]
"""


@needs_gxx
def test_pointers_arrays_complex_bools_references_and_a_return(
    tmp_path: Path, cpp_cache: Path
) -> None:
    task = load_cpp_task(write_task(tmp_path, MIXED, MIXED_TOML, "mixed"))
    assert task.scope == "lib::" and task.returns == "long long"
    assert task.result is not None and task.result.dtype == "int64"
    sizes = {"N": 7}
    (r,) = reference_outputs(task, [ReferenceTrial(sizes, 5)], cpp_cache)
    ins = inputs_of(task, sizes, 5)
    x, w, z = ins["x"], ins["w"], ins["z"]
    want_y = np.float32(w[0]) * x + np.float32(w[1])
    np.testing.assert_allclose(r.outputs["y"], want_y, rtol=1e-6, atol=1e-6)
    assert r.outputs["positive"].tolist() == (x > 0).astype(np.uint8).tolist()
    zc = z[:, 0] + 1j * z[:, 1]
    want = np.conj(zc) * 2
    np.testing.assert_allclose(r.outputs["z"][:, 0], want.real)
    np.testing.assert_allclose(r.outputs["z"][:, 1], want.imag)
    np.testing.assert_allclose(r.outputs["total"][0], ins["total"][0] + x.astype(np.float64).sum())
    assert r.outputs["count"].tolist() == [int((x > 0).sum())]


HISTOGRAM = """
    #include <vector>
    void counts(const std::vector<int>& v, std::vector<int>& bins) {
        for (int x : v) bins[x] += 1;
    }
"""
HISTOGRAM_TOML = """
    kind = "cpp"
    function = "counts"
    compare = "exact"
    [sizes]
    bench = { N = 1000 }
    checks = [ { N = 50 } ]
    [[args]]
    name = "v"
    dtype = "int32"
    shape = ["N"]
    role = "in"
    init = "randint:0:8"
    [[args]]
    name = "bins"
    dtype = "int32"
    shape = ["8"]
    role = "out"
    INIT
    [launch]
    block = [128]
    grid = ["ceil_div(N, 128)"]
"""


@needs_gxx
def test_an_output_read_before_written_needs_its_declared_start(
    tmp_path: Path, cpp_cache: Path
) -> None:
    with_fill = load_cpp_task(
        write_task(tmp_path / "a", HISTOGRAM, HISTOGRAM_TOML.replace("INIT", 'init = "fill:0"'))
    )
    (r,) = reference_outputs(with_fill, [ReferenceTrial({"N": 50}, 3)], cpp_cache)
    v = inputs_of(with_fill, {"N": 50}, 3)["v"]
    assert r.outputs["bins"].tolist() == np.bincount(v, minlength=8).tolist()
    with_ten = load_cpp_task(
        write_task(tmp_path / "b", HISTOGRAM, HISTOGRAM_TOML.replace("INIT", 'init = "fill:10"'))
    )
    (r10,) = reference_outputs(with_ten, [ReferenceTrial({"N": 50}, 3)], cpp_cache)
    assert (r10.outputs["bins"] - 10).tolist() == r.outputs["bins"].tolist()
    without = load_cpp_task(
        write_task(tmp_path / "c", HISTOGRAM, HISTOGRAM_TOML.replace("INIT", ""))
    )
    with pytest.raises(TaskError) as info:
        reference_outputs(without, [ReferenceTrial({"N": 50}, 3)], cpp_cache)
    assert info.value.field == "args[1] (bins).init"
    assert "counts() reads bins before writing it" in info.value.problem


@needs_gxx
def test_an_output_left_partly_unwritten_is_named(tmp_path: Path, cpp_cache: Path) -> None:
    source = """
        void copy_tail(const float* x, float* y, int n) { for (int i = 1; i < n; ++i) y[i] = x[i]; }
    """
    toml = """
        kind = "cpp"
        function = "copy_tail"
        [sizes]
        bench = { N = 100 }
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
        [[args]]
        name = "n"
        dtype = "int32"
        role = "scalar"
        value = "N"
        [launch]
        block = [128]
        grid = ["ceil_div(N, 128)"]
    """
    task = load_cpp_task(write_task(tmp_path, source, toml))
    with pytest.raises(TaskError) as info:
        reference_outputs(task, [ReferenceTrial({"N": 10}, 1)], cpp_cache)
    assert info.value.field == "args[1] (y).init"
    assert "leaves 1 element of y unwritten" in info.value.problem


BAD = """
    #include <cstdio>
    #include <stdexcept>
    #include <vector>
    void bad(const std::vector<float>& x, std::vector<float>& y, int mode) {
        std::printf("bad() was called\\n");
        if (mode == 0) { volatile int* p = nullptr; *p = 1; }
        if (mode == 1) { volatile long i = 0; while (true) i = i + 1; }
        if (mode == 2) throw std::out_of_range("index 7 is past the end");
        if (mode == 3) y.resize(3);
        for (std::size_t i = 0; i < y.size(); ++i) y[i] = x[i];
    }
"""
BAD_TOML = """
    kind = "cpp"
    function = "bad"
    [sizes]
    bench = { N = 100 }
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
    [[args]]
    name = "mode"
    dtype = "int32"
    role = "scalar"
    value = "MODE"
    [launch]
    block = [32]
    grid = [1]
"""


@needs_gxx
@pytest.mark.parametrize(
    ("mode", "error", "words"),
    [
        (0, CppReferenceError, "failed: worker died running bad() at N=10 (signal SIGSEGV)"),
        (1, CppReferenceError, "ran past its time: killed after 3 s"),
        (2, CppReferenceError, "bad() threw an exception: index 7 is past the end"),
        (3, CppReferenceError, "bad() resized y: an output's size must not change"),
        (4, None, ""),
    ],
)
def test_a_reference_that_crashes_hangs_or_throws_is_one_line(
    tmp_path: Path, cpp_cache: Path, mode: int, error: type[Exception] | None, words: str
) -> None:
    task = load_cpp_task(write_task(tmp_path, BAD, BAD_TOML.replace("MODE", str(mode)), "bad"))
    trial = ReferenceTrial({"N": 10}, 1)
    timeout = 3 if mode == 1 else 60  # the hang is killed at its deadline
    if error is None:
        (r,) = reference_outputs(task, [trial], cpp_cache, timeout_s=timeout)
        assert r.outputs["y"].tolist() == inputs_of(task, {"N": 10}, 1)["x"].tolist()
        return
    with pytest.raises(error) as info:
        reference_outputs(task, [trial], cpp_cache, timeout_s=timeout)
    message = str(info.value)
    assert words in message and "\n" not in message, message
    assert message.startswith("bad: the C++ reference ")


@needs_gxx
def test_a_compile_error_names_the_cpp_file_and_line(tmp_path: Path, cpp_cache: Path) -> None:
    source = GEMV.replace("double s = 0;", "double s = undeclared;")
    task = load_cpp_task(write_task(tmp_path, source, GEMV_TOML, "gemv"))
    with pytest.raises(TaskError) as info:
        reference_outputs(task, [ReferenceTrial({"M": 3, "N": 5}, 1)], cpp_cache)
    assert "gemv.cpp:" in info.value.problem and "undeclared" in info.value.problem
    assert "\n" not in str(info.value)


def test_the_library_is_addressed_by_what_decides_the_build(tmp_path: Path) -> None:
    if shutil.which("g++") is None:
        pytest.skip("needs g++")
    a = load_cpp_task(write_task(tmp_path / "a", GEMV, GEMV_TOML, "gemv"))
    b = load_cpp_task(write_task(tmp_path / "b", GEMV, GEMV_TOML, "gemv"))
    c = load_cpp_task(
        write_task(
            tmp_path / "c",
            GEMV,
            GEMV_TOML.replace('kind = "cpp"', 'kind = "cpp"\nflags = ["-ffast-math"]'),
            "gemv",
        )
    )
    d = load_cpp_task(write_task(tmp_path / "d", GEMV + "\n// changed\n", GEMV_TOML, "gemv"))
    assert build_key(a) == build_key(b)
    assert len({build_key(a), build_key(c), build_key(d)}) == 3
