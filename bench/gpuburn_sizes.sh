#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gpuburn's checksum cost against the same run's unchecked peak at several matrix sizes: for
# each dtype and size a run with the checks off and one with them on, on GPU 0.
#   DTYPES="fp8 bf16" SIZES="8192 12288 16384" bench/gpuburn_sizes.sh BUNDLE OUT
# BUNDLE comes from deploy/make-bundle.sh; OUT gets one worker log per run; the table goes to
# stdout (bench/results/h100-2026-11-25-abft-sizes.txt).
set -uo pipefail
bundle=$(cd "${1:?usage: gpuburn_sizes.sh BUNDLE OUT}" && pwd)
OUT=${2:?usage: gpuburn_sizes.sh BUNDLE OUT}
mkdir -p "$OUT"
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
bundle_gpu_env "$bundle"
w=$bundle/bin/fleetburn-worker-cuda
printf '%-6s %-6s %-4s %9s %9s %8s %5s %9s\n' dtype matrix abft median peak burn/pk sms checked
for dt in ${DTYPES:-fp8}; do
  for m in ${SIZES:-8192 12288 16384}; do
    for ab in false true; do
      log=$OUT/$dt-$m-$ab.log
      "$w" --workload gpuburn --task-id x --result "$OUT/x.pb" interval=2s duration=8s dtype=$dt matrix=$m abft=$ab >"$log" 2>&1
      g() { grep -o "log gpuburn metrics gpu0: .*" "$log" | tr ',' '\n' | sed 's/^ *//' | awk -F'[= ]' -v k="$1" '$1==k{print $2; f=1} END{if(!f) print "n/a"}' | head -1; }
      printf '%-6s %-6s %-4s %9s %9s %8s %5s %9s\n' $dt $m $ab "$(g tflops_median)" "$(g blas_peak_tflops)" "$(g burn_vs_peak)" "$(g abft_sms)" "$(g abft_checked)/$(g gemms)"
    done
  done
done
