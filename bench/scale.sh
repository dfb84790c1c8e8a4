#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Coordinator scale with simulated agents: N agents (default 4096) of fleetburn-simfleet, each
# with its own ZeroMQ connection, against the real coordinator (`fleetburn serve`, its own
# process). Measures the time until all are registered, the time from a stage's start until every
# one of its N results is stored (results come back at once: --delay-ms 0), and the coordinator's
# resident memory. Goals (issue 5): registered within 10 s, stage dispatched and stored within
# 3 s, coordinator under 256 MB.
#
#   bench/scale.sh BUILD_DIR [N]
#
# Environment: REPEAT (3) runs; the median of each number is kept, because the machine is shared.
# CURVE=1: every connection with CURVE keys (fleetburn-simfleet --curve: a keyed coordinator, one
# agent key for sim-*, an operator key for the submission).
# With CURVE=1, FLEETBURN_SECUREMEM=libsodium in the environment measures libsodium's own guarded
# allocator for CURVE secrets instead of fleetburn's locked pool (docs/security.md).
# Results are printed and written to bench/results/scale[-curve]-<date>.txt (RESULTS overrides).
set -euo pipefail

BUILD=${1:?usage: scale.sh BUILD_DIR [N]}
N=${2:-4096}
REPEAT=${REPEAT:-3}
SIM="$BUILD/bin/fleetburn-simfleet"
[ -x "$SIM" ] || { echo "$SIM not found" >&2; exit 2; }
HERE=$(cd "$(dirname "$0")" && pwd)
CURVE=${CURVE:-0}
CURVE_ARGS=()
[ "$CURVE" = 1 ] && CURVE_ARGS=(--curve)
RESULTS=${RESULTS:-"$HERE/results/scale$([ "$CURVE" = 1 ] && echo -curve)-$(date -u +%Y-%m-%d).txt"}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/fbscale-XXXXXX")
trap 'rm -rf "$TMP"' EXIT

# One node-local stage over every agent, then one round of pairs; a few faults so that the
# results are not all alike.
cat >"$TMP/campaign.yaml" <<'YAML'
name: scale
stages:
  - name: node-local
    workload: memtest
    timeout: 1h
    params: {size: 1GiB}
  - name: pairs
    workload: netbw
    timeout: 10m
    scope: pairs
    rounds: 1
YAML
cat >"$TMP/faults.yaml" <<'YAML'
seed: 1
false_fail_rate: 0.001
faults:
  - {node: sim-0017, kind: hard}
  - {node: sim-0420, kind: intermittent, q: 0.5}
  - {node: sim-0333, kind: slow, factor: 0.6}
YAML
if [ "$N" -lt 1000 ]; then
    printf 'seed: 1\nfalse_fail_rate: 0.001\nfaults: []\n' >"$TMP/faults.yaml"
fi

median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
stat() { grep "^$1=" "$2" | cut -d= -f2; }

LOAD=$(cut -d' ' -f1-3 /proc/loadavg)
for i in $(seq 1 "$REPEAT"); do
    /usr/bin/time -f "%M" -o "$TMP/sim-rss.$i" \
        "$SIM" --agents "$N" --faults "$TMP/faults.yaml" --campaign "$TMP/campaign.yaml" \
        --report-json "$TMP/report.$i.json" --stats "$TMP/stats.$i" --delay-ms 0 "${CURVE_ARGS[@]}" \
        2>"$TMP/run.$i.log" >/dev/null || true
    [ -s "$TMP/stats.$i" ] && grep -q "^coordinator_peak_rss_mb=" "$TMP/stats.$i" || {
        echo "run $i failed:" >&2; tail -20 "$TMP/run.$i.log" >&2; exit 1; }
    echo "run $i: registered $(stat register_s "$TMP/stats.$i") s," \
         "node-local stored $(stat stage.node-local.stored_s "$TMP/stats.$i") s," \
         "pairs stored $(stat stage.pairs.stored_s "$TMP/stats.$i") s," \
         "coordinator peak $(stat coordinator_peak_rss_mb "$TMP/stats.$i") MiB" >&2
done

pick() { for i in $(seq 1 "$REPEAT"); do stat "$1" "$TMP/stats.$i"; done | median; }
REG=$(pick register_s)
NODE=$(pick stage.node-local.stored_s)
NODE_STAGE=$(pick stage.node-local.stage_s)
PAIRS=$(pick stage.pairs.stored_s)
RSS=$(pick coordinator_rss_mb)
RSS_REG=$(pick coordinator_registered_rss_mb)
CPU_REG=$(pick coordinator_cpu_register_s)
CPU_ALL=$(pick coordinator_cpu_total_s)
PEAK=$(pick coordinator_peak_rss_mb)
SIMRSS=$(for i in $(seq 1 "$REPEAT"); do echo $(( $(tail -n 1 "$TMP/sim-rss.$i") / 1024 )); done | median)
verdict() { awk -v v="$1" -v goal="$2" 'BEGIN {print (v + 0 <= goal + 0) ? "met" : "NOT met"}'; }

mkdir -p "$(dirname "$RESULTS")"
{
    echo "# fleetburn coordinator scale, $(date -u +%Y-%m-%dT%H:%MZ), bench/scale.sh, median of $REPEAT runs"
    echo "# machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), $(free -g | awk '/Mem:/ {print $2}') GiB;"
    echo "#   coordinator (fleetburn serve) and fleetburn-simfleet (all agents, one loop thread) share it;"
    echo "#   load average before the runs: $LOAD (other work on the machine moves elapsed times)"
    echo "# command: bench/scale.sh BUILD $N (CURVE=$CURVE REPEAT=$REPEAT); connections: $([ "$CURVE" = 1 ] && echo "CURVE (keyed coordinator, ZAP handler; secrets in ${FLEETBURN_SECUREMEM:-the locked pool})" || echo "plain, loopback")"
    echo "# campaign: node-local memtest on every agent, then one round of netbw pairs; results at once (--delay-ms 0)"
    echo "agents                                   $N"
    echo "all registered                           ${REG} s      (goal <= 10 s: $(verdict "$REG" 10))"
    echo "node-local stage: start -> all stored     ${NODE} s      (goal <= 3 s: $(verdict "$NODE" 3); stage ended after ${NODE_STAGE} s)"
    echo "pairs stage ($((N / 2)) pairs): start -> all stored ${PAIRS} s"
    echo "coordinator resident memory, registered  ${RSS_REG} MiB"
    echo "coordinator resident memory at the end   ${RSS} MiB"
    echo "coordinator peak resident memory         ${PEAK} MiB  (goal < 256 MB: $(verdict "$PEAK" 244))"
    echo "coordinator CPU time (user+system)       ${CPU_REG} s until all registered, ${CPU_ALL} s in all"
    echo "fleetburn-simfleet peak resident memory  ${SIMRSS} MiB (all $N simulated agents)"
} | tee "$RESULTS"
