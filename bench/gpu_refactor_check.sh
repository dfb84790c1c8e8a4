#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The short check of the GPU code on one GPU machine after a change that must not change
# behaviour: gpuburn on every dtype plus its three corruption injections (gpuburn_smoke.sh),
# health, gpumemtest clean and injected, and p2p (gpu_suite.sh parts machine, mem, p2p), telemetry
# sampled alone through the management library (test_telemetry's live probe), and the GPU
# allreduce sweep with both launchers and an injected element (allreduce_gpu_device.sh, small
# sizes). About four minutes on one H100.
#
#   bench/gpu_refactor_check.sh BUNDLE OUT [BENCH_DIR]
#
# BUNDLE comes from deploy/make-bundle.sh over a build with CUDA and MPI; put the build's
# test_telemetry into BUNDLE/bin before making it, so that its libraries come along. BENCH_DIR
# holds the bench scripts (default: this script's folder). OUT gets run.txt (what each step
# printed, with timestamps) and logs.tar.gz (every log the steps kept).
# Environment: BURN_SECONDS per gpuburn dtype run (10), PROBE_SECONDS (4).
set -uo pipefail
bundle=$(cd "${1:?usage: gpu_refactor_check.sh BUNDLE OUT [BENCH_DIR]}" && pwd)
out=${2:?usage: gpu_refactor_check.sh BUNDLE OUT [BENCH_DIR]}
bench=$(cd "${3:-$(dirname "$0")}" && pwd)
mkdir -p "$out/logs"
out=$(cd "$out" && pwd)
run=$out/run.txt
: >"$run"
t0=$SECONDS
step() { echo "== $(date -u +%FT%TZ) +$((SECONDS - t0))s $*" | tee -a "$run"; }

# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
bundle_gpu_env "$bundle"

step "machine, health, gpumemtest, p2p: gpu_suite.sh $bundle OUT machine mem p2p"
bash "$bench/gpu_suite.sh" "$bundle" "$out/logs/suite" machine mem p2p 2>&1 | tee -a "$run"
grep -hE '^0, |NVIDIA-SMI|Driver Version' "$out/logs/suite/machine.txt" | head -3 >>"$run"
for f in health gpumemtest gpumemtest-inject p2p p2p-inject; do
    echo "-- $f: $(grep -c '^telemetry gpu0' "$out/logs/suite/$f.txt") telemetry samples" >>"$run"
    grep -E '^log (versions|health|telemetry:|gpumemtest |p2p )|finding' "$out/logs/suite/$f.txt" \
        | tail -n 8 | cut -c1-400 >>"$run"
done

step "gpuburn: FB_WORKER=$bundle/bin/fleetburn-worker-cuda gpuburn_smoke.sh ${BURN_SECONDS:-10}"
FB_WORKER=$bundle/bin/fleetburn-worker-cuda OUT=$out/logs/burn \
    bash "$bench/gpuburn_smoke.sh" "${BURN_SECONDS:-10}" 2>&1 | tee -a "$run"
for f in "$out"/logs/burn/*.log; do # the library's choice, verdicts, telemetry of every run
    echo "-- $(basename "$f" .log): $(grep -c '^telemetry gpu0' "$f") telemetry samples" >>"$run"
    grep -E '^log gpu0 [^i]|^log telemetry:|^log gpuburn (pass|fail|error|skipped|finding|metrics gpu0)' \
        "$f" | cut -c1-400 >>"$run"
done

step "telemetry alone: FB_TELEMETRY_PROBE_S=${PROBE_SECONDS:-4} test_telemetry"
FB_TELEMETRY_PROBE_S=${PROBE_SECONDS:-4} "$bundle/bin/test_telemetry" >"$out/logs/probe.txt" 2>&1
echo "test_telemetry probe: exit $?" | tee -a "$run"
grep -E 'probe|telemetry: ' "$out/logs/probe.txt" | cut -c1-300 >>"$run"

step "allreduce: MIN=1M MAX=64M REPEAT=1 ITERS=10 WARMUP=2 allreduce_gpu_device.sh"
MIN=1M MAX=64M REPEAT=1 ITERS=10 WARMUP=2 \
    bash "$bench/allreduce_gpu_device.sh" "$bundle" "$out/logs/allreduce" >/dev/null 2>&1
cat "$out/logs/allreduce/summary.txt" >>"$run"

step "done"
tar -czf "$out/logs.tar.gz" -C "$out" logs && rm -rf "$out/logs"
