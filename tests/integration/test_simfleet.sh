#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# fleetburn-simfleet end to end: 64 simulated agents against the real coordinator run a node-local
# stage and a pairs stage with one hard node fault. The node-local stage fails exactly that node,
# every failed pair holds it, the report JSON is valid and its diagnosis names it. Then a link
# fault on a two-leaf fabric fails exactly the pairs that cross leaves, agent names follow the
# width of N-1, and bad input exits 2 with a FILE:LINE message.
. "$(dirname "$0")/lib.sh"


cat >"$WORK/campaign.yaml" <<'YAML'
name: sim-two-stages
stages:
  - name: node-local
    workload: memtest
    timeout: 1h
    params: {size: 1GiB}
  - name: pairs
    workload: netbw
    timeout: 10m
    scope: pairs
    pairing: round-robin
    rounds: 2
YAML
cat >"$WORK/faults.yaml" <<'YAML'
seed: 7
false_fail_rate: 0
faults:
  - {node: sim-17, kind: hard}
YAML

run_simfleet report --agents 64 --faults "$WORK/faults.yaml" --campaign "$WORK/campaign.yaml" \
    --stats "$WORK/stats.txt" --keep
[ $SIM_RC -eq 1 ] || fail "simfleet exited $SIM_RC, expected 1 (a task failed)"
grep -q "64 agents registered" "$WORK/report.log" || fail "no registration line"

# Valid JSON, the whole campaign, and the node-local stage failing exactly sim-17.
json_q "$WORK/report.json" 'd["format"]' | grep -qx fleetburn-report || fail "not a report"
[ "$(json_q "$WORK/report.json" 'd["campaign"]["verdict"]')" = fail ] || fail "campaign verdict"
[ "$(json_q "$WORK/report.json" 'len(d["stages"][0]["tasks"])')" = 64 ] || fail "node-local tasks"
failed=$(json_q "$WORK/report.json" \
    '[t["nodes"] for t in d["stages"][0]["tasks"] if t["verdict"] != "pass"]')
[ "$failed" = "[['sim-17']]" ] || fail "node-local stage failed $failed, expected [['sim-17']]"
json_q "$WORK/report.json" '[b["part"] for b in d["diagnosis"]["bad"]]' | grep -q "'sim-17'" \
    || fail "the diagnosis does not name sim-17"
pass "node-local stage failed exactly sim-17, and the report names it"

# Pairs: two rounds of 32 pairs; a pair fails exactly when it holds sim-17; every member measured.
[ "$(json_q "$WORK/report.json" 'len(d["stages"][1]["tasks"])')" = 64 ] || fail "pair tasks"
wrong=$(json_q "$WORK/report.json" '[t["nodes"] for t in d["stages"][1]["tasks"]
    if (t["verdict"] == "pass") == ("sim-17" in t["nodes"])]')
[ "$wrong" = "[]" ] || fail "pairs judged wrongly: $wrong"
low=$(json_q "$WORK/report.json" '[(r["node"], k, v) for t in d["stages"][1]["tasks"]
    if "sim-17" not in t["nodes"] for r in t["results"] for k, v in r["metrics"].items()
    if k.startswith("netbw.") and not 95 <= v <= 105]')
[ "$low" = "[]" ] || fail "healthy pairs measured off nominal: $low"
grep -q "^stage.pairs.sim_s=10$" "$WORK/stats.txt" || fail "simulated time of the pairs stage"
pass "every pair with sim-17 failed and no other; healthy pairs measure 100 Gb/s"

# A hard uplink on a two-leaf fabric: exactly the pairs that cross leaves fail.
# sim-00 ... sim-07 and sim-08 ... sim-15 under one spine
leaf_spine_topo sim- 2 8 1 2 >"$WORK/fabric.topo"
cat >"$WORK/link.yaml" <<'YAML'
faults:
  - {link: leaf02<->spine01, kind: hard}
YAML
cat >"$WORK/pairs.yaml" <<'YAML'
name: sim-pairs
stages:
  - name: pairs
    workload: netbw
    timeout: 10m
    scope: pairs
    rounds: 3
YAML
run_simfleet link --agents 16 --topology "$WORK/fabric.topo" --faults "$WORK/link.yaml" \
    --campaign "$WORK/pairs.yaml" --delay-ms 0-5 --keep
[ $SIM_RC -eq 1 ] || fail "link run exited $SIM_RC, expected 1"
wrong=$(json_q "$WORK/link.json" '[t["nodes"] for t in d["stages"][0]["tasks"]
    if (t["verdict"] == "pass") != (len({int(n[4:]) // 8 for n in t["nodes"]}) == 1)]')
[ "$wrong" = "[]" ] || fail "link fault judged wrongly: $wrong"
crossing=$(json_q "$WORK/link.json" 'sum(1 for t in d["stages"][0]["tasks"] if t["verdict"] != "pass")')
[ "$crossing" -ge 1 ] || fail "no pair crossed the leaves"
pass "a hard leaf02<->spine01 failed exactly the $crossing cross-leaf pairs"

# Names take the width of N-1: sim-0 ... sim-9 for ten agents; a healthy fleet exits 0.
printf 'faults: []\n' >"$WORK/none.yaml"
run_simfleet ten --agents 10 --faults "$WORK/none.yaml" --campaign "$WORK/campaign.yaml" --delay-ms 0 --keep
[ $SIM_RC -eq 0 ] || fail "a healthy fleet did not pass"
names=$(json_q "$WORK/ten.json" 'sorted(t["nodes"][0] for t in d["stages"][0]["tasks"])')
[ "$names" = "['sim-0', 'sim-1', 'sim-2', 'sim-3', 'sim-4', 'sim-5', 'sim-6', 'sim-7', 'sim-8', 'sim-9']" ] \
    || fail "names were $names"
pass "ten agents are sim-0 ... sim-9 and a healthy fleet passes"

# Bad input: exit 2 and one line naming the file, line and key.
printf 'faults:\n  - {node: sim-17, kind: intermittent}\n' >"$WORK/bad1.yaml"
expect_simfleet_usage "bad1.yaml:2: faults[0].q: missing; expected q" --agents 64 \
    --faults "$WORK/bad1.yaml" --campaign "$WORK/campaign.yaml" --report-json "$WORK/x.json"
printf 'faults:\n  - {node: sim-99, kind: hard}\n' >"$WORK/bad2.yaml"
expect_simfleet_usage "bad2.yaml:2: faults[0].node: sim-99 is not a node of the fleet" --agents 64 \
    --faults "$WORK/bad2.yaml" --campaign "$WORK/campaign.yaml" --report-json "$WORK/x.json"
expect_simfleet_usage "--agents: '0' is not a number from 1 to 65536" --agents 0 \
    --faults "$WORK/faults.yaml" --campaign "$WORK/campaign.yaml" --report-json "$WORK/x.json"
expect_simfleet_usage "--report-json is required" --agents 4 --faults "$WORK/faults.yaml" \
    --campaign "$WORK/campaign.yaml"
pass "bad fault files and arguments exit 2 with a clear message"

# With CURVE on every connection (--curve: a keyed coordinator, one agent key with a nodes: line
# for sim-*, an operator key for the submission) the same campaign gives the same verdicts, and
# the keys leave nothing behind.
status_of rc "$SIMFLEET" --agents 64 --faults "$WORK/faults.yaml" --campaign "$WORK/campaign.yaml" \
    --report-json "$WORK/report-curve.json" --curve --keep >"$WORK/sim-curve.out" 2>"$WORK/sim-curve.log"
grep -q "CURVE keys from" "$WORK"/fleetburn-simfleet-*/coordinator.log || fail "the coordinator ran without keys"
grep -qE "refused (a connection|registration)" "$WORK"/fleetburn-simfleet-*/coordinator.log && fail "a simulated agent was refused"
collect_simfleet_logs
[ $rc -eq 1 ] || fail "simfleet --curve exited $rc, expected 1 (a task failed)"
grep -q "64 agents registered" "$WORK/sim-curve.log" || fail "not every agent registered with CURVE"
python3 - "$WORK/report.json" "$WORK/report-curve.json" <<'PY' || fail "verdicts differ with CURVE"
import json, sys
def verdicts(path):
    r = json.load(open(path))
    return sorted((t.get("id", "").split("/")[-1], t["verdict"]) for s in r["stages"] for t in s["tasks"] if s["name"] == "node-local")
a, b = verdicts(sys.argv[1]), verdicts(sys.argv[2])
assert a == b and a, (a[:3], b[:3])
PY
set +e
"$SIMFLEET" --agents 4 --faults "$WORK/faults.yaml" --campaign "$WORK/campaign.yaml" \
    --report-json "$WORK/r4.json" --curve >/dev/null 2>&1
set -e
ls -d "$WORK"/fleetburn-simfleet-* 2>/dev/null && fail "simfleet --curve left its work directory behind"
pass "simfleet with CURVE: every agent registers through the ZAP handler, same verdicts, nothing left behind"
