#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Smoke test of gpuburn on a machine with GPUs: every dtype must pass (fp8 may be skipped where
# the GPU has none) and every inject_corrupt mode must fail with the right counter and a finding
# on gpu0 only; injection without the switch must be refused. Prints one line per run (verdict,
# TFLOPS median/min, same-run peak, burn/peak, error counters) and exits non-zero when a run did
# not end as expected. Logs of every run stay in $OUT when OUT is set.
#
#   bench/gpuburn_smoke.sh [SECONDS]       SECONDS per dtype run, default 20 (injections: 10)
#
# FB_WORKER overrides the worker (default build-burn/ or build/ bin/fleetburn-worker-cuda, else
# -hip); DTYPES="bf16 fp8" narrows the dtype runs; EXTRA="devices=0" adds parameters to every run.
set -euo pipefail

secs=${1:-20}
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
here=$(cd "$(dirname "$0")/.." && pwd)
find_worker "fleetburn-worker-cuda/-hip" "$here"/build-burn/bin/fleetburn-worker-{cuda,hip} \
    "$here"/build/bin/fleetburn-worker-{cuda,hip}
dtypes=${DTYPES:-bf16 fp16 tf32 fp32 fp64 fp8}
read -r -a extra <<<"${EXTRA:-}"
logs_dir
failures=0

# metric NAME LOG: a value from the "gpuburn metrics ..." lines, or n/a.
metric() {
    local gpu=${1%%.*} name=${1#*.} prefix
    if [[ $1 == *.* ]]; then prefix="log gpuburn metrics $gpu: "; else prefix="log gpuburn metrics: "; name=$1; fi
    { grep -F "$prefix" "$2" || true; } | sed "s/^$prefix//" | tr ',' '\n' | sed 's/^ *//' |
        awk -F'[= ]' -v k="$name" '$1 == k { print $2; found = 1 } END { if (!found) print "n/a" }'
}

# run LABEL EXPECTED_VERDICTS CHECK [worker args...]: CHECK is a grep -E pattern every finding
# line must match (empty: no findings allowed).
run() {
    local label=$1 expect=$2 check=$3
    shift 3
    local log=$tmp/$label.log
    "$worker" --workload gpuburn --task-id "smoke-$label" --result "$tmp/$label.pb" "$@" \
        "${extra[@]}" >"$log" 2>&1 || echo "$label: worker exited with $?" >>"$log"
    local verdict
    verdict=$({ grep -o '^log gpuburn verdict [a-z]*' "$log" || true; } | awk '{ print $4 }')
    local ok=yes why=""
    [[ " $expect " == *" ${verdict:-none} "* ]] || { ok=no; why="verdict ${verdict:-none}, expected $expect"; }
    local findings
    findings=$({ grep '^log gpuburn finding ' "$log" || true; })
    if [[ -z $check && -n $findings && $verdict != skipped ]]; then
        ok=no
        why+=" unexpected findings"
    elif [[ -n $check ]]; then
        if [[ -z $findings ]] || grep -qvE "$check" <<<"$findings"; then
            ok=no
            why+=" findings do not all match /$check/"
        fi
    fi
    printf '%-12s %-8s %9s %9s %9s %7s  err=%s nan=%s kat=%s  %s\n' "$label" "${verdict:-none}" \
        "$(metric gpu0.tflops_median "$log")" "$(metric gpu0.tflops_min "$log")" \
        "$(metric gpu0.blas_peak_tflops "$log")" "$(metric gpu0.burn_vs_peak "$log")" \
        "$(metric gpu0.errors "$log")" "$(metric gpu0.nan_inf "$log")" \
        "$(metric gpu0.kat_errors "$log")" "$([[ $ok == yes ]] && echo ok || echo "FAILED:$why")"
    if [[ $ok != yes ]]; then
        failures=$((failures + 1))
        grep -E '^log gpuburn (verdict|finding)|^log gpu0 ' "$log" | tail -n 8 | sed 's/^/    /'
    fi
}

printf '%-12s %-8s %9s %9s %9s %7s  %s\n' run verdict median min peak burn/pk "counters (gpu0)"
for dt in $dtypes; do
    expect=pass
    [[ $dt == fp8 || $dt == tf32 ]] && expect="pass skipped" # fp8 before sm_89; tf32/fp8 on ROCm
    run "$dt" "$expect" "" dtype="$dt" duration="${secs}s"
done
short=$((secs > 10 ? 10 : secs))
run flip fail 'finding [^ ]*/gpu0: .*differ between repeats' --allow-fault-injection \
    inject_corrupt=flip duration="${short}s" interval=2s
run nan fail 'finding [^ ]*/gpu0: .*NaN/Inf' --allow-fault-injection \
    inject_corrupt=nan duration="${short}s" interval=2s
run systematic fail 'finding [^ ]*/gpu0: .*known-answer' --allow-fault-injection \
    inject_corrupt=systematic duration="${short}s" interval=2s
run gemm fail 'finding [^ ]*/gpu0: .*(block checksums disagree|differ between repeats)' \
    --allow-fault-injection inject_corrupt=gemm inject_gemms=5 duration="${short}s" interval=2s
run sdc fail 'finding [^ ]*/gpu0: .*computed a different result from the majority' \
    --allow-fault-injection inject_corrupt=sdc duration="${short}s" interval=2s
run refused error "" inject_corrupt=flip duration=1s
echo "worker: $worker; $failures unexpected result(s)"
[[ $failures -eq 0 ]]
