#!/usr/bin/env bash
# A short GPU slot (a lent machine, docs/DEPLOY.md "GPU"): the probe, then the check, each
# half one command that fits one call, on a host with PyTorch and no network. Run from the
# checkout with the carried folder beside it (filled here by `python -m bench.gpu_probe
# --prepare gpu-carry`, then carried with the checkout); each half's results come back as
# one archive, as few files come back from such a machine.
#   bash bench/gpu_slot.sh probe  [CARRY [OUT [ARGS...]]]   # <= 6 min: bench.gpu_probe
#   bash bench/gpu_slot.sh check  [CARRY [OUT [ARGS...]]]   # bench.gpu_check at 1 and 32 clients, 5 s each,
#                                                           # with its CPU reference on 2 cores
#   bash bench/gpu_slot.sh compile [CARRY [OUT [ARGS...]]]  # bench.torch_compile: rec and det, each shape compiled once
# ARGS go to the tool (e.g. --step parity,curves; --device cpu --quick is how its test runs it).
# Nothing measured is lost to a stop: each tool writes its JSON as it goes; the archive is
# made whatever the exit status.
set -uo pipefail
cd "$(dirname "$0")/.."
half=${1:?probe, check or compile}
case "$half" in probe|check|compile) ;; *) echo "probe, check or compile, not $half"; exit 2 ;; esac
carry=${2:-gpu-carry}
out=${3:-${OUT:-gpu-results}}
shift $(( $# < 3 ? $# : 3 ))
export PYTHONUNBUFFERED=1 PYTHONWARNINGS=ignore
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo "no nvidia-smi"
[ -f "$carry/prepared.json" ] || { echo "$carry is not a folder --prepare filled (no prepared.json)"; exit 3; }
if compgen -G "$carry/wheels/*.whl" > /dev/null; then
    # beside the host's Python, not into it (its environment may be read-only), and first on the path
    site=${TMPDIR:-/tmp}/bl-carried-site
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" \
        "$carry"/wheels/*.whl || { echo "could not install the carried wheels from $carry/wheels"; exit 3; }
    export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
fi
case "$half" in
    probe) python3 -m bench.gpu_probe --prepared "$carry" --out "$out/probe" "$@"; rc=$? ;;
    check) python3 -m bench.gpu_check --prepared "$carry" --out "$out/check" --levels 1,32 --duration 5 "$@"; rc=$? ;;
    compile) python3 -m bench.torch_compile --device cuda --prepared "$carry" --out "$out/compile" --cold-cache "$@"; rc=$? ;;
esac
tar -czf "$out/$half.tgz" -C "$out" "$half" && echo "results: $out/$half.tgz (exit $rc)"
exit "$rc"
