#!/usr/bin/env bash
# The real-GPU check, for a machine with an NVIDIA GPU and a Python that already has Cython,
# NumPy, SciPy, protobuf, pluggy, pytest and numba-cuda (no network needed): what the `gpu` tox
# environment runs, without tox's downloads.
#
#   scripts/gpu_check.sh build            # editable installs of the parts (compiled here)
#   scripts/gpu_check.sh bench            # benchmarks/bench_gpu.py (headrace beside torch CUDA)
#   scripts/gpu_check.sh test [ARGS...]   # pytest -m cuda over tests/ and plugins/
#
# Wheels in .whl/ are installed first into /tmp/site (on PYTHONPATH).
# Logs go to $OUT (or ./gpu-check) as env.txt, build.log, bench.log, test.log and junit.xml.
set -u
cd "$(dirname "$0")/.."
out=${OUT:-gpu-check}
mkdir -p "$out"
py=${PYTHON:-python3}
export PYTHONUNBUFFERED=1
parts="packages/headrace plugins/tensor plugins/math plugins/nn plugins/optim plugins/control
       plugins/distributed"

stage=${1:-all}
shift || true
start=$(date +%s)
# Wheels carried beside the repo (.whl/: e.g. the protobuf 7 runtime that the generated IR code
# needs, a setuptools that reads PEP 639 licenses) go first on the path of every stage.
if [ -d .whl ]; then
    "$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl || exit 1
    export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi

if [ "$stage" = build ] || [ "$stage" = all ]; then
    {
        date -u; nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,memory.total \
            --format=csv
        "$py" - <<'EOF'
import importlib, sys
print(sys.version)
for name in ("numpy", "scipy", "Cython", "google.protobuf", "pluggy", "numba", "numba_cuda",
             "pytest", "xdist", "torch", "hypothesis"):
    try:
        print(name, getattr(importlib.import_module(name), "__version__", "?"))
    except Exception as e:
        print(name, "MISSING", e)
EOF
        # Numba's CUDA compiler must work before 5 minutes of building are worth spending: on
        # 2026-11-27 the image's numba-cuda 0.30.4 and NumPy 2.5.2 compiled no kernel (carry a
        # NumPy < 2.5 wheel in .whl/ then).
        "$py" -c "
import numpy as np
from numba import cuda
@cuda.jit
def k(a):
    a[cuda.grid(1)] += 1
a = cuda.to_device(np.zeros(32, np.float32)); k[1, 32](a)
assert (a.copy_to_host() == 1).all(); print('numba-cuda compiles and runs a kernel')"
    } > "$out/env.txt" 2>&1 || { echo "no working CUDA compiler: see env.txt"; exit 1; }
    # The parts build side by side (each also compiles its modules in parallel): the longest
    # part, not their sum, is the build's time.
    for p in $parts; do
        ( "$py" -m pip install -q --no-build-isolation --no-deps --no-index -e "$p" \
            > "$out/build-${p##*/}.tmp" 2>&1 || echo "build of $p failed" ) &
    done
    wait
    cat "$out"/build-*.tmp > "$out/build.log"; rm -f "$out"/build-*.tmp
    if grep -q "failed" "$out/build.log"; then cat "$out/build.log"; exit 1; fi
    echo "build: $(( $(date +%s) - start )) s" | tee -a "$out/build.log"
fi

if [ "$stage" = bench ] || [ "$stage" = all ]; then
    (cd benchmarks && timeout "${BENCH_TIMEOUT:-240}" "$py" bench_gpu.py mlp lenet lstm) \
        > "$out/bench.log" 2>&1
    echo "bench rc=$? $(( $(date +%s) - start )) s" | tee -a "$out/bench.log"
    tail -5 "$out/bench.log"
fi

if [ "$stage" = test ] || [ "$stage" = all ]; then
    timeout "${TEST_TIMEOUT:-420}" "$py" -m pytest -p no:cacheprovider -c tox.ini \
        --rootdir . -m cuda -q -rfE --junitxml="$out/junit.xml" "$@" tests plugins \
        > "$out/test.log" 2>&1
    echo "test rc=$? $(( $(date +%s) - start )) s" | tee -a "$out/test.log"
    tail -25 "$out/test.log"
fi
