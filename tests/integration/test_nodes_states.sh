#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `fleetburn nodes` tells the truth: an agent stopped with SIGTERM says goodbye and shows `gone`,
# one killed with SIGKILL shows `lost` once the liveness limit passed, a coordinator restarted on
# the same database shows no agent `alive` (they are `unheard`) until they register again, and
# the agents of a finished `run --local` end `gone`.
. "$(dirname "$0")/lib.sh"

state_of() { "$FLEETBURN" nodes --db "$WORK/fb.db" | awk -v n="$1" '$1 == n {print $2}'; }
wait_state() {
    local i
    for i in $(seq 100); do [ "$(state_of "$1")" = "$2" ] && return 0; sleep 0.1; done
    "$FLEETBURN" nodes --db "$WORK/fb.db" >&2
    fail "$1 is '$(state_of "$1")', expected '$2'"
}

start_coordinator
start_agent a1; pid1=$AGENT_PID
start_agent a2; pid2=$AGENT_PID
start_agent a3; pid3=$AGENT_PID
wait_registered a1 a2 a3
for n in a1 a2 a3; do wait_state $n alive; done
pass "three agents alive"

kill -TERM "$pid1"
wait_for_log "$WORK/coordinator.log" "agent a1 gone: said goodbye" 5
wait_state a1 gone
grep -q "agent a1 lost" "$WORK/coordinator.log" && fail "a1 said goodbye but was also declared lost"
pass "an agent stopped with SIGTERM is gone"

ms=$(ms_until_lost a2 "$pid2")
wait_state a2 lost
[ "$(state_of a1)" = gone ] || fail "a1 is no longer gone"
"$FLEETBURN" nodes --db "$WORK/fb.db" | grep -E '^a2 ' | grep -q "ago" || fail "no last-seen time for a2"
pass "an agent killed with SIGKILL is lost after ${ms} ms (limit 1 s)"

# The coordinator dies with a3 recorded alive; a3 is held still so it cannot reconnect yet.
kill -STOP "$pid3"
kill_hard "$COORD_PID"
port=${ENDPOINT##*:}
serve_in_background "$WORK/coordinator2.log"
wait_for_log "$WORK/coordinator2.log" "coordinator on"
"$FLEETBURN" nodes --db "$WORK/fb.db" >"$WORK/nodes-restart.txt"
grep -q " alive " "$WORK/nodes-restart.txt" && { cat "$WORK/nodes-restart.txt" >&2; fail "an agent shows alive before it was heard"; }
[ "$(state_of a3)" = unheard ] || fail "a3 is '$(state_of a3)' after the restart, expected unheard"
[ "$(state_of a1)" = gone ] && [ "$(state_of a2)" = lost ] || fail "gone/lost not kept across the restart"
pass "restarted coordinator: nothing alive until heard (a3 unheard, a1 gone, a2 lost)"
kill -CONT "$pid3"
wait_for_log "$WORK/coordinator2.log" "agent a3 registered" 15
wait_state a3 alive
pass "a3 alive again once it registered with the new coordinator"

cat >"$WORK/campaign.yaml" <<'YAML'
name: local-goodbye
stages:
  - name: short
    workload: sleep
    params: {duration: 200ms}
YAML
"$FLEETBURN" run --local 2 --db "$WORK/local.db" "$WORK/campaign.yaml" >"$WORK/local.out" 2>"$WORK/local.log" ||
    fail "run --local failed"
"$FLEETBURN" nodes --db "$WORK/local.db" >"$WORK/nodes-local.txt"
[ "$(awk '$1 ~ /^local-/ && $2 == "gone"' "$WORK/nodes-local.txt" | wc -l)" = 2 ] ||
    { cat "$WORK/nodes-local.txt" >&2; fail "agents of a finished run --local are not gone"; }
pass "agents of a finished run --local are gone"
