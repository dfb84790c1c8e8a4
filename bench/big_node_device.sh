#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The whole GPU campaign on one multi-GPU machine (4 or 8 H200s): the machine and its
# NVLink/NVSwitch topology as `nvidia-smi topo -m` prints it, then `fleetburn run --local 1` with
# health, gpuburn (bf16, BURN_SECONDS), gpumemtest, p2p and allreduce over every GPU with both
# launchers, the p2p matrices (uni- and bidirectional) from a direct p2p run, and the allreduce
# comparison with nccl-tests' all_reduce_perf (bench/allreduce_gpu_device.sh) when its path is
# given. nccl-tests is built by the operator from its own sources, never by this project.
#
#   bench/big_node_device.sh BUNDLE OUT [ALL_REDUCE_PERF]
#
# OUT gets campaign.txt (machine, topology, run output, text report), campaign-report.json,
# p2p.txt (the matrices), and allreduce/ (summary, report, injection report, logs).
set -uo pipefail
bundle=${1:?usage: big_node_device.sh BUNDLE OUT [ALL_REDUCE_PERF]}
out=${2:?usage: big_node_device.sh BUNDLE OUT [ALL_REDUCE_PERF]}
perf=${3:-}
burn=${BURN_SECONDS:-120}
bench_dir=$(cd "$(dirname "$0")" && pwd) # env.sh below sets its own $here
mkdir -p "$out"
bundle=$(cd "$bundle" && pwd)
out=$(cd "$out" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/fb-bignode-XXXXXX")
export NCCL_NVLS_ENABLE=0
# shellcheck disable=SC1091
. "$bundle/env.sh"
for lib in libcudart.so.13 libcublasLt.so.13 libcublas.so.13 libnccl.so.2 libmpi.so.40; do
    p=$(ldconfig -p 2>/dev/null | awk -v n="$lib" 'index($1, n) == 1 {print $NF; exit}')
    [ -n "$p" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$(dirname "$p")"
done
mpirun=$(command -v mpirun || true)
# Which mpirun runs, and consent to run ranks as root, are site settings of the agent.
{
    [ -n "$mpirun" ] && echo "mpirun = $mpirun"
    [ "$(id -u)" -eq 0 ] && echo "mpirun_allow_run_as_root = yes"
    true
} >"$work/agent.conf"
chmod 600 "$work/agent.conf"
log=$out/campaign.txt
{
    echo "== $(hostname) $(date -u +%FT%TZ)"
    nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,power.limit,memory.total --format=csv
    echo "== nvidia-smi topo -m"
    nvidia-smi topo -m
    echo "== nvidia-smi nvlink --status (GPU 0)"
    nvidia-smi nvlink --status -i 0 2>&1 | head -30
} >"$log" 2>&1

cat >"$work/campaign.yaml" <<YAML
name: big-node-burnin
stages:
  - {name: sweep, workload: health, timeout: 5m}
  - {name: burn, workload: gpuburn, timeout: 20m, params: {dtype: bf16, duration: ${burn}s}}
  - {name: hbm, workload: gpumemtest, timeout: 20m, params: {mem_fraction: 0.9}}
  - {name: peers, workload: p2p, timeout: 10m}
  - name: allreduce-mpirun
    workload: allreduce
    timeout: 10m
    params: {launcher: mpirun, min_size: 1MiB, max_size: 8GiB}
  - name: allreduce-native
    workload: allreduce
    timeout: 10m
    params: {launcher: native, min_size: 1MiB, max_size: 8GiB}
YAML
echo "== campaign" >>"$log"
cat "$work/campaign.yaml" >>"$log"
t0=$SECONDS
fleetburn run --local 1 --agent-config "$work/agent.conf" --db "$work/c.db" "$work/campaign.yaml" \
    >>"$log" 2>&1
echo "== fleetburn run: exit $? after $((SECONDS - t0)) s" | tee -a "$log"
fleetburn report --db "$work/c.db" >>"$log" 2>&1
fleetburn report --db "$work/c.db" --format json >"$out/campaign-report.json" 2>>"$log"

# The matrices as the p2p workload prints them (a direct run keeps the tables in one file).
fleetburn-worker-cuda --workload p2p --task-id p2p --result "$work/p2p.pb" >"$out/p2p.txt" 2>&1
echo "== p2p direct run: exit $?" | tee -a "$log"

# allreduce per size against all_reduce_perf, one fleetburn run of each launcher.
REPEAT=${REPEAT:-1} bash "$bench_dir/allreduce_gpu_device.sh" "$bundle" "$out/allreduce" $perf >/dev/null 2>&1
echo "== allreduce comparison: exit $?" | tee -a "$log"
grep -E "verdict|worst ratio|OK|NOT PROVEN" "$out/allreduce/summary.txt" | tee -a "$log"
