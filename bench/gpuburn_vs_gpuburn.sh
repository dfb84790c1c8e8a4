#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Compares fleetburn's gpuburn with the gpu-burn tool on the same GPU, one after the other, in the
# modes both have: fp32 (SGEMM), tf32 (gpu-burn -tc: fp32 with tensor-core math) and fp64
# (gpu-burn -d); then fleetburn alone in bf16 (its default), fp16 and fp8. For each mode it prints
# gpu-burn's median Gflop/s report (first fifth of reports skipped as warm-up), fleetburn's median
# and minimum interval TFLOPS, fleetburn's same-run plain-GEMM peak (gpuN.blas_peak_tflops) and
# the burn/peak ratio, and fleetburn's verdict and error counts.
#
#   bench/gpuburn_vs_gpuburn.sh GPU_BURN_BINARY [SECONDS]      SECONDS per run, default 60
#
# GPU_BURN_BINARY is a gpu_burn built elsewhere (fleetburn neither builds nor ships it); it runs
# in its own directory, where it expects its compare.ptx. GPU=N picks the GPU (default 0; both
# tools see only that one through CUDA_VISIBLE_DEVICES). MODES="fp32 tf32 ..." narrows the list.
# FB_WORKER overrides the worker (default: build-burn/, build/ bin/fleetburn-worker-cuda). Logs of
# every run stay in $OUT (default: a temporary directory, removed) when OUT is set.
set -euo pipefail

gpu_burn=${1:?usage: $0 GPU_BURN_BINARY [SECONDS]}
secs=${2:-60}
gpu=${GPU:-0}
modes=${MODES:-fp32 tf32 fp64 bf16 fp16 fp8}
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
here=$(cd "$(dirname "$0")/.." && pwd)
[[ -x $gpu_burn ]] || { echo "gpu-burn binary not executable: $gpu_burn" >&2; exit 2; }
find_worker fleetburn-worker-cuda "$here/build-burn/bin/fleetburn-worker-cuda" "$here/build/bin/fleetburn-worker-cuda"
[[ $secs =~ ^[0-9]+$ && $secs -ge 10 ]] || { echo "SECONDS must be a whole number >= 10" >&2; exit 2; }
gpu_burn=$(cd "$(dirname "$gpu_burn")" && pwd)/$(basename "$gpu_burn")

logs_dir
# GPU numbers in PCI bus order, as nvidia-smi and fleetburn count them.
export CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=$gpu

# gpu-burn flags for a mode, or "-" when it has no such mode.
gpu_burn_flags() {
    case $1 in
    fp32) echo "" ;;
    tf32) echo "-tc" ;;
    fp64) echo "-d" ;;
    *) echo "-" ;;
    esac
}

# Median of the Gflop/s values gpu-burn printed, skipping the first fifth, in TFLOPS.
gpu_burn_tflops() {
    local values
    values=$({ grep -o '([0-9.]* Gflop/s)' "$1" || true; } | tr -d '(' | awk '{ print $1 }')
    [[ -n $values ]] || { echo n/a; return; }
    local n skip
    n=$(wc -l <<<"$values")
    skip=$((n / 5))
    tail -n $((n - skip)) <<<"$values" | sort -g |
        awk '{ v[NR] = $1 } END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
                                  printf "%.1f", m / 1000 }'
}

# A metric from fleetburn's "gpuburn metrics gpu0: name=value unit, ..." log line, printed with
# format $3 (default %g).
fb_metric() {
    { grep '^log gpuburn metrics gpu0: ' "$1" || true; } | tr ',' '\n' | sed 's/^.*: //; s/^ *//' |
        awk -F'[= ]' -v k="$2" -v f="${3:-%g}" '$1 == k { printf f, $2; found = 1 }
                                                END { if (!found) printf "n/a" }'
}

printf '%-5s %12s %12s %12s %12s %8s  %s\n' mode gpu-burn fb-median fb-min fb-peak burn/pk \
    "fleetburn verdict (errors nan_inf kat_errors)"
for mode in $modes; do
    flags=$(gpu_burn_flags "$mode")
    gb="-"
    if [[ $flags != "-" ]]; then
        # shellcheck disable=SC2086 # flags is empty or one word
        (cd "$(dirname "$gpu_burn")" && "$gpu_burn" $flags "$secs") >"$tmp/gpu-burn.$mode.log" 2>&1 ||
            echo "gpu-burn $mode exited with $?" >&2
        gb=$(gpu_burn_tflops "$tmp/gpu-burn.$mode.log")
    fi
    "$worker" --workload gpuburn --task-id "bench-$mode" --result "$tmp/fb.$mode.pb" \
        dtype="$mode" duration="${secs}s" devices=0 >"$tmp/fb.$mode.log" 2>&1 ||
        echo "fleetburn-worker-cuda $mode exited with $?" >&2
    med=$(fb_metric "$tmp/fb.$mode.log" tflops_median %.1f)
    min=$(fb_metric "$tmp/fb.$mode.log" tflops_min %.1f)
    peak=$(fb_metric "$tmp/fb.$mode.log" blas_peak_tflops %.1f)
    ratio=$(awk -v a="$med" -v b="$peak" 'BEGIN { if (b + 0 > 0 && a + 0 > 0) printf "%.3f", a / b; else printf "n/a" }')
    verdict=$({ grep -o '^log gpuburn verdict [a-z]*' "$tmp/fb.$mode.log" || true; } | awk '{ print $4 }')
    errs="$(fb_metric "$tmp/fb.$mode.log" errors) $(fb_metric "$tmp/fb.$mode.log" nan_inf) $(fb_metric "$tmp/fb.$mode.log" kat_errors)"
    printf '%-5s %12s %12s %12s %12s %8s  %s (%s)\n' "$mode" "$gb" "$med" "$min" "$peak" "$ratio" \
        "${verdict:-none}" "$errs"
done
echo "(TFLOPS; GPU $gpu: $(nvidia-smi --query-gpu=name,pci.bus_id --format=csv,noheader -i "$gpu" 2>/dev/null || echo unknown), ${secs} s per run)"
