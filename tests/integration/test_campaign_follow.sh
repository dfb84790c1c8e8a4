#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Detaching and re-attaching: Ctrl-C during `run --coordinator` detaches (exit 130, the message
# says how to follow or cancel) and cancels nothing: the task keeps running and a later `fleetburn
# follow ID` sees the campaign finish (exit 0, the summary). `follow` without an id takes the one
# campaign running and exits 1 when a task fails; with two running it asks for an id (exit 2); a
# finished campaign cannot be followed (the coordinator's error, exit 3).
. "$(dirname "$0")/lib.sh"

start_coordinator
start_agents n1 n2

# --- Ctrl-C detaches ---------------------------------------------------------------------------
nap_campaign "$WORK/nap.yaml" nap n1 "duration: 5s"
run_in_background "$WORK/nap.yaml"
id=$(submitted_id "$WORK/run.log")
wait_for_log "$WORK/n1.log" "started sleep \(pid [0-9]+"
worker=$(sed -n 's/.*started sleep (pid \([0-9]*\).*/\1/p' "$WORK/n1.log" | head -1)
kill -INT "$RUN_PID"
status_of rc wait "$RUN_PID"
[ $rc -eq 130 ] || fail "run exited $rc after Ctrl-C, expected 130"
grep -qF "detached; campaign $id keeps running. Follow it with \`fleetburn follow $id --coordinator $ENDPOINT\`, cancel it with \`fleetburn cancel $id --coordinator $ENDPOINT\`" "$WORK/run.log" \
    || fail "the detach message is not there: $(cat "$WORK/run.log")"
sleep 0.5
kill -0 "$worker" 2>/dev/null || fail "the task stopped when the client detached"
grep -q "cancelling" "$WORK/n1.log" && fail "the agent was told to cancel: $(grep cancelling "$WORK/n1.log")"
"$FLEETBURN" campaigns --coordinator "$ENDPOINT" | grep -qE "^$id +nap +running " \
    || fail "the campaign is not running after the detach"
pass "Ctrl-C detaches (130, how to follow or cancel); the campaign keeps running"

"$FLEETBURN" follow "$id" --coordinator "$ENDPOINT" >"$WORK/follow.out" 2>"$WORK/follow.log" \
    || fail "follow exited $? for a campaign that passes: $(cat "$WORK/follow.log")"
grep -q "following campaign $id on $ENDPOINT (running)" "$WORK/follow.log" || fail "follow: $(cat "$WORK/follow.log")"
grep -q "campaign finished after" "$WORK/follow.log" || fail "follow did not see the end: $(cat "$WORK/follow.log")"
grep -qE "^verdict +PASS" "$WORK/follow.out" || fail "follow printed no summary: $(cat "$WORK/follow.out")"
pass "a later follow sees the campaign finish (exit 0, the summary)"

expect_exit 3 "$WORK/ended.log" "$FLEETBURN" follow "$id" --coordinator "$ENDPOINT"
grep -q "campaign $id is not running: it is finished (pass)" "$WORK/ended.log" || fail "follow of an ended campaign: $(cat "$WORK/ended.log")"
grep -qE "^verdict +PASS" "$WORK/ended.log" || fail "follow of an ended campaign printed no summary: $(cat "$WORK/ended.log")"
pass "a finished campaign cannot be followed (exit 3, the coordinator says why and sends its summary)"

# --- follow without an id; a failing task --------------------------------------------------------
nap_campaign "$WORK/bad.yaml" bad-nap n2 "duration: 3s, exit: fail"
"$FLEETBURN" run --coordinator "$ENDPOINT" "$WORK/bad.yaml" >/dev/null 2>"$WORK/run2.log" &
PIDS+=("$!")
wait_for_log "$WORK/run2.log" "^submitted"
expect_exit 1 "$WORK/follow2.log" "$FLEETBURN" follow --coordinator "$ENDPOINT"
grep -q "following campaign .* (running)" "$WORK/follow2.log" || fail "follow without id: $(cat "$WORK/follow2.log")"
pass "follow without an id follows the one running and exits 1 when a task fails"

"$FLEETBURN" run --coordinator "$ENDPOINT" "$WORK/nap.yaml" >/dev/null 2>"$WORK/run3.log" &
PIDS+=("$!")
"$FLEETBURN" run --coordinator "$ENDPOINT" "$WORK/bad.yaml" >/dev/null 2>"$WORK/run4.log" &
PIDS+=("$!")
wait_for_log "$WORK/run3.log" "^submitted"
wait_for_log "$WORK/run4.log" "^submitted"
expect_exit 2 "$WORK/several.log" "$FLEETBURN" follow --coordinator "$ENDPOINT"
grep -q "several campaigns run: name one" "$WORK/several.log" || fail "several: $(cat "$WORK/several.log")"
pass "with two campaigns running, follow without an id asks for one (exit 2)"
