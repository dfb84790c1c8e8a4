#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# rdmabw through the whole system on a node without RDMA hardware: the loopback task is `skipped`
# with the reason and the campaign exits 0. Then, on a fixture node whose named port is down, the
# task fails with a link finding naming node/hca:port, and the campaign exits 1.
. "$(dirname "$0")/lib.sh"

cat >"$WORK/campaign.yaml" <<'YAML'
name: rdma-on-plain-node
stages:
  - {name: hca-loopback, workload: rdmabw, params: {loopback: true, iters: 100, lat_iters: 100}}
YAML
# This machine's own sysfs, unless it has an HCA: then a fixture without one stands in.
root=""
[ -d /sys/class/infiniband ] && [ -n "$(ls -A /sys/class/infiniband 2>/dev/null)" ] \
    && root="$FB_SRC/tests/fixtures/sysfs/cpu-node"
FLEETBURN_SYSFS_ROOT="$root" \
    "$FLEETBURN" run --local 1 --db "$WORK/t.db" "$WORK/campaign.yaml" >"$WORK/run.out" 2>"$WORK/run.log" \
    || fail "run exited $?, expected 0"
"$FLEETBURN" report --db "$WORK/t.db" --format json >"$WORK/report.json"
[ "$(json_q "$WORK/report.json" "d['stages'][0]['tasks'][0]['verdict']")" = skipped ] || fail "not skipped"
json_q "$WORK/report.json" "d['stages'][0]['tasks'][0]['error']" \
    | grep -q "no RDMA device: /sys/class/infiniband is absent" || fail "no reason given"
pass "rdmabw loopback skipped without an HCA, with the reason; exit 0"

cat >"$WORK/down.yaml" <<'YAML'
name: rdma-port-down
stages:
  - {name: hca-loopback, workload: rdmabw, params: {loopback: true, device: "mlx5_0:1"}}
YAML
set +e
FLEETBURN_SYSFS_ROOT="$FB_SRC/tests/fixtures/sysfs/rdma-down" \
    "$FLEETBURN" run --local 1 --db "$WORK/down.db" "$WORK/down.yaml" >"$WORK/down.out" 2>"$WORK/down.log"
rc=$?
set -e
[ $rc -eq 1 ] || fail "run exited $rc, expected 1 (the task failed)"
"$FLEETBURN" report --db "$WORK/down.db" --format json >"$WORK/down.json"
[ "$(json_q "$WORK/down.json" "d['stages'][0]['tasks'][0]['verdict']")" = fail ] || fail "not fail"
part=$(json_q "$WORK/down.json" "d['stages'][0]['tasks'][0]['findings'][0]['part']")
[ "$part" = "local-0/mlx5_0:1" ] || fail "finding names '$part'"
pass "a named port that is down fails with a finding on $part"
