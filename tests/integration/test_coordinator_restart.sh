#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A campaign survives its coordinator: the coordinator is killed -9 while a two-stage campaign
# runs and started again on the same endpoint and database. The agents register again by
# themselves, the running task is adopted (its result lands once), the next stage is dispatched,
# and the campaign finishes `pass` with the gap on its timeline. A coordinator started on another
# database does not know the campaign: it cancels the task an agent still runs for it.
. "$(dirname "$0")/lib.sh"

start_coordinator
first_pid=$COORD_PID
start_agents n1 n2

cat >"$WORK/two.yaml" <<'YAML'
name: two-stages
stages:
  - name: long
    workload: sleep
    params: {duration: 4s}
  - name: after
    workload: sleep
    params: {duration: 200ms}
YAML
"$FLEETBURN" run --coordinator "$ENDPOINT" "$WORK/two.yaml" >/dev/null 2>"$WORK/run1.log" &
PIDS+=("$!")
wait_for_log "$WORK/n1.log" "started sleep"
wait_for_log "$WORK/n2.log" "started sleep"
kill_hard "$first_pid"
sleep 1

: >"$WORK/coordinator.log"
serve_in_background "$WORK/coordinator.log"
second_pid=$COORD_PID
wait_for_log "$WORK/coordinator.log" "coordinator on"
grep -q "resumed at stage 1 of 2" "$WORK/coordinator.log" || fail "campaign not resumed"
wait_for_log "$WORK/coordinator.log" "agent n1 registered" 30
wait_for_log "$WORK/coordinator.log" "campaign .* finished: pass" 30
pass "the campaign resumed after kill -9 of its coordinator and finished pass"

python3 - "$WORK/fb.db" <<'PY' || fail "timeline after the resume is wrong"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
(state, verdict), = db.execute("select state, verdict from campaigns").fetchall()
assert (state, verdict) == ("finished", "pass"), (state, verdict)
tasks = db.execute("select t.id, count(r.result_id) from tasks t left join results r"
                   " on r.task_id = t.id group by t.id").fetchall()
assert len(tasks) == 4 and all(n == 1 for _, n in tasks), tasks
events = [m for (m,) in db.execute("select message from events where kind = 'campaign'")]
assert any("coordinator restarted; campaign resumed" in m for m in events), events
assert any("adopted" in m for m in events), events
PY
pass "every task has exactly one result; the timeline shows the restart"

# A coordinator on another database: the campaign is unknown there; the task an agent runs for
# it is cancelled, so that it does not overlap what runs next on the node.
started=$(grep -c "started sleep" "$WORK/n1.log")
"$FLEETBURN" run --coordinator "$ENDPOINT" "$WORK/two.yaml" >/dev/null 2>"$WORK/run2.log" &
PIDS+=("$!")
wait_for_lines "$WORK/n1.log" "started sleep" $((started + 1)) 10 "second campaign did not start"
kill_hard "$second_pid"
: >"$WORK/coordinator.log"
"$FLEETBURN" serve --bind "$ENDPOINT" --db "$WORK/other.db" --heartbeat-ms 200 --liveness 5 \
    >>"$WORK/coordinator.log" 2>&1 &
PIDS+=("$!")
wait_for_log "$WORK/coordinator.log" "agent n1 registered" 30
wait_for_log "$WORK/coordinator.log" "runs task .* of a campaign that is not running here" 10
wait_for_log "$WORK/n1.log" "not running on this coordinator" 10
pass "a task of a campaign unknown to the coordinator is cancelled on the agent"
