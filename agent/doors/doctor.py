"""`kernelwright doctor`: one line per thing the main job needs, with the fix when it is missing."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass

import httpx

from kernelwright.agent.ollama_tags import NotOllama, pulled_models, tagged
from kernelwright.agent.settings import Settings
from kernelwright.tools import nvml
from kernelwright.tools.compile import compile_nvrtc
from kernelwright.tools.errors import NoGpuError


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""
    required: bool = True  # the main job (optimize) cannot run without it


_CUPY_PROBE = r"""
import json, cupy
x = cupy.arange(1024, dtype=cupy.float32)
k = cupy.RawKernel('extern "C" __global__ void twice(float* x){ x[threadIdx.x] *= 2.0f; }', 'twice')
k((1,), (1024,), (x,))
ok = bool((x.get()[:3] == [0, 2, 4]).all())
print(json.dumps({"cupy": cupy.__version__, "ok": ok, "cc": cupy.cuda.Device().compute_capability}))
"""


def check_gpu() -> Check:
    try:
        info = nvml.device_info()
    except NoGpuError as exc:
        return Check(
            "GPU", False, str(exc), "install an NVIDIA GPU driver; kernelwright needs a CUDA GPU"
        )
    return Check(
        "GPU",
        True,
        f"{info.name} ({info.arch}), driver {info.driver_version}, "
        f"{info.memory_total_bytes / (1 << 30):.0f} GiB",
    )


def check_cupy(gpu_ok: bool) -> Check:
    if not gpu_ok:
        return Check("CuPy", False, "skipped: no GPU", "see the GPU line")
    try:
        proc = subprocess.run(
            [sys.executable, "-c", _CUPY_PROBE], capture_output=True, text=True, timeout=120
        )
        result = json.loads(proc.stdout.strip().splitlines()[-1])
    except (subprocess.TimeoutExpired, ValueError, IndexError):
        last = (
            (proc.stderr.strip().splitlines() or ["no output"])[-1]
            if "proc" in locals()
            else "timed out"
        )
        return Check(
            "CuPy",
            False,
            f"cannot run a kernel: {last}",
            "pip install cupy-cuda13x (and the CUDA 13 driver)",
        )
    if not result["ok"]:
        return Check("CuPy", False, "a test kernel gave a wrong answer", "reinstall cupy-cuda13x")
    return Check("CuPy", True, f"CuPy {result['cupy']} ran a kernel on sm_{result['cc']}")


def check_nvrtc() -> Check:
    try:
        res, _ = compile_nvrtc(
            'extern "C" __global__ void k(float* x){ x[0] = 1.0f; }', "k", "sm_80"
        )
    except Exception as exc:  # library missing: CuPy raises on first use
        return Check(
            "NVRTC",
            False,
            f"not usable: {str(exc).splitlines()[0]}",
            "pip install 'kernelwright[nvrtc]' (or install the CUDA 13 toolkit)",
        )
    if not res.ok:
        return Check(
            "NVRTC",
            False,
            f"a trivial kernel failed: {res.first_error}",
            "reinstall the CUDA toolkit",
        )
    return Check("NVRTC", True, f"compiles in {res.duration_ms:.0f} ms")


def check_nvcc() -> Check:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return Check(
            "nvcc",
            False,
            "not found (optional: the second compile backend)",
            "install the CUDA toolkit",
            required=False,
        )
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
    release = next(
        (ln.split("release")[-1].strip() for ln in out.splitlines() if "release" in ln), "?"
    )
    return Check("nvcc", True, f"{nvcc} (release {release})", required=False)


def check_ncu(gpu_ok: bool) -> Check:
    ncu = shutil.which("ncu")
    if ncu is None:
        return Check(
            "ncu",
            False,
            "Nsight Compute not found: runs go on with timing alone",
            "install Nsight Compute for bottleneck labels",
            required=False,
        )
    if not gpu_ok:
        return Check("ncu", False, f"{ncu} found; counters not tested (no GPU)", required=False)
    from kernelwright.tools.profile import profile
    from kernelwright.tools.spec import ArgSpec, CudaCandidate, CudaTask, LaunchSpec

    src = (
        'extern "C" __global__ void kw_probe(float* x, int n) {'
        " int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] += 1.0f; }"
    )
    task = CudaTask(
        name="probe",
        path="probe.toml",
        source_path="probe.cu",
        source=src,
        entry="kw_probe",
        bench={"N": 1 << 20},
        checks=({"N": 1000},),
        args=(
            ArgSpec(name="x", dtype="float32", role="inout", shape=("N",)),
            ArgSpec(name="n", dtype="int32", role="scalar", value="N"),
        ),
        launch=LaunchSpec(block=("256",), grid=("ceil_div(N, 256)",)),
    )
    result = profile(task, CudaCandidate(path="probe.cu", source=src), timeout_s=120)
    if not result.available:
        fix = (
            "see https://developer.nvidia.com/ERR_NVGPUCTRPERM to allow counters"
            if "ERR_NVGPUCTRPERM" in result.reason
            else "check the Nsight Compute install"
        )
        return Check(
            "ncu", False, result.reason, fix + "; runs go on with timing alone", required=False
        )
    return Check(
        "ncu",
        True,
        f"counters readable ({result.kernel_name}: {result.duration_ms:.4f} ms)",
        required=False,
    )


def check_ollama(settings: Settings) -> list[Check]:
    base = settings.ollama_base_url.rstrip("/")
    try:
        models = pulled_models(base, 3.0)
    except (httpx.InvalidURL, httpx.UnsupportedProtocol) as exc:
        return [
            Check(
                "Ollama",
                False,
                f"{base} is not a URL kernelwright can use ({exc})",
                "set ollama_base_url to http://HOST:PORT (default http://127.0.0.1:11434)",
            ),
            Check("model", False, f"{settings.model}: unknown (no Ollama URL)"),
        ]
    except NotOllama as exc:
        return [
            Check(
                "Ollama",
                False,
                f"{base} answered, but not as Ollama does ({exc})",
                "point ollama_base_url at an Ollama server (ollama serve)",
            ),
            Check("model", False, f"{settings.model}: unknown (no Ollama at that URL)"),
        ]
    except (httpx.HTTPError, ValueError) as exc:
        return [
            Check(
                "Ollama",
                False,
                f"not reachable at {base} ({type(exc).__name__})",
                "start it: ollama serve",
            ),
            Check(
                "model",
                False,
                f"{settings.model}: unknown (Ollama down)",
                f"ollama pull {settings.model}",
            ),
        ]
    have = tagged(settings.model) in models
    listed = (
        ", ".join(models[:6]) + (" ..." if len(models) > 6 else "") if models else "none pulled"
    )
    return [
        Check("Ollama", True, f"{base}: {listed}"),
        Check(
            "model",
            have,
            f"{settings.model} " + ("pulled" if have else "not pulled"),
            "" if have else f"ollama pull {settings.model}",
        ),
    ]


def check_memory_dir(settings: Settings) -> Check:
    path = settings.data_dir
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".write-test"
        probe.write_text("ok")
        probe.unlink()
    except OSError as exc:
        return Check(
            "memory dir",
            False,
            f"{path}: {exc.strerror}",
            "set KERNELWRIGHT_DATA_DIR to a writable directory",
        )
    return Check("memory dir", True, str(path))


def run_checks(settings: Settings) -> list[Check]:
    gpu = check_gpu()
    return [
        gpu,
        check_cupy(gpu.ok),
        check_nvrtc(),
        check_nvcc(),
        check_ncu(gpu.ok),
        *check_ollama(settings),
        check_memory_dir(settings),
    ]


def as_json(checks: list[Check]) -> str:
    return json.dumps(
        {"ok": all(c.ok for c in checks if c.required), "checks": [asdict(c) for c in checks]},
        indent=2,
    )
