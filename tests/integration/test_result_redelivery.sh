#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Nothing is lost and nothing is stored twice: the coordinator is frozen while a task finishes,
# the agent is killed with its result unacknowledged and restarted on the same spool, and the
# result arrives exactly once when the coordinator resumes.
. "$(dirname "$0")/lib.sh"

start_coordinator --liveness 50
start_agents n1

cat >"$WORK/campaign.yaml" <<'YAML'
name: redelivery
stages:
  - name: short
    workload: sleep
    timeout: 1m
    params: {duration: 1s}
YAML
run_in_background "$WORK/campaign.yaml"
wait_for_log "$WORK/n1.log" "started sleep"
kill -STOP "$COORD_PID"
wait_for_log "$WORK/n1.log" "task .*: pass"
ls "$WORK/spool-n1" | grep -qv '^\.' || fail "result not spooled while the coordinator was frozen"
kill -KILL "$AGENT_PID"
start_agent n1
sleep 0.5
kill -CONT "$COORD_PID"
status_of rc wait "$RUN_PID"
[ $rc -eq 0 ] || fail "run exited $rc, expected 0"
count=$(python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print(c.execute('select count(*) from results').fetchone()[0])" "$WORK/fb.db")
[ "$count" = 1 ] || fail "$count results stored, expected exactly 1"
for i in $(seq 50); do [ -z "$(ls "$WORK/spool-n1")" ] && break; sleep 0.1; done
[ -z "$(ls "$WORK/spool-n1")" ] || fail "spool not emptied after the ack: $(ls "$WORK/spool-n1")"
pass "result delivered once after an agent restart; spool drained"
