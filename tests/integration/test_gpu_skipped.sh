#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# GPU workloads on a node without GPUs: each task is `skipped` with its reason, never `fail`,
# and the campaign exits 0. (Runs on GPU machines too, with FLEETBURN_SYSFS_ROOT pointing the
# agent at a CPU-only fixture so that its inventory has no GPUs.)
. "$(dirname "$0")/lib.sh"

cat >"$WORK/campaign.yaml" <<'YAML'
name: gpu-on-cpu-node
stages:
  - {name: burn, workload: gpuburn, params: {duration: 5s}}
  - {name: hbm, workload: gpumemtest}
  - {name: peers, workload: p2p}
YAML
FLEETBURN_SYSFS_ROOT="$FB_SRC/tests/fixtures/sysfs/cpu-node" \
    "$FLEETBURN" run --local 1 --db "$WORK/t.db" "$WORK/campaign.yaml" >"$WORK/run.out" 2>"$WORK/run.log" \
    || fail "run exited $?, expected 0"
"$FLEETBURN" report --db "$WORK/t.db" --format json >"$WORK/report.json"
for i in 0 1 2; do
    [ "$(json_q "$WORK/report.json" "d['stages'][$i]['tasks'][0]['verdict']")" = skipped ] || fail "stage $i not skipped"
    json_q "$WORK/report.json" "d['stages'][$i]['tasks'][0]['error']" | grep -q "no GPUs" || fail "stage $i gives no reason"
done
pass "gpuburn, gpumemtest and p2p skipped on a GPU-less node; exit 0"
