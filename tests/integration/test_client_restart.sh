#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `run --coordinator` outlives its coordinator: the coordinator is killed -9 while the campaign
# runs and started again on the same endpoint and database; it resumes the campaign, the client
# reconnects by itself, follows it again and prints the final summary (exit 0). With the
# coordinator killed and not restarted, `run --wait 3s` gives up after 3 s of silence (exit 3)
# saying how to follow the campaign later. A client that was away while its campaign finished
# (stopped across the restart) exits with the campaign's verdict; one whose campaign the restarted
# coordinator cannot resume (its stored text broken) prints why and exits 3.
. "$(dirname "$0")/lib.sh"

start_coordinator
start_agents n1

nap_campaign "$WORK/nap.yaml" nap n1 "duration: 5s"
run_in_background "$WORK/nap.yaml"
run_pid=$RUN_PID
id=$(submitted_id "$WORK/run.log")
wait_for_log "$WORK/n1.log" "task $id/.*started sleep"
kill_hard "$COORD_PID"
wait_for_log "$WORK/run.log" "lost the connection to $ENDPOINT" 10
sleep 1
kill -0 "$run_pid" || fail "the client exited when its coordinator died: $(cat "$WORK/run.log")"

serve_in_background "$WORK/coordinator2.log"
second_pid=$COORD_PID
wait_for_log "$WORK/coordinator2.log" "coordinator on"
wait_for_log "$WORK/run.log" "reconnected to $ENDPOINT; following campaign $id again" 10
status_of rc wait "$run_pid"
[ $rc -eq 0 ] || fail "the client exited $rc after the restart, expected 0: $(cat "$WORK/run.log")"
grep -q "campaign $id .* finished: pass" "$WORK/coordinator2.log" || fail "the restarted coordinator did not finish the campaign"
grep -qE "^verdict +PASS" "$WORK/run.out" || fail "no final summary: $(cat "$WORK/run.out")"
grep -q "campaign finished after" "$WORK/run.log" || fail "no end of progress: $(cat "$WORK/run.log")"
pass "run --coordinator follows its campaign through kill -9 and restart of the coordinator (exit 0, summary)"

# --- a coordinator that stays away ----------------------------------------------------------------
nap_campaign "$WORK/long.yaml" long n1 "duration: 30s"
run_in_background "$WORK/long.yaml" wait --wait 3s
run_pid=$RUN_PID
id=$(submitted_id "$WORK/wait.log")
wait_for_log "$WORK/n1.log" "task $id/.*started sleep"
kill_hard "$second_pid"
killed=$(date +%s.%N)
status_of rc wait "$run_pid"
took=$(python3 -c "import sys, time; print(round(time.time() - float(sys.argv[1]), 1))" "$killed")
[ $rc -eq 3 ] || fail "run exited $rc with its coordinator gone, expected 3: $(cat "$WORK/wait.log")"
grep -qF "coordinator $ENDPOINT silent for 3.0s; the campaign may still be running: \`fleetburn follow $id --coordinator $ENDPOINT\`" "$WORK/wait.log" \
    || fail "no clear message: $(cat "$WORK/wait.log")"
python3 -c "import sys; t = float(sys.argv[1]); sys.exit(0 if 1.5 <= t <= 8 else 1)" "$took" \
    || fail "run gave up after ${took}s, expected about 3 s"
pass "with the coordinator gone, run --wait 3s exits 3 after ${took}s saying how to follow later"

# --- a campaign that ended while the client was away -----------------------------------------------
restart() { # starts the coordinator again on the same endpoint and database; sets COORD_PID
    : >"$WORK/coordinator3.log"
    serve_in_background "$WORK/coordinator3.log"
    wait_for_log "$WORK/coordinator3.log" "coordinator on"
}
restart
wait_for_log "$WORK/coordinator3.log" "agent n1 registered" 20
"$FLEETBURN" cancel "$id" --coordinator "$ENDPOINT" >/dev/null # the long one, resumed: frees n1
nap_campaign "$WORK/short.yaml" short n1 "duration: 2s"
run_in_background "$WORK/short.yaml" away
run_pid=$RUN_PID
id=$(submitted_id "$WORK/away.log")
wait_for_log "$WORK/n1.log" "task $id/.*started sleep"
kill -STOP "$run_pid"
kill_hard "$COORD_PID"
restart
wait_for_log "$WORK/coordinator3.log" "campaign $id .* finished: pass" 30
kill -CONT "$run_pid"
status_of rc wait "$run_pid"
[ $rc -eq 0 ] || fail "the client away during the end exited $rc, expected 0: $(cat "$WORK/away.log")"
grep -q "campaign $id finished while this client was away: pass" "$WORK/away.log" \
    || fail "no word of the end: $(cat "$WORK/away.log")"
grep -qE "^verdict +PASS" "$WORK/away.out" || fail "the away client printed no summary: $(cat "$WORK/away.out")"
pass "a client away while its campaign finished prints its summary and exits with its verdict (0)"

# --- a campaign the restarted coordinator cannot resume ---------------------------------------------
run_in_background "$WORK/long.yaml" broken
run_pid=$RUN_PID
id=$(submitted_id "$WORK/broken.log")
wait_for_log "$WORK/n1.log" "task $id/.*started sleep"
kill_hard "$COORD_PID"
python3 -c "import sqlite3, sys; db = sqlite3.connect(sys.argv[1]); db.execute(\"update campaigns set yaml = 'stages: [' where id = ?\", (sys.argv[2],)); db.commit()" "$WORK/fb.db" "$id"
restart
status_of rc wait "$run_pid"
[ $rc -eq 3 ] || fail "the client of a campaign that cannot be resumed exited $rc, expected 3: $(cat "$WORK/broken.log")"
grep -q "campaign $id is not running: it is interrupted" "$WORK/broken.log" \
    || fail "the client does not say the campaign was interrupted: $(cat "$WORK/broken.log")"
pass "a campaign the restarted coordinator cannot resume: the client says it is interrupted (exit 3)"
