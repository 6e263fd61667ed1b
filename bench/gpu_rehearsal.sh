#!/usr/bin/env bash
# Rehearse a GPU slot here, on the CPU, in the GPU host's versions (docs/DEPLOY.md,
# "Rehearsing the slot"): a Python 3.12 virtual environment with the host's PyTorch (a CUDA
# build, as the host's), onnx and ONNX Runtime and the few host packages batchline imports,
# nothing else but the carried wheels; then each half of bench/gpu_slot.sh as the slot runs
# it, on the CPU and small, and the unit tests of the torch paths. What differs from the
# development machine (Python, torch, a CUDA build with no GPU) shows here rather than in a
# slot of a few minutes.
#   bash bench/gpu_rehearsal.sh [VENV [OUT]]
# Needs the package registry (about 5 GB in VENV, kept for the next run) and a checkout where
# `pip install -e ".[test]"` ran (it fills gpu-carry/ if --prepare has not). Exit 1 if a step failed.
set -uo pipefail
cd "$(dirname "$0")/.."
venv=${1:-/tmp/bl-gpu-host}
out=${2:-gpu-rehearsal}
# the host's versions (/work/.library/device/KINDS.md; the rest as the registry has them)
HOST_PINS=(torch==2.11.0 onnx==1.23.1 onnxruntime==1.30.0)
HOST_OTHERS=(numpy opencv-python-headless pillow requests pyyaml werkzeug prometheus-client psutil grpcio protobuf rich
    pytest hypothesis)
# the unit tests of the torch paths (the interpreter, frozen plans, masks, compiles, engines)
TORCH_TESTS=(tests/unit/test_onnx_graph.py tests/unit/test_frozen_plan.py tests/unit/test_padding_masks.py
    tests/unit/test_bucket_cache.py tests/unit/test_torch_engine.py tests/unit/test_onnxruntime_engine.py
    tests/unit/test_batch_padding.py tests/unit/test_cpu_plan.py tests/unit/test_device_shelf.py
    tests/unit/test_engine_table.py)
if [ ! -x "$venv/bin/python" ]; then
    py312=
    for candidate in python3.12 "$(pyenv root 2>/dev/null)"/versions/3.12*/bin/python3.12; do
        if "$candidate" -c "" 2>/dev/null; then py312=$candidate; break; fi
    done
    [ -n "$py312" ] || { echo "no Python 3.12 (neither python3.12 on the PATH nor one of pyenv's)"; exit 3; }
    "$py312" -m venv "$venv" || exit 3
fi
"$venv/bin/python" -m pip install -q "${HOST_PINS[@]}" "${HOST_OTHERS[@]}" || { echo "could not install the host's packages"; exit 3; }
[ -f gpu-carry/prepared.json ] || python -m bench.gpu_probe --prepare gpu-carry || exit 3
export PATH="$venv/bin:$PATH"
rm -rf "$out"
failed=()
run() {  # name, then gpu_slot.sh's arguments
    local name=$1
    shift
    echo "== $name"
    bash bench/gpu_slot.sh "$@" || failed+=("$name")
}
run probe probe gpu-carry "$out" --device cpu --quick
run check check gpu-carry "$out" --device cpu --quick
run "check, process instances" check gpu-carry "$out/process" --device cpu --quick --instance-mode process
run compile compile gpu-carry "$out" --device cpu --rounds 1 --calls 1
echo "== torch's unit tests"  # with the carried wheels the halves installed, first on the path
PYTHONPATH="${TMPDIR:-/tmp}/bl-carried-site" python -m pytest -q -p no:cacheprovider "${TORCH_TESTS[@]}" \
    > "$out/unit-tests.log" 2>&1 || failed+=("torch's unit tests ($out/unit-tests.log)")
tail -1 "$out/unit-tests.log"
if [ ${#failed[@]} -gt 0 ]; then
    echo "rehearsal: failed: ${failed[*]} (results in $out)"
    exit 1
fi
echo "rehearsal: every step passed on $("$venv/bin/python" -c 'import sys, torch; print(f"Python {sys.version.split()[0]}, torch {torch.__version__}")') (results in $out)"
