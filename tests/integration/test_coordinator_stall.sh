#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The coordinator's own stalls are not its agents' silence: `serve` is stopped (SIGSTOP) for far
# longer than liveness x heartbeat (6 s against 1 s) while tasks run, and for 30 s while a task
# finishes; no agent and no task is lost and the campaigns pass. A real loss is still seen: an
# agent killed afterwards is declared lost within the limit.
. "$(dirname "$0")/lib.sh"

# Stops the coordinator for SECONDS, lets it go on, and fails unless the campaign of the run in
# the background ($RUN_PID) then passes.
stall_until_run_ends() { # seconds
    local rc
    kill -STOP "$COORD_PID"
    sleep "$1"
    kill -CONT "$COORD_PID"
    status_of rc wait "$RUN_PID"
    [ $rc -eq 0 ] || fail "run exited $rc after a $1 s stall, expected 0"
}

start_coordinator
start_agents n1 n2 n3
victim_pid=$AGENT_PID # n3's

cat >"$WORK/campaign.yaml" <<'YAML'
name: stall
stages:
  - name: long
    workload: sleep
    timeout: 1m
    params: {duration: 8s}
  - name: after
    workload: sleep
    params: {duration: 200ms}
YAML
run_in_background "$WORK/campaign.yaml"
for n in n1 n2 n3; do wait_for_log "$WORK/$n.log" "started sleep"; done
stall_until_run_ends 6
grep -E "agent n[0-9] lost|verdict lost" "$WORK/coordinator.log" && fail "an agent was declared lost"
grep -q "loop did not run for" "$WORK/coordinator.log" || fail "the coordinator did not notice its stall"
"$FLEETBURN" report --db "$WORK/fb.db" --format json >"$WORK/report.json"
v=$(json_q "$WORK/report.json" 'sorted((t["nodes"][0], t["verdict"]) for s in d["stages"] for t in s["tasks"])')
[ "$v" = "[('n1', 'pass'), ('n1', 'pass'), ('n2', 'pass'), ('n2', 'pass'), ('n3', 'pass'), ('n3', 'pass')]" ] ||
    fail "verdicts after a 6 s stall: $v"
pass "6 s coordinator stall during a running stage: no agent or task lost, campaign passed"

# 30 s: the task ends while the coordinator is stopped, and the stage deadline (10 s timeout,
# about 15.5 s) passes during the stall too: the result waiting on the socket is read before the
# deadline is judged, so the task passes instead of timing out.
cat >"$WORK/campaign30.yaml" <<'YAML'
name: stall30
stages:
  - name: short
    workload: sleep
    timeout: 10s
    params: {duration: 2s}
YAML
run_in_background "$WORK/campaign30.yaml" run30
for n in n1 n2 n3; do
    wait_for_lines "$WORK/$n.log" "started sleep" 3 20 "$n did not start the third task"
done
sleep 0.3
stall_until_run_ends 30
grep -E "agent n[0-9] lost" "$WORK/coordinator.log" && fail "an agent was declared lost after 30 s"
grep -q "no result within the stage deadline" "$WORK/coordinator.log" && fail "a task timed out"
pass "30 s coordinator stall past the stage deadline: no agent or task lost, campaign passed"

# A real loss is still a loss: n3 killed, declared lost within liveness x heartbeat (1 s) plus a
# margin for the timer and a loaded machine.
ms=$(ms_until_lost n3 "$victim_pid")
pass "a killed agent was declared lost after ${ms} ms"
