#!/usr/bin/env bash
# Run the product benchmarks (docs/BENCHMARKS.md), each as `python -m bench.<name>` from
# the repo root; results in bench/results/*.json, the rec curves plot in docs/bench_rec.png.
# Each script prints its ratio last. Not here, for their run time or what they need
# (docs/BENCHMARKS.md gives their commands): multi_pipeline, shadow_overhead, ray_backend,
# precision_profiles, revisions (--base REV), gpu_check, gpu_probe and gpu_slot.sh (a GPU; their
# CPU forms are tests: tests/e2e/test_gpu_check.py, test_gpu_probe.py, bench/tests/test_gpu_slot.py),
# and the reliability drivers (docs/RELIABILITY.md).
#   bash bench/run_all.sh            # all
#   bash bench/run_all.sh memory     # only the named scripts
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONWARNINGS=ignore
mkdir -p bench/results
LOGDIR="${TMPDIR:-/tmp}/batchline-bench-logs"
mkdir -p "$LOGDIR"

batchline() { python -m serving.cli "$@"; }

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "thread budget: thread_num=${BENCH_THREADS:-2} per predictor (PaddleOCR cpu_threads the same); engines as the configs say (rec.yml, ocr.yml: OpenVINO; ernie bench: oneDNN; PaddleOCR peers: oneDNN); ocr_vs_peers runs configs/ocr.yml as shipped (prints its layout)"

STEPS=(batching_gain idle_overhead ocr_vs_peers memory ernie_batching rec_curves engine_agreement field_labels simulate http_fronts null_op served_rec front_workers torch_cpu torch_compile det_padding cpu_engines)
if [ $# -gt 0 ]; then STEPS=("$@"); fi
failed=()
ratios=()

run() {  # run NAME ARGS...: one script, log to $LOGDIR, keep its RATIO line
  local name=$1; shift
  local began=$SECONDS
  echo "=== $name $*"
  python -m "bench.$name" "$@" 2>"$LOGDIR/$name.err" | tee "$LOGDIR/$name.log"
  local rc=${PIPESTATUS[0]}
  echo "--- $name: exit $rc, $((SECONDS - began)) s"
  if [ "$rc" -ne 0 ]; then
    failed+=("$name"); tail -5 "$LOGDIR/$name.err"
  else
    ratios+=("$(grep '^RATIO' "$LOGDIR/$name.log" | tail -1)")
  fi
}

for step in "${STEPS[@]}"; do
  case $step in
    batching_gain)  run batching_gain --duration 8 --warmup 3 --rounds 2 --prime 12 --offline-seconds 6 ;;
    idle_overhead)  run idle_overhead --requests 100 --block 1 ;;
    ocr_vs_peers)   run ocr_vs_peers --clients 8 --duration 15 --warmup 3 --rounds 2 --prime 10 ;;
    memory)         run memory --load 10 --clients 16 ;;
    ernie_batching)
      if [ -f configs/ernie.yml ] && [ -f ops/ernie.py ]; then
        run ernie_batching --clients 32 --duration 6 --warmup 2 --rounds 2 --prime 3
      else
        echo "=== ernie_batching: skipped (configs/ernie.yml or ops/ernie.py missing)"
      fi ;;
    rec_curves)
      run rec_curves --concurrency 1,4,16,32 --duration 5 --warmup 2 --prime 10
      if [ -f bench/results/rec_curve_on.json ] && [ -f bench/results/rec_curve_off.json ]; then
        batchline bench --plot docs/bench_rec.png \
          --from bench/results/rec_curve_on.json bench/results/rec_curve_off.json >/dev/null
      fi ;;
    engine_agreement) run engine_agreement --pages 60 ;;
    field_labels)   run field_labels --pages 300 ;;  # needs fonts-wqy-zenhei and DejaVu's faces
    simulate)       run simulate ;;  # a simulation (no model): batching on a GPU-like cost curve
    # peers in the bench's own venvs: built once by a plain `python -m bench.null_op` (registry);
    # here no network: an unbuilt peer is a row saying so
    http_fronts)    run http_fronts ;;  # the HTTP fronts alone, around a trivial app
    null_op)        run null_op --no-install ;;
    served_rec)     run served_rec --no-install ;;  # its mosec venv: built once by `python -m bench.served_rec`
    front_workers)  run front_workers ;;  # configs/ocr.yml with HTTP in 0 and in 2 front processes
    torch_cpu)      run torch_cpu --rounds 3 ;;  # engine: torch against OpenVINO Runtime, in process
    torch_compile)  run torch_compile --cold-cache ;;  # engine: torch with and without torch_compile
    det_padding)    run det_padding ;;  # det's padding against PaddleOCR's lines (the GPU config's det, on the CPU)
    cpu_engines)    run cpu_engines ;;  # the GPU check's CPU reference: configs/ocr.yml served on OpenVINO vs ONNX Runtime
    *) echo "unknown step $step"; failed+=("$step") ;;
  esac
done

echo
echo "=== summary (logs in $LOGDIR)"
for r in "${ratios[@]}"; do echo "$r"; done
if [ ${#failed[@]} -gt 0 ]; then echo "FAILED: ${failed[*]}"; exit 1; fi
