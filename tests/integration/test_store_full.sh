#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The database on a small tmpfs (16 MiB: more than SQLite's write-ahead log grows to between
# checkpoints, about 4 MiB) fills up in the middle of a campaign: nothing is acknowledged
# before it is stored (the agent keeps its result), the campaign is held and never reported
# finished while the store cannot be written, the coordinator keeps serving and retries; once
# space is freed the campaign continues from what the store holds and finishes with every
# result stored exactly once and no orphan result.
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || { echo "skip: needs root to mount a tmpfs"; exit 77; }
mkdir -p "$WORK/disk"
mount -t tmpfs -o size=16m tmpfs "$WORK/disk" 2>/dev/null || { echo "skip: cannot mount a tmpfs"; exit 77; }
test_cleanup() { umount -l "$WORK/disk" 2>/dev/null; }

# Waits up to SECONDS for the run in the background ($RUN_PID) to end and puts its exit status
# into rc.
run_status_within() { # seconds
    timeout "$1" tail --pid="$RUN_PID" -f /dev/null || true
    status_of rc wait "$RUN_PID"
}

port=$(free_port)
ENDPOINT="tcp://127.0.0.1:$port"
"$FLEETBURN" serve --bind "$ENDPOINT" --db "$WORK/disk/fb.db" --heartbeat-ms 200 --liveness 5 \
    >>"$WORK/coordinator.log" 2>&1 &
COORD_PID=$!
PIDS+=("$COORD_PID")
wait_for_log "$WORK/coordinator.log" "coordinator on"
start_agents n1

cat >"$WORK/c.yaml" <<'YAML'
name: full-disk
stages:
  - name: first
    workload: sleep
    params: {duration: 8s}
  - name: second
    workload: sleep
    params: {duration: 300ms}
YAML
run_in_background "$WORK/c.yaml"
wait_for_log "$WORK/n1.log" "started sleep"
# Fill the disk while the task runs: its result arrives to a store that cannot take it. The
# coordinator learns that the disk is full at its next write: the task's progress event, stored
# every 5 s, comes before its result at 8 s (telemetry is written in 10 s buckets).
dd if=/dev/zero of="$WORK/disk/fill" bs=16k >/dev/null 2>&1 || true
wait_for_log "$WORK/coordinator.log" "cannot write to the database" 20
wait_for_log "$WORK/n1.log" "/0/n1: pass" 20 # the result exists, and was sent
sleep 2
kill -0 "$RUN_PID" 2>/dev/null || fail "run ended while the store could not be written: $(cat "$WORK/run.log")"
grep -q "finished: pass" "$WORK/coordinator.log" && fail "the campaign was reported finished unstored"
[ -n "$(ls "$WORK/spool-n1")" ] || fail "the agent's result was acknowledged though it was not stored"
pass "store full: the campaign is held, the result stays in the agent's spool"

rm -f "$WORK/disk/fill"
wait_for_log "$WORK/coordinator.log" "takes writes again" 20
run_status_within 60
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

# The disk stays full past --store-timeout: the campaign ends `error` for its client (exit 3),
# naming the database and the cause; its running task is cancelled; once space is back the
# campaign is marked error in the store, and the coordinator takes campaigns again.
kill -TERM "$COORD_PID"
for _ in $(seq 100); do kill -0 "$COORD_PID" 2>/dev/null || break; sleep 0.1; done
: >"$WORK/coordinator.log"
"$FLEETBURN" serve --bind "$ENDPOINT" --db "$WORK/disk/fb.db" --heartbeat-ms 200 --liveness 5 \
    --store-timeout 3s >>"$WORK/coordinator.log" 2>&1 &
PIDS+=("$!")
wait_for_log "$WORK/coordinator.log" "agent n1 registered" 30
cat >"$WORK/long.yaml" <<'YAML'
name: full-for-good
stages:
  - name: long
    workload: sleep
    params: {duration: 60s}
YAML
run_in_background "$WORK/long.yaml" run2
started=$(grep -c "started sleep" "$WORK/n1.log")
wait_for_lines "$WORK/n1.log" "started sleep" $((started + 1)) 20 "the second campaign's task did not start"
dd if=/dev/zero of="$WORK/disk/fill" bs=16k >/dev/null 2>&1 || true
# Something must be written for the failure to show: the agent's progress or a heartbeat's
# last-seen; the task's own start is already stored.
wait_for_log "$WORK/coordinator.log" "cannot write to the database" 30
run_status_within 30
[ $rc -eq 3 ] || fail "run exited $rc while the store stayed full, expected 3"
grep -qE "cannot write to the database $WORK/disk/fb.db for 3(\.0)?s" "$WORK/run2.log" \
    || fail "run does not name the database and the limit: $(cat "$WORK/run2.log")"
wait_for_log "$WORK/n1.log" "cancelling: cannot write to the database" 10
pass "store full past --store-timeout: run exits 3 naming the database; the task is cancelled"
rm -f "$WORK/disk/fill"
wait_for_log "$WORK/coordinator.log" "takes writes again" 20
python3 - "$WORK/disk/fb.db" <<'PY' || fail "the given-up campaign is not marked error"
import sqlite3, sys
rows = sqlite3.connect(sys.argv[1]).execute(
    "select state, verdict from campaigns where name = 'full-for-good'").fetchall()
assert rows == [("error", "error")], rows
PY
pass "space back: the given-up campaign is marked error in the store"
