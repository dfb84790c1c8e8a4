#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The messy simulated world through the real coordinator (fleetburn-simfleet; docs/simfleet.md):
# lost results run the coordinator's deadline path (the task times out, nothing else does);
# lognormal noise spreads healthy measurements beyond the old +-1% while a hard leaf fails exactly
# the pairs with a member behind it; a disagreeing member fails a healthy pair by itself, one
# member per failed task; and the simulated clock follows the campaign's rounds (a node-local round
# of 600 s, then netbw pair rounds of 10 s back to back), which is what bursty faults are judged
# on.
. "$(dirname "$0")/lib.sh"


# run NAME AGENTS FAULTS CAMPAIGN [simfleet options]: the report in $WORK/NAME.json; exit 0 or 1
run() {
    local name=$1 agents=$2 faults=$3 campaign=$4
    shift 4
    run_simfleet "$name" --agents "$agents" --faults "$faults" --campaign "$campaign" --keep "$@"
    [ $SIM_RC -le 1 ] || fail "$name: simfleet exited $SIM_RC"
}

cat >"$WORK/pairs.yaml" <<'YAML'
name: sim-pairs
stages:
  - name: pairs
    workload: netbw
    timeout: 1s
    scope: pairs
    pairing: random
    seed: 3
    rounds: 3
YAML

# --- lost results: the deadline decides, and only those tasks time out -------------------------
cat >"$WORK/lost.yaml" <<'YAML'
seed: 7
lost_rate: 0.1
faults: []
YAML
run lost 16 "$WORK/lost.yaml" "$WORK/pairs.yaml"
bad=$(json_q "$WORK/lost.json" '[(t["id"], t["verdict"]) for t in d["stages"][0]["tasks"]
    if t["verdict"] not in ("pass", "timeout")]')
[ "$bad" = "[]" ] || fail "lost results gave verdicts other than timeout: $bad"
timeouts=$(json_q "$WORK/lost.json" 'sum(t["verdict"] == "timeout" for t in d["stages"][0]["tasks"])')
[ "$timeouts" -ge 1 ] || fail "no result was lost at lost_rate 0.1 (seed 7)"
# a timed-out task has a member that never reported a verdict of its own (its result, if any, is
# the cancellation that followed the deadline); a passed one has both members' passes
wrong=$(json_q "$WORK/lost.json" '[t["id"] for t in d["stages"][0]["tasks"]
    if (t["verdict"] == "timeout") != (sum(r["verdict"] == "pass" for r in t["results"]) < 2)]')
[ "$wrong" = "[]" ] || fail "timeouts do not match the missing results: $wrong"
pass "lost results: $timeouts task(s) timed out at the deadline, every other task passed"

# --- lognormal noise and a hard leaf ------------------------------------------------------------
# four leaves of eight nodes (sim-00 ... sim-31) under two spines
leaf_spine_topo sim- 4 8 2 2 >"$WORK/fabric.topo"
cat >"$WORK/leaf.yaml" <<'YAML'
seed: 11
noise: {dist: lognormal, sigma: 0.05}
faults:
  - {leaf: leaf04, kind: hard}
YAML
run leaf 32 "$WORK/leaf.yaml" "$WORK/pairs.yaml" --topology "$WORK/fabric.topo" --delay-ms 0-5
wrong=$(json_q "$WORK/leaf.json" '[t["nodes"] for t in d["stages"][0]["tasks"]
    if (t["verdict"] == "pass") == any(int(n[4:]) >= 24 for n in t["nodes"])]')
[ "$wrong" = "[]" ] || fail "leaf04 judged wrongly: $wrong"
spread=$(json_q "$WORK/leaf.json" '(lambda v: "%d %d %d" % (len(v), sum(not 99 <= x <= 101 for x in v),
    sum(not 70 <= x <= 140 for x in v)))([x for t in d["stages"][0]["tasks"] if t["verdict"] == "pass"
    for r in t["results"] for k, x in r["metrics"].items() if k.startswith("netbw.")])')
read -r n_values outside_1pct outside_wide <<<"$spread"
[ "$n_values" -ge 40 ] || fail "only $n_values healthy measurements"
[ "$outside_1pct" -ge $((n_values / 3)) ] || fail "lognormal 0.05: $outside_1pct of $n_values beyond +-1%"
[ "$outside_wide" -eq 0 ] || fail "lognormal 0.05: $outside_wide of $n_values beyond 0.7-1.4"
pass "a hard leaf fails exactly its pairs; lognormal noise: $outside_1pct of $n_values healthy values beyond +-1%"

# --- disagreeing members -----------------------------------------------------------------------
cat >"$WORK/disagree.yaml" <<'YAML'
seed: 5
disagree_rate: 0.3
faults: []
YAML
run disagree 16 "$WORK/disagree.yaml" "$WORK/pairs.yaml" --delay-ms 0-5
failed=$(json_q "$WORK/disagree.json" 'sum(t["verdict"] == "fail" for t in d["stages"][0]["tasks"])')
[ "$failed" -ge 1 ] || fail "no disagreement at disagree_rate 0.3 (seed 5)"
wrong=$(json_q "$WORK/disagree.json" '[t["id"] for t in d["stages"][0]["tasks"]
    if sum(r["verdict"] == "fail" for r in t["results"]) != (t["verdict"] == "fail")]')
[ "$wrong" = "[]" ] || fail "a failed task without exactly one failing member, or a passed one with one: $wrong"
pass "disagreeing members: $failed healthy pair(s) failed, each by exactly one member"

# --- the simulated clock: rounds back to back ----------------------------------------------------
cat >"$WORK/clock.yaml" <<'YAML'
name: sim-clock
stages:
  - name: node-local
    workload: memtest
    timeout: 1h
    params: {size: 1GiB}
  - name: pairs
    workload: netbw
    timeout: 10m
    scope: pairs
    rounds: 4
YAML
cat >"$WORK/burst.yaml" <<'YAML'
seed: 3
faults:
  - {node: sim-05, kind: intermittent, q: 0.5, burst: 120}
YAML
run clock 16 "$WORK/burst.yaml" "$WORK/clock.yaml" --delay-ms 0-20
starts=$(json_q "$WORK/clock.json" 'sorted({(s["index"], t["id"].split("/")[-1].split(".")[0]
    if s["index"] else "local", r["metrics"]["sim.start_s"]) for s in d["stages"] for t in s["tasks"]
    for r in t["results"] if "sim.start_s" in r["metrics"]})')
want="[(0, 'local', 0), (1, 'r0', 600), (1, 'r1', 610), (1, 'r2', 620), (1, 'r3', 630)]"
[ "$starts" = "$want" ] || fail "simulated starts $starts, expected $want"
pass "the simulated clock: node-local round at 0 s, pair rounds at 600, 610, 620, 630 s"
