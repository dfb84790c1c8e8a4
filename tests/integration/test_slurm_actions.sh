#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# actions.slurm and nodes: slurm:... against a real Slurm: munged, slurmctld and one slurmd per
# node (tests/integration/slurm_lib.sh), whose NodeNames are the names of four real agents of a
# `fleetburn serve`. Bit flips injected into fb-n2's memtest (test-only, --allow-fault-injection)
# make it the bad node. Checked, as an operator would, with sinfo and the report:
#   - dry_run (the default) drains nothing and prints the plan;
#   - dry_run: false drains the bad node with the fleetburn reason; a node a person drained
#     passes and stays drained with the person's reason;
#   - the breaker refuses a drain over max_fraction, and says so on the timeline and in the log;
#   - a node fleetburn drained that passes a later campaign is resumed (and is idle again);
#   - nodes: slurm:burn selects the partition's nodes and slurm:idle its idle ones; the campaign
#     records what they resolved to, and keeps it through a coordinator restart; an empty
#     selection and an unreachable slurmctld are clear errors, and a campaign whose actions
#     cannot reach Slurm keeps its results;
#   - a coordinator killed while the actions run: the next one runs them when it resumes the
#     campaign.
# Skipped (77) unless root with munge, slurmctld, slurmd and slurm-client installed.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/slurm_lib.sh"
slurm_require

slurm_start "NodeName=fb-n1 NodeAddr=127.0.0.1 Port=@PORT@ CPUs=1
NodeName=fb-n2 NodeAddr=127.0.0.1 Port=@PORT@ CPUs=1
NodeName=fb-n3 NodeAddr=127.0.0.1 Port=@PORT@ CPUs=1
NodeName=fb-n4 NodeAddr=127.0.0.1 Port=@PORT@ CPUs=1
NodeName=fb-n5 NodeAddr=127.0.0.1 Port=@PORT@ CPUs=1
PartitionName=burn Nodes=fb-n[1-4] Default=YES State=UP
PartitionName=spare Nodes=fb-n5 State=UP" fb-n1 fb-n2 fb-n3 fb-n4 fb-n5
# fb-n5 (no agent) is out of service. Every node has a slurmd: slurmctld pings them in rounds, and
# a node without one would hold each round for its connect timeout (a resumed node waits for the
# next round to be seen responding).
scontrol update NodeName=fb-n5 State=DOWN Reason="spare, not cabled"
pass "slurmctld with a slurmd for each of fb-n[1-5]: $(sinfo --noheader --Node --format='%N %T' | tr '\n' ' ')"

has() { grep -qF -- "$2" "$1" || { cat "$1" >&2; fail "'$2' not in $1"; }; }

# sinfo and scontrol come from the coordinator's own configuration: --slurm-bin (else its PATH)
SLURM_BIN=$(dirname "$(command -v scontrol)")
status_of rc "$FLEETBURN" serve --slurm-bin bin --db "$WORK/x.db" >"$WORK/relative.out" 2>&1
[ $rc -eq 2 ] || fail "serve --slurm-bin bin exited $rc, expected 2"
has "$WORK/relative.out" "--slurm-bin: 'bin' is not an absolute path to a directory"
start_coordinator --slurm-bin "$SLURM_BIN"
declare -A AGENT
# (Re)starts agent NAME with the given options and waits for its registration.
agent() {
    local name=$1; shift
    if [ -n "${AGENT[$name]:-}" ]; then
        kill "${AGENT[$name]}"
        wait "${AGENT[$name]}" 2>/dev/null || true
    fi
    local before; before=$(grep -c "agent $name registered" "$WORK/coordinator.log" || true)
    start_agent "$name" "$@"
    AGENT[$name]=$AGENT_PID
    local i=0
    while [ "$(grep -c "agent $name registered" "$WORK/coordinator.log" || true)" -le "$before" ]; do
        i=$((i + 1)); [ $i -gt 200 ] && fail "agent $name did not register"
        sleep 0.1
    done
}
INJECT=(--allow-fault-injection --inject memtest.inject_bitflips=4)
agent fb-n1
agent fb-n2 "${INJECT[@]}"
agent fb-n3
agent fb-n4

# campaign NAME NODES ACTIONS: writes $WORK/NAME.yaml
campaign() {
    cat >"$WORK/$1.yaml" <<YAML
name: $1
nodes: $2
${3:+actions: $3}
stages:
  - name: dram
    workload: memtest
    timeout: 2m
    params: {size: 8MiB, passes: 1, patterns: [own_address]}
YAML
}
# run NAME EXPECTED_EXIT: runs it; sets ID, OUT (its summary) and ERR
run() {
    set +e
    "$FLEETBURN" run --coordinator "$ENDPOINT" "$WORK/$1.yaml" >"$WORK/$1.out" 2>"$WORK/$1.err"
    local rc=$?
    set -e
    OUT="$WORK/$1.out"; ERR="$WORK/$1.err"
    [ $rc -eq "$2" ] || { cat "$ERR" "$OUT" >&2; fail "$1 exited $rc, expected $2"; }
    ID=$(sed -n 's/^submitted .* as \([^ ]*\) to .*/\1/p' "$ERR")
}
state_is() { [ "$(slurm_state "$1")" = "$2" ] || fail "$1 is $(slurm_state "$1") ($(slurm_reason "$1")), expected $2"; }

# --- 1. the default is a dry run: the plan is printed, nothing changes in Slurm ----------------
campaign dry "slurm:burn" "{slurm: {}}"
run dry 1
has "$OUT" "nodes: slurm:burn is fb-n[1-4] (sinfo, at submission)"
has "$OUT" "actions.slurm (drain: yes, resume: yes, max_fraction: 50%, dry run): 4 node(s), 1 named by a bad part, 3 passed every stage"
has "$OUT" "dry run: would drain fb-n2: scontrol update NodeName=fb-n2 State=DRAIN Reason='fleetburn: $ID: fb-n2 dram: "
has "$OUT" "dry run: nothing was changed in Slurm"
state_is fb-n2 idle
stored=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(\"SELECT expr || ' ' || nodes FROM campaign_node_selections WHERE campaign_id = ?\", (sys.argv[2],)).fetchone()[0])" "$WORK/fb.db" "$ID")
[ "$stored" = "slurm:burn fb-n[1-4]" ] || fail "the campaign recorded '$stored'"
pass "dry run: fb-n2 would be drained and is still idle; slurm:burn recorded as fb-n[1-4]"

# --- 2. drain: the bad node, with fleetburn's reason; a person's drain is not touched ------------
scontrol update NodeName=fb-n3 State=DRAIN Reason="bad fan, ticket 42"
campaign drain "slurm:burn" "{slurm: {dry_run: false, max_fraction: 0.25}}"
run drain 1
DRAIN_ID=$ID
state_is fb-n2 drained
case "$(slurm_reason fb-n2)" in
"fleetburn: $DRAIN_ID: fb-n2 dram: "*) ;;
*) fail "fb-n2's reason is '$(slurm_reason fb-n2)'" ;;
esac
has "$OUT" "drained fb-n2 (now drained): Reason='fleetburn: $DRAIN_ID: fb-n2 dram: "
state_is fb-n3 drained
[ "$(slurm_reason fb-n3)" = "bad fan, ticket 42" ] || fail "fb-n3's reason is now '$(slurm_reason fb-n3)'"
has "$OUT" "fb-n3 passed but is drained with someone else's reason 'bad fan, ticket 42'; left drained"
pass "fb-n2 drained with reason '$(slurm_reason fb-n2)'; fb-n3 passed and keeps the person's drain"

# --- 3. the breaker: fb-n4 fails too; with fb-n2 still drained that is 2 of 4 > 25% ------------
agent fb-n4 "${INJECT[@]}"
campaign breaker "slurm:burn" "{slurm: {dry_run: false, max_fraction: 0.25}}"
run breaker 1
state_is fb-n4 idle
has "$OUT" "breaker: draining fb-n4 (1 node(s)) would leave 2 of the campaign's 4 nodes drained by fleetburn (1 already), 50%, over max_fraction 25%; no node drained"
has "$OUT" "fb-n2 is bad (fb-n2) and drained by fleetburn already"
grep -q "campaign $ID: slurm: breaker: draining fb-n4" "$WORK/coordinator.log" || fail "the breaker is not in the coordinator's log"
"$FLEETBURN" report "$ID" --db "$WORK/fb.db" >"$WORK/breaker.report"
has "$WORK/breaker.report" "breaker: draining fb-n4"
pass "breaker: fb-n4 not drained, said on the timeline, in the report and in the log"

# --- 4. resume: fb-n2 passes now; fleetburn drained it, so it is resumed; fb-n3 stays drained --
agent fb-n2
agent fb-n4
campaign resume "slurm:burn" "{slurm: {dry_run: false, max_fraction: 0.25}}"
run resume 0
# Slurm shows a node it just resumed not responding (idle*) until it pings its slurmd again
has "$OUT" "resumed fb-n2 (now idle"
has "$OUT" "fleetburn had drained it: 'fleetburn: $DRAIN_ID: fb-n2 dram: "
slurm_wait '[ "$(slurm_state fb-n2)" = idle ]' 10
[ "$(slurm_reason fb-n2)" = none ] || fail "fb-n2 still has reason '$(slurm_reason fb-n2)'"
state_is fb-n3 drained
[ "$(slurm_reason fb-n3)" = "bad fan, ticket 42" ] || fail "fb-n3's reason is now '$(slurm_reason fb-n3)'"
pass "fb-n2 resumed (idle); fb-n3 still drained for the fan"

# --- 5. slurm:idle takes the idle nodes only ------------------------------------------------------
campaign idle "slurm:idle"
run idle 0
has "$OUT" "nodes: slurm:idle is fb-n[1-2,4] (sinfo, at submission)"
has "$OUT" "tasks     3: 3 pass"
pass "slurm:idle selected fb-n[1-2,4] (fb-n3 is drained, fb-n5 down)"

# --- 6. a coordinator restart keeps what the selection resolved to -------------------------------
# slurm:idle is fb-n[1-2,4] at submission; the coordinator is killed during the first stage and
# fb-n3 made idle before it comes back: the second stage still runs on fb-n[1-2,4].
cat >"$WORK/restart.yaml" <<'YAML'
name: restart
nodes: slurm:idle
stages:
  - {name: long, workload: sleep, params: {duration: 4s}}
  - {name: after, workload: sleep, params: {duration: 200ms}}
YAML
"$FLEETBURN" run --coordinator "$ENDPOINT" "$WORK/restart.yaml" >"$WORK/restart.out" 2>"$WORK/restart.err" &
RUN_PID=$!
PIDS+=("$RUN_PID")
wait_for_log "$WORK/fb-n1.log" "started sleep"
kill -KILL "$COORD_PID"
wait "$COORD_PID" 2>/dev/null || true
scontrol update NodeName=fb-n3 State=RESUME
slurm_wait '[ "$(slurm_state fb-n3)" = idle ]' 10
serve_in_background "$WORK/coordinator.log" --slurm-bin "$SLURM_BIN"
status_of rc wait "$RUN_PID"
[ $rc -eq 0 ] || { cat "$WORK/restart.err" >&2; fail "the resumed campaign exited $rc"; }
ID=$(sed -n 's/^submitted .* as \([^ ]*\) to .*/\1/p' "$WORK/restart.err")
after=$(python3 -c "
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute(\"SELECT t.nodes_json FROM tasks t JOIN stages s ON t.stage_id = s.id WHERE s.name = 'after' AND t.campaign_id = ?\", (sys.argv[2],))
print(','.join(sorted(n for (j,) in rows for n in json.loads(j))))" "$WORK/fb.db" "$ID")
[ "$after" = "fb-n1,fb-n2,fb-n4" ] || fail "after the restart the second stage ran on $after"
has "$WORK/restart.out" "nodes: slurm:idle is fb-n[1-2,4] (sinfo, at submission)"
pass "after a coordinator restart the campaign kept slurm:idle = fb-n[1-2,4] (Slurm now lists fb-n3 idle too)"

# --- 7. a selection Slurm has no node for ---------------------------------------------------------
campaign nosuch "slurm:nosuch"
run nosuch 3
has "$ERR" "cannot start the campaign: nodes: slurm:nosuch: Slurm lists no node in partition nosuch"
pass "an empty selection is refused (exit 3)"
status_of rc "$FLEETBURN" run --local 1 --db "$WORK/local.db" "$WORK/idle.yaml" >"$WORK/local.out" 2>&1
[ $rc -eq 2 ] || fail "run --local with slurm:idle exited $rc, expected 2"
has "$WORK/local.out" "nodes: slurm:... selects the nodes of a Slurm cluster, whose agents register with \`fleetburn serve\`; run it with --coordinator EP"
pass "run --local refuses a Slurm selection (exit 2)"

# --- 8. slurmctld gone: the campaign keeps its results; the error names the command -------------
kill "$SLURMCTLD_PID"
wait "$SLURMCTLD_PID" 2>/dev/null || true
campaign gone "fb-n1" "{slurm: {dry_run: false}}"
run gone 0
has "$OUT" "fb-n1  pass"
has "$OUT" "error: cannot ask Slurm about the campaign's nodes: \`$SLURM_BIN/sinfo --noheader --Node --format=%N|%T|%P|%E --nodes=fb-n1\` failed: exit status 1: "
has "$OUT" "no node drained or resumed"
campaign gone2 "slurm:burn"
run gone2 3
has "$ERR" "cannot start the campaign: nodes: slurm:burn: cannot ask Slurm: \`$SLURM_BIN/sinfo --noheader"
pass "without slurmctld: results kept, the failing sinfo named; slurm: selections refused (exit 3)"

# --- 9. the coordinator dies while the actions wait for Slurm: the next one runs them again ------
# (sinfo waits 9 s for the stopped slurmctld: the coordinator is killed during that wait)
campaign dies "fb-n1" "{slurm: {dry_run: false}}"
before=$(grep -c "stage dram finished" "$WORK/coordinator.log" || true)
"$FLEETBURN" run --coordinator "$ENDPOINT" "$WORK/dies.yaml" >"$WORK/dies.out" 2>"$WORK/dies.err" &
RUN_PID=$!
PIDS+=("$RUN_PID")
i=0
while [ "$(grep -c "stage dram finished" "$WORK/coordinator.log" || true)" -le "$before" ]; do
    i=$((i + 1)); [ $i -gt 300 ] && fail "the campaign's stage did not finish"
    sleep 0.1
done
sleep 1
kill -KILL "$COORD_PID"
wait "$COORD_PID" 2>/dev/null || true
serve_in_background "$WORK/coordinator.log" --slurm-bin "$SLURM_BIN"
status_of rc wait "$RUN_PID"
[ $rc -eq 0 ] || { cat "$WORK/dies.err" >&2; fail "the campaign whose coordinator died exited $rc"; }
ID=$(sed -n 's/^submitted .* as \([^ ]*\) to .*/\1/p' "$WORK/dies.err")
grep -q "campaign $ID (dies) resumed" "$WORK/coordinator.log" || fail "campaign $ID was not resumed"
"$FLEETBURN" report "$ID" --db "$WORK/fb.db" >"$WORK/dies.report"
has "$WORK/dies.report" "error: cannot ask Slurm about the campaign's nodes"
[ "$(grep -c "actions.slurm (" "$WORK/dies.report")" -eq 1 ] || fail "the actions' lines are not there once"
pass "a coordinator killed during the actions: the next one resumed the campaign and ran them"
