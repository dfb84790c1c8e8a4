#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The database on a small tmpfs fills up in the middle of a campaign: nothing is acknowledged
# before it is stored (the agent keeps its result), the campaign is held and never reported
# finished while the store cannot be written, the coordinator keeps serving and retries; once
# space is freed the campaign continues from what the store holds and finishes with every
# result stored exactly once and no orphan result.
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || { echo "skip: needs root to mount a tmpfs"; exit 77; }
mkdir -p "$WORK/disk"
mount -t tmpfs -o size=2m tmpfs "$WORK/disk" 2>/dev/null || { echo "skip: cannot mount a tmpfs"; exit 77; }
test_cleanup() { umount -l "$WORK/disk" 2>/dev/null; }

port=$(free_port)
ENDPOINT="tcp://127.0.0.1:$port"
"$FLEETBURN" serve --bind "$ENDPOINT" --db "$WORK/disk/fb.db" --heartbeat-ms 200 --liveness 5 \
    >>"$WORK/coordinator.log" 2>&1 &
COORD_PID=$!
PIDS+=("$COORD_PID")
wait_for_log "$WORK/coordinator.log" "coordinator on"
start_agent n1
wait_for_log "$WORK/coordinator.log" "agent n1 registered"

cat >"$WORK/c.yaml" <<'YAML'
name: full-disk
stages:
  - name: first
    workload: sleep
    params: {duration: 2s}
  - name: second
    workload: sleep
    params: {duration: 300ms}
YAML
"$FLEETBURN" run --coordinator "$ENDPOINT" "$WORK/c.yaml" >"$WORK/run.out" 2>"$WORK/run.log" &
run_pid=$!
PIDS+=("$run_pid")
wait_for_log "$WORK/n1.log" "started sleep"
# Fill the disk while the task runs: its result arrives to a store that cannot take it.
dd if=/dev/zero of="$WORK/disk/fill" bs=16k >/dev/null 2>&1 || true
wait_for_log "$WORK/coordinator.log" "cannot write to the database" 20
sleep 2
kill -0 "$run_pid" 2>/dev/null || fail "run ended while the store could not be written: $(cat "$WORK/run.log")"
grep -q "finished: pass" "$WORK/coordinator.log" && fail "the campaign was reported finished unstored"
[ -n "$(ls "$WORK/spool-n1")" ] || fail "the agent's result was acknowledged though it was not stored"
pass "store full: the campaign is held, the result stays in the agent's spool"

rm -f "$WORK/disk/fill"
wait_for_log "$WORK/coordinator.log" "takes writes again" 20
set +e
timeout 60 tail --pid="$run_pid" -f /dev/null
wait "$run_pid"
rc=$?
set -e
[ $rc -eq 0 ] || fail "run exited $rc after the store recovered: $(tail -3 "$WORK/run.log")"
python3 - "$WORK/disk/fb.db" <<'PY' || fail "the store after the recovery is wrong"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
(state, verdict), = db.execute("select state, verdict from campaigns").fetchall()
assert (state, verdict) == ("finished", "pass"), (state, verdict)
rows = db.execute("select t.id, count(r.result_id) from tasks t left join results r"
                  " on r.task_id = t.id group by t.id").fetchall()
assert len(rows) == 2 and all(n == 1 for _, n in rows), rows
orphans = db.execute("select count(*) from results where task_id not in (select id from tasks)")
assert orphans.fetchone()[0] == 0
PY
pass "space freed: the campaign continued and finished pass, one result per task, no orphan"
