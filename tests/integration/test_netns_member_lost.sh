#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A member dying mid-group: two agents in two network namespaces run a netbw pair stage planned
# for 2 x 30 s; ns2's agent is killed with SIGKILL (its worker dies with it) while data flows.
# The pair task ends `lost` or `error`; ns1's worker is not left waiting for the stage deadline:
# its result is an error that names ns2 and comes within seconds; the campaign goes on and the
# next stage runs on ns1. Skipped (77) when not root or without ip netns.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/netns.sh"

netns_require
netns_setup 2
netns_start_coordinator
netns_start_agent 1
netns_start_agent 2
victim_pid=$AGENT_PID
for i in 1 2; do wait_for_log "$WORK/coordinator.log" "agent ns$i registered"; done

cat >"$WORK/campaign.yaml" <<'YAML'
name: netns-member-lost
stages:
  - name: pairs
    workload: netbw
    scope: pairs
    timeout: 5m
    params: {duration: 30s, streams: 2}
  - name: after
    workload: sleep
    params: {duration: 200ms}
YAML
"$FLEETBURN" run --coordinator "$ENDPOINT" $NETNS_CLIENT_KEYS "$WORK/campaign.yaml" >"$WORK/run.out" 2>"$WORK/run.log" &
run_pid=$!
PIDS+=("$run_pid")
# Once the worker has started, 3 s cover the rendezvous and put data on the wire.
wait_for_log "$WORK/ns2.log" "started netbw" 30
sleep 3
killed_at=$(date +%s%N)
kill -KILL "$victim_pid"
status_of rc wait "$run_pid"
[ $rc -eq 1 ] || fail "run exited $rc, expected 1"
grep -q "agent ns2 lost" "$WORK/coordinator.log" || fail "the coordinator did not mark ns2 lost"

"$FLEETBURN" report --db "$WORK/fb.db" --format json >"$WORK/report.json"
python3 - "$WORK/report.json" "$killed_at" <<'PY' || fail "member lost mid-pair"
import json, sys, datetime
d = json.load(open(sys.argv[1]))
killed = int(sys.argv[2]) / 1e9

def t(s):
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()

pair = d["stages"][0]["tasks"]
assert len(pair) == 1 and sorted(pair[0]["nodes"]) == ["ns1", "ns2"], pair
task = pair[0]
assert task["verdict"] in ("lost", "error"), (task["verdict"], task["error"])
# ns1's worker gave up on its partner at once, not at the stage deadline (5 min) or after the
# planned 60 s of measurement.
mine = [r for r in task["results"] if r["node"] == "ns1"]
assert len(mine) == 1, task["results"]
r = mine[0]
assert r["verdict"] == "error" and "ns2" in (r["error"] or ""), r
assert t(r["received"]) - killed < 15, ("ns1's result came late", r["received"], killed)
after = d["stages"][1]["tasks"]
assert [(t_["nodes"], t_["verdict"]) for t_ in after] == [(["ns1"], "pass")], after
print("pair:", task["verdict"], "| ns1:", r["error"])
PY
pass "ns2 killed mid-pair: pair task lost/error, ns1 ended at once naming ns2, next stage ran"
