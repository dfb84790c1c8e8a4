#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Several campaigns at once: two campaigns on disjoint nodes (n1, n2) run at the same time; a
# third that selects both is refused naming each holder and its nodes (exit 3, nothing runs);
# with --queue it is accepted as queued, says whose nodes it waits for, and runs once both have
# finished (exit 0). A queued campaign cancelled while it waits never runs; its client exits 3.
. "$(dirname "$0")/lib.sh"

start_coordinator
start_agents n1 n2

for n in n1 n2; do
    nap_campaign "$WORK/$n.yaml" "only-$n" "$n" "duration: 4s"
done
nap_campaign "$WORK/both.yaml" both "n[1-2]" "duration: 300ms"

run_in_background "$WORK/n1.yaml" run-n1
pid1=$RUN_PID
run_in_background "$WORK/n2.yaml" run-n2
pid2=$RUN_PID
id1=$(submitted_id "$WORK/run-n1.log")
id2=$(submitted_id "$WORK/run-n2.log")
wait_for_log "$WORK/n1.log" "task $id1/.*started sleep"
wait_for_log "$WORK/n2.log" "task $id2/.*started sleep"
"$FLEETBURN" campaigns --coordinator "$ENDPOINT" >"$WORK/list.txt"
grep -qE "^$id1 +only-n1 +running .* n1$" "$WORK/list.txt" || fail "campaign 1 not running on n1: $(cat "$WORK/list.txt")"
grep -qE "^$id2 +only-n2 +running .* n2$" "$WORK/list.txt" || fail "campaign 2 not running on n2: $(cat "$WORK/list.txt")"
pass "two campaigns on disjoint nodes run at once"

status_of rc "$FLEETBURN" run --coordinator "$ENDPOINT" "$WORK/both.yaml" >/dev/null 2>"$WORK/busy.log"
[ $rc -eq 3 ] || fail "an overlapping campaign exited $rc, expected 3: $(cat "$WORK/busy.log")"
grep -q "busy: " "$WORK/busy.log" || fail "the refusal does not say busy: $(cat "$WORK/busy.log")"
grep -q "campaign $id1 holds n1" "$WORK/busy.log" || fail "the refusal does not name $id1 and n1: $(cat "$WORK/busy.log")"
grep -q "campaign $id2 holds n2" "$WORK/busy.log" || fail "the refusal does not name $id2 and n2: $(cat "$WORK/busy.log")"
grep -q "^submitted" "$WORK/busy.log" && fail "a refused campaign was said submitted"
[ "$(grep -c "started sleep" "$WORK/n1.log")" = 1 ] || fail "the refused campaign ran something"
pass "an overlapping campaign is refused naming the holders and nodes (exit 3)"

run_in_background "$WORK/both.yaml" queued --queue
pid3=$RUN_PID
wait_for_log "$WORK/queued.log" "^queued: waiting for nodes held by "
grep -q "campaign $id1 (n1)" "$WORK/queued.log" && grep -q "campaign $id2 (n2)" "$WORK/queued.log" \
    || fail "the queued message does not name both holders: $(cat "$WORK/queued.log")"
id3=$(sed -n 's/^submitted .* as \([^ ]*\) to .*/\1/p' "$WORK/queued.log")
[ -n "$id3" ] || fail "the queued campaign was not said submitted: $(cat "$WORK/queued.log")"
"$FLEETBURN" campaigns --coordinator "$ENDPOINT" | grep -qE "^$id3 +both +queued " \
    || fail "the queued campaign is not listed queued"
# A second queued campaign, cancelled while it waits: its client exits 3, it never runs.
run_in_background "$WORK/both.yaml" queued2 --queue
pid4=$RUN_PID
wait_for_log "$WORK/queued2.log" "^queued: waiting for nodes held by "
id4=$(sed -n 's/^submitted .* as \([^ ]*\) to .*/\1/p' "$WORK/queued2.log")
"$FLEETBURN" cancel "$id4" --coordinator "$ENDPOINT" >"$WORK/cancel4.out" 2>&1 || fail "cancel of a queued campaign: $(cat "$WORK/cancel4.out")"
status_of rc wait "$pid4"
[ $rc -eq 3 ] || fail "the cancelled queued campaign's client exited $rc, expected 3"
grep -q "campaign $id4 was cancelled" "$WORK/queued2.log" || fail "no word of the cancel: $(cat "$WORK/queued2.log")"
pass "a queued campaign cancelled while it waits ends its client with 3"

for pid in "$pid1" "$pid2"; do wait "$pid" || fail "a disjoint campaign failed"; done
status_of rc wait "$pid3"
[ $rc -eq 0 ] || fail "the queued campaign exited $rc, expected 0: $(cat "$WORK/queued.log")"
grep -q "campaign $id3 leaves the queue" "$WORK/queued.log" || fail "no word of leaving the queue"
python3 - "$WORK/fb.db" "$id1" "$id2" "$id3" "$id4" <<'PY' || fail "the queued campaign did not wait for the others"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
def span(cid):
    return db.execute("select started_ms, finished_ms, state, verdict from campaigns where id = ?",
                      (cid,)).fetchone()
a, b, c = (span(i) for i in sys.argv[2:5])
assert all(x[2:] == ("finished", "pass") for x in (a, b, c)), (a, b, c)
assert c[0] >= max(a[1], b[1]), (a, b, c)
assert db.execute("select count(*) from campaigns where id = ?", (sys.argv[5],)).fetchone()[0] == 0
PY
pass "with --queue it waits for the held nodes and runs after (exit 0)"
