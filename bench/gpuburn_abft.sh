#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gpuburn's result fidelity on one GPU machine: for every dtype a burn with the per-GEMM checksums
# off and one with them on, back to back on the same GPU (their TFLOPS ratio is the checksums'
# cost; each run also measures its own unchecked cuBLAS peak), bf16 once more with the checks
# forced onto the GEMM stream (abft_sms=0), then test-only flips of one bit in random GEMMs of
# random intervals for every dtype (each must be found, at its row and column), and the SDC probe
# made to report a wrong result on one SM (that SM must be named). nvidia-smi samples temperature,
# clocks and power every 2 s throughout. About five minutes on one H100 at SECONDS=8.
#
#   bench/gpuburn_abft.sh BUNDLE OUT [SECONDS]
#
# BUNDLE comes from deploy/make-bundle.sh. OUT gets summary.txt (one line per run, and the
# overhead per dtype), logs.txt (every worker log, concatenated), smi.csv and smi-before.txt /
# smi-after.txt. DTYPES narrows the dtypes; FLIPS sets the flips per dtype (5); SMS_SWEEP="1 2 4"
# adds runs of the SWEEP_DTYPES (bf16) with the checks given that many SMs beside the GEMMs.
set -uo pipefail
bundle=$(cd "${1:?usage: gpuburn_abft.sh BUNDLE OUT [SECONDS]}" && pwd)
out=${2:?usage: gpuburn_abft.sh BUNDLE OUT [SECONDS]}
secs=${3:-8}
dtypes=${DTYPES:-bf16 fp16 tf32 fp32 fp64 fp8}
flips=${FLIPS:-5}
mkdir -p "$out"
out=$(cd "$out" && pwd)
summary=$out/summary.txt
logs=$out/logs.txt
: >"$summary"
: >"$logs"

# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
bundle_gpu_env "$bundle"
worker=$bundle/bin/fleetburn-worker-cuda

smi_query=timestamp,temperature.gpu,clocks.sm,clocks.mem,power.draw,power.limit,clocks_event_reasons.active
nvidia-smi -q -d TEMPERATURE,CLOCK,POWER,PERFORMANCE >"$out/smi-before.txt" 2>&1
nvidia-smi --query-gpu=name,pci.bus_id,driver_version,$smi_query --format=csv >>"$out/smi-before.txt" 2>&1
nvidia-smi --query-gpu=$smi_query --format=csv -l 2 >"$out/smi.csv" 2>&1 &
smi_pid=$!
trap 'kill "$smi_pid" 2>/dev/null' EXIT

# metric NAME LOG: a value from the "gpuburn metrics ..." lines, or n/a.
metric() {
    local gpu=${1%%.*} name=${1#*.} prefix
    if [[ $1 == *.* ]]; then prefix="log gpuburn metrics $gpu: "; else prefix="log gpuburn metrics: "; name=$1; fi
    { grep -F "$prefix" "$2" || true; } | sed "s/^$prefix//" | tr ',' '\n' | sed 's/^ *//' |
        awk -F'[= ]' -v k="$name" '$1 == k { print $2; found = 1 } END { if (!found) print "n/a" }'
}

printf '%-13s %-7s %8s %8s %7s %9s %6s %4s %6s %7s %9s %5s  %s\n' run verdict median peak \
    burn/pk checked bad sms ratio thresh injfound sdcSM "power W / SM MHz / max C" | tee -a "$summary"
failures=0
# run LABEL EXPECTED_VERDICT [worker args...]
run() {
    local label=$1 expect=$2
    shift 2
    local log=$out/$label.log t=$SECONDS
    "$worker" --workload gpuburn --task-id "abft-$label" --result "$out/$label.pb" interval=2s "$@" \
        >"$log" 2>&1 || echo "$label: worker exited with $?" >>"$log"
    local verdict
    verdict=$({ grep -o '^log gpuburn verdict [a-z]*' "$log" || true; } | awk '{ print $4 }')
    local m="metric gpu0"
    local checked bad injected found located
    checked="$($m.abft_checked "$log" | sed 's/n\/a/-/')/$($m.gemms "$log")"
    bad=$($m.abft_gemms_bad "$log")
    injected=$($m.abft_injected "$log")
    found=$($m.abft_injections_located "$log")
    local ok=ok
    [[ ${verdict:-none} == "$expect" ]] || { ok="UNEXPECTED (expected $expect)"; failures=$((failures + 1)); }
    printf '%-13s %-7s %8s %8s %7s %9s %6s %4s %6.3s %7.4s %9s %5s  %s / %s / %s  %s %ss\n' "$label" \
        "${verdict:-none}" "$($m.tflops_median "$log")" "$($m.blas_peak_tflops "$log")" \
        "$($m.burn_vs_peak "$log")" "$checked" "$bad" "$($m.abft_sms "$log")" \
        "$($m.abft_max_ratio "$log")" "$($m.abft_threshold_rms "$log")" "$found/$injected" \
        "$($m.sdc_odd_sms "$log")" "$($m.power_mean_w "$log")" "$($m.sm_clock_median_mhz "$log")" \
        "$($m.temp_max_c "$log")" "$ok" "$((SECONDS - t))" | tee -a "$summary"
    { echo "===== $label: $worker --workload gpuburn interval=2s $*"; cat "$log"; } >>"$logs"
    rm -f "$log" "$out/$label.pb"
}

for dt in $dtypes; do
    run "$dt-off" pass dtype="$dt" duration="${secs}s" abft=false
    run "$dt-on" pass dtype="$dt" duration="${secs}s"
done
[[ " $dtypes " == *" bf16 "* ]] && run bf16-inline pass dtype=bf16 duration="${secs}s" abft_sms=0
for dt in ${SWEEP_DTYPES:-bf16}; do
    for sms in ${SMS_SWEEP:-}; do
        run "$dt-sms$sms" pass dtype="$dt" duration="${secs}s" abft_sms="$sms"
    done
done
seed=1000
for dt in $dtypes; do
    seed=$((seed + 1))
    run "$dt-flips" fail dtype="$dt" duration=6s --allow-fault-injection inject_corrupt=gemm \
        inject_gemms="$flips" inject_seed=$seed
done
run sdc-inject fail duration=4s --allow-fault-injection inject_corrupt=sdc inject_seed=7

{
    echo
    echo "checksum overhead per dtype: median TFLOPS with checks off / with checks on (same GPU, back to back)"
    for dt in $dtypes; do
        off=$(awk -v l="$dt-off" '$1 == l { print $3 }' "$summary")
        on=$(awk -v l="$dt-on" '$1 == l { print $3 }' "$summary")
        awk -v d="$dt" -v a="$off" -v b="$on" 'BEGIN { if (a > 0 && b > 0) printf "%-5s off %8.1f on %8.1f  off/on %.4f (%+.2f%%)\n", d, a, b, a / b, 100 * (a / b - 1) }'
    done
    echo
    echo "findings of the injected runs:"
    grep -hE '^===== |^log gpuburn finding|inject_corrupt=(gemm|sdc)' "$logs" | grep -B1 -E 'finding|inject_corrupt' | cut -c1-600
} >>"$summary"
kill "$smi_pid" 2>/dev/null
nvidia-smi -q -d TEMPERATURE,CLOCK,POWER,PERFORMANCE >"$out/smi-after.txt" 2>&1
echo "$failures unexpected verdict(s)" | tee -a "$summary"
[[ $failures -eq 0 ]]
