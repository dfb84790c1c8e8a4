#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README's promise: `fleetburn run --local 3` with a memtest stage passes on all three
# agents, exits 0, and the JSON report shows three passing tasks with a bandwidth figure.
. "$(dirname "$0")/lib.sh"

cat >"$WORK/campaign.yaml" <<'YAML'
name: local-dram
nodes: all
stages:
  - name: dram
    workload: memtest
    timeout: 5m
    params: {size: 64MiB, passes: 1}
YAML

"$FLEETBURN" run --local 3 --db "$WORK/t.db" "$WORK/campaign.yaml" >"$WORK/run.out" 2>"$WORK/run.log" \
    || fail "run exited $? (expected 0)"
grep -q "dram" "$WORK/run.out" || fail "summary table does not name the stage"
pass "run --local 3 exited 0"

"$FLEETBURN" report --db "$WORK/t.db" --format json >"$WORK/report.json"
[ "$(json_q "$WORK/report.json" 'd["campaign"]["verdict"]')" = pass ] || fail "campaign verdict"
[ "$(json_q "$WORK/report.json" 'len(d["stages"][0]["tasks"])')" = 3 ] || fail "expected 3 tasks"
[ "$(json_q "$WORK/report.json" 'sorted(n for t in d["stages"][0]["tasks"] for n in t["nodes"])')" \
    = "['local-0', 'local-1', 'local-2']" ] || fail "task nodes"
[ "$(json_q "$WORK/report.json" 'all(t["verdict"] == "pass" for t in d["stages"][0]["tasks"])')" = True ] \
    || fail "not every task passed"
[ "$(json_q "$WORK/report.json" 'all(t["metrics"]["bandwidth_mbs"] > 0 for t in d["stages"][0]["tasks"])')" = True ] \
    || fail "missing bandwidth metric"
pass "JSON report: 3 passing memtest tasks with bandwidth"

"$FLEETBURN" nodes --db "$WORK/t.db" >"$WORK/nodes.out"
for n in local-0 local-1 local-2; do grep -q "$n" "$WORK/nodes.out" || fail "nodes lacks $n"; done
pass "nodes lists the three agents"

"$FLEETBURN" report --db "$WORK/t.db" >"$WORK/report.txt"
grep -q "pass" "$WORK/report.txt" || fail "text report"
pass "text report"
