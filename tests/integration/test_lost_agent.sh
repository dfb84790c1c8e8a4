#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# An agent killed mid-stage is marked lost (task verdict `lost`) while the campaign completes for
# the others; the campaign goes on to its next stage with the survivors.
. "$(dirname "$0")/lib.sh"

start_coordinator
start_agents n1 n2 n3
victim_pid=$AGENT_PID # n3's

cat >"$WORK/campaign.yaml" <<'YAML'
name: lost-agent
stages:
  - name: long
    workload: sleep
    timeout: 1m
    params: {duration: 4s}
  - name: after
    workload: sleep
    params: {duration: 200ms}
YAML
run_in_background "$WORK/campaign.yaml"
wait_for_log "$WORK/n3.log" "started sleep"
kill -KILL "$victim_pid"
status_of rc wait "$RUN_PID"
[ $rc -eq 1 ] || fail "run exited $rc, expected 1"
grep -q "agent n3 lost" "$WORK/coordinator.log" || fail "coordinator did not log n3 as lost"

"$FLEETBURN" report --db "$WORK/fb.db" --format json >"$WORK/report.json"
v=$(json_q "$WORK/report.json" 'sorted((t["nodes"][0], t["verdict"]) for t in d["stages"][0]["tasks"])')
[ "$v" = "[('n1', 'pass'), ('n2', 'pass'), ('n3', 'lost')]" ] || fail "stage 1 verdicts $v"
v=$(json_q "$WORK/report.json" 'sorted((t["nodes"][0], t["verdict"]) for t in d["stages"][1]["tasks"])')
[ "$v" = "[('n1', 'pass'), ('n2', 'pass')]" ] || fail "stage 2 ran on $v"
"$FLEETBURN" nodes --db "$WORK/fb.db" | grep n3 | grep -q lost || fail "nodes does not show n3 lost"
pass "n3 lost mid-stage; n1 and n2 finished both stages"

python3 - "$WORK/fb.db" <<'PY' || fail "no telemetry samples from n1 on the timeline"
import sqlite3, sys
rows = sqlite3.connect(sys.argv[1]).execute(
    "select t.n, t.vmax from telemetry t join telemetry_series s on s.id = t.series_id"
    " where s.node = 'n1' and s.quantity = 'sleep.elapsed_ms'").fetchall()
assert rows and sum(r[0] for r in rows) >= 2, rows[:3]
PY
pass "telemetry samples reached the timeline"
