#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `fleetburn cancel` from a second client: a long sleep campaign runs on n1; another client
# cancels it with a reason. The submitting client exits 3 saying the campaign was cancelled, the
# agent stops the task (its log says cancelled, the worker process is gone), and `fleetburn
# campaigns` lists the campaign `cancelled` (text and JSON). Cancelling it again, or a campaign
# the coordinator does not know, is the coordinator's error with exit 3; a malformed id exits 2.
. "$(dirname "$0")/lib.sh"

start_coordinator
start_agents n1

nap_campaign "$WORK/long.yaml" long-nap n1 "duration: 2m" 5m
run_in_background "$WORK/long.yaml"
wait_for_log "$WORK/run.log" "^submitted .*long.yaml as [^ ]+ to"
id=$(sed -n 's/^submitted .* as \([^ ]*\) to .*/\1/p' "$WORK/run.log")
wait_for_log "$WORK/n1.log" "started sleep \(pid [0-9]+"
worker=$(sed -n 's/.*started sleep (pid \([0-9]*\).*/\1/p' "$WORK/n1.log" | head -1)
kill -0 "$worker" || fail "the sleep worker $worker is not running"

"$FLEETBURN" campaigns --coordinator "$ENDPOINT" >"$WORK/list1.txt"
grep -E "^$id +long-nap +running +- " "$WORK/list1.txt" | grep -q " n1$" \
    || fail "the running campaign is not listed running on n1: $(cat "$WORK/list1.txt")"

"$FLEETBURN" cancel "$id" --coordinator "$ENDPOINT" --reason "rack needed elsewhere" \
    >"$WORK/cancel.out" 2>"$WORK/cancel.log" || fail "cancel failed: $(cat "$WORK/cancel.log")"
grep -q "campaign $id cancelled" "$WORK/cancel.out" || fail "cancel says: $(cat "$WORK/cancel.out")"
status_of rc wait "$RUN_PID"
[ $rc -eq 3 ] || fail "the submitting client exited $rc after the cancel, expected 3"
grep -q "campaign $id was cancelled" "$WORK/run.log" || fail "run does not say cancelled: $(cat "$WORK/run.log")"
pass "cancel from a second client: the submitting client exits 3 saying the campaign was cancelled"

wait_for_log "$WORK/n1.log" "cancelling: cancelled by an operator: rack needed elsewhere" 10
for i in $(seq 50); do kill -0 "$worker" 2>/dev/null || break; sleep 0.1; done
kill -0 "$worker" 2>/dev/null && fail "the sleep worker $worker still runs after the cancel"
pass "the agent stopped the task (its log says cancelled, the worker is gone)"
# The campaign ends (and frees n1 for the next one) only once the cancelled task has reported.
python3 - "$WORK/coordinator.log" <<'PY' || fail "the campaign ended before its cancelled task reported"
import re, sys
lines = open(sys.argv[1]).read().splitlines()
result = next(i for i, l in enumerate(lines) if re.search(r"result .* from n1: error: cancelled", l))
end = next(i for i, l in enumerate(lines) if re.search(r"\) cancelled: error", l))
assert result < end, (result, end)
PY

"$FLEETBURN" campaigns --coordinator "$ENDPOINT" >"$WORK/list2.txt"
grep -qE "^$id +long-nap +cancelled +error " "$WORK/list2.txt" \
    || fail "the campaign is not listed cancelled: $(cat "$WORK/list2.txt")"
"$FLEETBURN" campaigns --coordinator "$ENDPOINT" --format json >"$WORK/list.json"
[ "$(json_q "$WORK/list.json" "[c['state'] for c in d['campaigns'] if c['id'] == '$id'][0]")" = cancelled ] \
    || fail "the JSON list does not say cancelled: $(cat "$WORK/list.json")"
python3 - "$WORK/fb.db" "$id" <<'PY' || fail "the store does not show the cancel"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
(state,), = db.execute("select state from campaigns where id = ?", (sys.argv[2],)).fetchall()
assert state == "cancelled", state
msgs = [m for (m,) in db.execute("select message from events where campaign_id = ?", (sys.argv[2],))]
assert any("rack needed elsewhere" in m for m in msgs), msgs
PY
pass "campaigns lists it cancelled (text and JSON); the reason is on its timeline"

expect_exit 3 "$WORK/again.log" "$FLEETBURN" cancel "$id" --coordinator "$ENDPOINT"
grep -q "campaign $id is not running: it is cancelled" "$WORK/again.log" || fail "second cancel: $(cat "$WORK/again.log")"
expect_exit 3 "$WORK/unknown.log" "$FLEETBURN" cancel 20990101-000000-beef --coordinator "$ENDPOINT"
grep -q "no campaign 20990101-000000-beef" "$WORK/unknown.log" || fail "unknown: $(cat "$WORK/unknown.log")"
expect_exit 3 "$WORK/none.log" "$FLEETBURN" cancel --coordinator "$ENDPOINT"
grep -q "no campaign is running" "$WORK/none.log" || fail "no id, none running: $(cat "$WORK/none.log")"
expect_exit 2 "$WORK/bad.log" "$FLEETBURN" cancel 'x;rm' --coordinator "$ENDPOINT"
grep -q "is not a campaign id" "$WORK/bad.log" || fail "malformed id: $(cat "$WORK/bad.log")"
pass "an ended or unknown campaign is the coordinator's error (exit 3); a malformed id exits 2"
