#!/usr/bin/env bash
# The GPU tier on a lent GPU machine (../shared/device/README.md), in parts that each fit one
# 10-minute call. Build the wheels here first (bash ../shared/device/wheelhouse.sh, then
# `pip download --no-deps --only-binary=:all: --python-version 3.12 -d .whl pexpect ptyprocess`
# for the chat tests; the doors' GPU test also needs cryptography, about 4 MB more), carry
# ".whl" (the call carries 64 MiB in all), and run on the machine:
#   bash .ci/device.sh tests [FILES]    # tests/gpu (or these files), but the suite's own test
#   bash .ci/device.sh suite kb-a       # the suite's KernelBench cases kb_a* to kb_l*
#   bash .ci/device.sh suite kb-b       # kb_m* to kb_z*
#   bash .ci/device.sh suite rest       # every other case
#   bash .ci/device.sh suite third-1    # a whole run in three calls of under 10 minutes each:
#   bash .ci/device.sh suite third-2    #   third-1: kb-a, input, output, harness (~540 s);
#   bash .ci/device.sh suite third-3    #   third-2: kb-b, controls, memory (~470 s); third-3:
#                                       #   precision, timing (~360 s) (H100, 125 cases)
#   bash .ci/device.sh suite 'GLOB'     # the cases --only GLOB picks, e.g. '*/kb_other*'
#   bash .ci/device.sh run CMD [ARGS]   # any command, with kernelwright installed as above
# Logs, one JSON line a case, go under $OUT (or ./device-out). Wheels are installed with
# their bytecode compiled, as a user's pip install has them: timings are then fair.
set -uo pipefail
cd "$(dirname "$0")/.."
case "${1:-} ${2:-}" in
  tests*|"suite "?*|"run "?*) ;;
  *) echo "usage: bash .ci/device.sh tests [FILES] | suite kb-a|kb-b|rest|GLOB | run CMD" >&2; exit 2 ;;
esac
out=${OUT:-device-out}; mkdir -p "$out"
# the wheels, installed once a machine (a warm machine keeps them between calls)
site=$HOME/.kw-site-$(du -b .whl/* | md5sum | cut -c1-12)
if [ ! -f "$site/.done" ]; then
  rm -rf "$site"; mkdir -p "$site"
  python3 -m pip install -q --no-index --no-deps --target "$site" .whl/*.whl || exit 1
  python3 -m compileall -q -j 8 "$site" >/dev/null 2>&1
  touch "$site/.done"
fi
export PYTHONPATH="$site"
# The lent machine's PyTorch (and what it imports: sympy, NumPy, CuPy) came without bytecode,
# and its Python writes none, so every process compiled their sources afresh: 3.1 to 5.0 s of
# `import torch` and 3.9 to 6.3 s of the first meta-device forward in each cold worker (H100,
# eighteenth session, .probe/start.py), and the same in KernelBench's harness beside it. A
# user's pip install compiles them once; so does this, once a machine, where it may write,
# within 150 s a call (what it compiled stays; the next call goes on from there).
pyc=$HOME/.kw-bytecode-done
if [ ! -f "$pyc" ]; then
  mapfile -t dirs < <(python3 - <<'PY' 2>/dev/null
import importlib.util, os
for mod in ("torch", "sympy", "mpmath", "numpy", "cupy", "cupy_backends", "networkx", "jinja2", "triton"):
    spec = importlib.util.find_spec(mod)
    if spec and spec.origin and os.access(os.path.dirname(spec.origin), os.W_OK):
        print(os.path.dirname(spec.origin))
PY
)
  t=$(date +%s)
  code=0
  if [ ${#dirs[@]} -gt 0 ]; then
    timeout 150 python3 -m compileall -q -j 0 "${dirs[@]}" >/dev/null 2>&1 || code=$?
  fi
  # done unless cut short (a few of torch's files are for other Pythons and never compile)
  if [ "$code" -ne 124 ]; then touch "$pyc"; fi
  echo "bytecode of the machine's torch and its kin: $(( $(date +%s) - t )) s" >&2
fi
python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . >/dev/null || exit 1
python3 -m compileall -q -j 8 agent tools memory evals prompts >/dev/null 2>&1
export PATH="$HOME/.local/bin:$PATH"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
case "${1:-}" in
  run)
    shift
    "$@" ;;
  tests)
    shift
    # unbuffered, and each failure's report written as it happens (tests/conftest.py): a call
    # its time limit cuts short keeps what ran and why a test failed
    PYTHONUNBUFFERED=1 KW_FAILURES="$out/failures.log" \
      python3 -m pytest -q -m gpu "${@:-tests/gpu}" --ignore tests/gpu/test_adversarial_gpu.py \
      -p no:cacheprovider 2>&1 | tee "$out/tests.log" | tail -15 ;;
  suite)
    case "${2:-}" in
      third-1|third-2|third-3)  # each family's own files apart from the KernelBench cases
        case "$2" in
          third-1) parts=(kb-a 'input/[!k]*' 'output/[!k]*' 'harness/[!k]*') ;;
          third-2) parts=(kb-b 'controls/[!k]*' 'memory/[!k]*') ;;
          third-3) parts=('precision/[!k]*' 'timing/[!k]*') ;;
        esac
        code=0
        for part in "${parts[@]}"; do bash "$0" suite "$part" || code=$?; done
        exit $code ;;
    esac
    case "${2:-}" in
      kb-a) only='*/kb_[a-l]*' ;;
      kb-b) only='*/kb_[m-z]*' ;;
      rest) only='*/[!k]*' ;;
      *) only=$2 ;;
    esac
    part=$(printf '%s' "$2" | tr -c 'A-Za-z0-9_-' '_')
    kernelwright eval adversarial --only "$only" --log "$out/cases-$part.jsonl" > "$out/table-$part.txt" 2>&1
    code=$?
    python3 - "$out/cases-$part.jsonl" <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
bad = [r for r in rows if not r["ok"]]
print(f"{len(rows) - len(bad)} of {len(rows)} as expected, {sum(r['wall_s'] for r in rows):.0f} s")
for r in rows:
    if r["family"] == "controls" or not r["ok"]:
        sp = r["speedup"]
        print(f"  {'ok ' if r['ok'] else 'BAD'} {r['case']:45s} {r['got']:11s} "
              f"{'-' if sp is None else f'{sp:.3f}x'} {r['problem'][:120]}")
PY
    exit $code ;;
esac
