#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Agents reconnect by themselves: the coordinator is killed and started again on the same
# endpoint and database; the agent notices the silence, registers again, and the next campaign
# runs on it. The campaign the dead coordinator left running is marked interrupted.
. "$(dirname "$0")/lib.sh"

start_coordinator
first_pid=$COORD_PID
start_agent n1
wait_for_log "$WORK/coordinator.log" "agent n1 registered"

printf 'name: long\nstages:\n  - name: a\n    workload: sleep\n    params: {duration: 30s}\n' >"$WORK/long.yaml"
"$FLEETBURN" run --coordinator "$ENDPOINT" "$WORK/long.yaml" >/dev/null 2>"$WORK/run1.log" &
PIDS+=("$!")
wait_for_log "$WORK/n1.log" "started sleep"
kill -KILL "$first_pid"

: >"$WORK/coordinator.log"
port=${ENDPOINT##*:}
"$FLEETBURN" serve --bind "$ENDPOINT" --db "$WORK/fb.db" --heartbeat-ms 200 --liveness 5 \
    >>"$WORK/coordinator.log" 2>&1 &
PIDS+=("$!")
wait_for_log "$WORK/coordinator.log" "coordinator on"
grep -q "interrupted" "$WORK/coordinator.log" || fail "stale campaign not marked interrupted"
wait_for_log "$WORK/coordinator.log" "agent n1 registered" 30
grep -q "reconnecting" "$WORK/n1.log" || fail "agent did not log its reconnect"
pass "agent re-registered with the restarted coordinator"

printf 'name: after\nstages:\n  - name: a\n    workload: sleep\n    params: {duration: 100ms}\n' >"$WORK/ok.yaml"
"$FLEETBURN" run --coordinator "$ENDPOINT" "$WORK/ok.yaml" >"$WORK/run2.out" 2>"$WORK/run2.log" \
    || fail "campaign after the restart exited $?"
python3 - "$WORK/fb.db" <<'PY' || fail "campaign states wrong"
import sqlite3, sys
rows = dict(sqlite3.connect(sys.argv[1]).execute("select name, state from campaigns").fetchall())
assert rows == {"long": "interrupted", "after": "finished"}, rows
PY
pass "campaign after the restart passed; the interrupted one is recorded as such"
