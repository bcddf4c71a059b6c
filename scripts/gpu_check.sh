#!/usr/bin/env bash
# The one prepared check of the CuPy GPU executor on a GPU machine (GPU-19).
#
#   OUT=/some/dir scripts/gpu_check.sh        # from the repository root
#
# Steps, each logged under $OUT and summarized in $OUT/summary.txt (the script never stops
# early; every step has its own timeout so a hang costs only that step):
#   0. nvidia-smi, python and CuPy versions
#   1. install the package with the `test` and `gpu` extras into .venv (reused if present;
#      WHEELHOUSE=dir installs offline from wheels fetched beforehand with
#      `pip download 'cupy-cuda12x>=13' -d dir` on a connected machine)
#   2. the GPU unit tests (tests/executors/test_gpu_*.py)
#   3. the GPU benchmarks (benchmarks/bench_gpu.py; ratios in bench.json)
#   4. the conformance suite against reference_executors.gpu:CupyExecutor, -n 4
#      (JSON + HTML report in conformance-report.*)
# Timeouts (seconds): T_INSTALL=180 T_UNIT=150 T_BENCH=120 T_CONF=300.
set -u
# always the venv's interpreter (`python -m pytest`): a system pytest would miss the venv
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/gpu-check-out}"
mkdir -p "$OUT"
SUMMARY="$OUT/summary.txt"
: > "$SUMMARY"
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$SUMMARY"; }
last() { tail -n "${2:-1}" "$1" 2>/dev/null | tr '\n' ' '; }

log "host: $(hostname) $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1 || log "nvidia-smi failed (see nvidia-smi.txt)"

# 1. environment
PY="${PYTHON:-python3}"
# --system-site-packages: a machine without network may still have CuPy/pytest installed
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv --system-site-packages .venv > "$OUT/venv.log" 2>&1
fi
# shellcheck disable=SC1091
. .venv/bin/activate
PIP_ARGS=()
if [ -n "${WHEELHOUSE:-}" ]; then PIP_ARGS=(--no-index --find-links "$WHEELHOUSE"); fi
timeout "${T_INSTALL:-180}" pip install "${PIP_ARGS[@]}" -e '.[test,gpu]' > "$OUT/install.log" 2>&1
rc=$?
if [ $rc -ne 0 ]; then  # offline: at least register the package (its pytest plugin) as is
  pip install --no-build-isolation --no-deps --no-index -e . >> "$OUT/install.log" 2>&1
  log "install of the extras failed (rc=$rc); offline editable install rc=$?"
fi
log "install: $(last "$OUT/install.log")"
python - > "$OUT/versions.txt" 2>&1 <<'PY'
import sys
print("python", sys.version.split()[0])
try:
    import cupy
    print("cupy", cupy.__version__, "devices", cupy.cuda.runtime.getDeviceCount(),
          "cuda runtime", cupy.cuda.runtime.runtimeGetVersion())
except Exception as e:  # reported, not fatal: the steps below say what they skip
    print("cupy unavailable:", e)
from reference_executors.gpu import CupyExecutor
try:
    print("executor", CupyExecutor(), "devices", CupyExecutor().devices)
except Exception as e:
    print("executor unavailable:", e)
PY
log "versions: $(last "$OUT/versions.txt" 3)"

# 2. GPU unit tests (skips say why)
timeout "${T_UNIT:-150}" python -m pytest tests/executors/test_gpu_*.py \
    -p no:xdist -q -rs > "$OUT/unit.log" 2>&1
log "unit tests rc=$? $(last "$OUT/unit.log")"

# 3. GPU benchmarks
GPU_BENCH_JSON="$OUT/bench.json" timeout "${T_BENCH:-120}" python -m pytest benchmarks/bench_gpu.py \
    --benchmark-enable -p no:xdist -s -q -rs --benchmark-json="$OUT/bench-full.json" \
    > "$OUT/bench.log" 2>&1
log "benchmarks rc=$? $(grep -E '^gpu ' "$OUT/bench.log" | tr '\n' ' ')"

# 4. the conformance suite
timeout "${T_CONF:-300}" python -m pytest conformance/ --executor=reference_executors.gpu:CupyExecutor \
    -n 4 --hypothesis-profile=ci -q -rs -p no:cacheprovider \
    --conformance-report="$OUT/conformance-report.json" > "$OUT/conformance.log" 2>&1
log "conformance rc=$? $(last "$OUT/conformance.log")"
log "done; logs under $OUT"
