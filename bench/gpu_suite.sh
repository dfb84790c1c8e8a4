#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs fleetburn's GPU workloads on one GPU machine and keeps every output: the machine (GPUs,
# driver, topology), health, gpuburn per dtype with the same-run BLAS peak, the three corruption
# injections, gpumemtest (clean and injected), p2p (clean and injected), and a whole campaign
# through `fleetburn run --local 1`.
#   bench/gpu_suite.sh BUNDLE_DIR OUT_DIR [part...]     parts: machine burn inject mem p2p campaign
# BUNDLE_DIR comes from deploy/make-bundle.sh; the node's CUDA runtime and cuBLAS are used.
set -uo pipefail
bundle=${1:?usage: gpu_suite.sh BUNDLE_DIR OUT_DIR [part...]}
out=${2:?usage: gpu_suite.sh BUNDLE_DIR OUT_DIR [part...]}
shift 2
parts=${*:-machine burn inject mem p2p campaign}
export NCCL_NVLS_ENABLE=0
# shellcheck disable=SC1091
. "$bundle/env.sh"
cublas=$(ldconfig -p 2>/dev/null | awk '/libcublasLt.so.13 /{print $NF; exit}')
[ -z "$cublas" ] && cublas=$(find / -name 'libcublasLt.so.13*' -not -path '/proc/*' 2>/dev/null | head -1)
[ -n "$cublas" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$(dirname "$cublas")"
cudart=$(find / -name 'libcudart.so.13*' -not -path '/proc/*' 2>/dev/null | head -1)
[ -n "$cudart" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$(dirname "$cudart")"
W=fleetburn-worker-cuda
mkdir -p "$out"
run() { # name, then the command; output to OUT/name.txt and a one-line status
    local name=$1; shift
    local t0=$SECONDS
    "$@" >"$out/$name.txt" 2>&1
    local rc=$?
    echo "$name: rc=$rc $((SECONDS - t0))s $(grep -E 'verdict|gpuburn (pass|fail|error|skipped)|log (gpumemtest|p2p) ' "$out/$name.txt" | tail -1 | cut -c1-220)"
}
for part in $parts; do
    case $part in
    machine)
        { nvidia-smi; nvidia-smi topo -m; nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,power.limit,memory.total --format=csv; } >"$out/machine.txt" 2>&1
        run health fleetburn-worker --workload health --task-id health --result /tmp/health.pb ;;
    burn)
        run burn-bf16 $W --workload gpuburn --task-id b --result /tmp/b.pb duration=${BURN_SECONDS:-60}s dtype=bf16
        for dt in fp16 tf32 fp32 fp64 fp8; do
            run "burn-$dt" $W --workload gpuburn --task-id b --result /tmp/b.pb duration=15s interval=5s dtype=$dt
        done ;;
    inject)
        for mode in flip nan systematic; do
            run "inject-$mode" $W --workload gpuburn --task-id i --result /tmp/i.pb --allow-fault-injection \
                inject_corrupt=$mode duration=10s interval=2s
        done ;;
    mem)
        run gpumemtest $W --workload gpumemtest --task-id m --result /tmp/m.pb bit_fade_delay=5s
        run gpumemtest-inject $W --workload gpumemtest --task-id m --result /tmp/m.pb --allow-fault-injection \
            inject_bitflips=8 patterns=own_address,modulo20 ;;
    p2p)
        run p2p $W --workload p2p --task-id p --result /tmp/p.pb
        run p2p-inject $W --workload p2p --task-id p --result /tmp/p.pb --allow-fault-injection inject_corrupt=true ;;
    campaign)
        cat >"$out/campaign.yaml" <<'YAML'
name: gpu-node-burnin
stages:
  - {name: sweep, workload: health}
  - {name: burn, workload: gpuburn, params: {dtype: bf16, duration: 60s}}
  - {name: hbm, workload: gpumemtest, params: {bit_fade_delay: 5s, mem_fraction: 0.9}}
  - {name: peers, workload: p2p}
YAML
        run campaign fleetburn run --local 1 --db "$out/campaign.db" "$out/campaign.yaml"
        fleetburn report --db "$out/campaign.db" --format json >"$out/campaign-report.json" 2>&1 ;;
    esac
done
