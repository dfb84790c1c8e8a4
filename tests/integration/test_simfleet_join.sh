#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Several fleetburn-simfleet processes make one fleet on a `fleetburn serve` started by itself,
# with CURVE keys: one agent-only process (--no-submit, sim-000 ... sim-063) and one that runs
# sim-064 ... sim-127, waits until the coordinator lists all 128 alive and submits. The campaign
# (a node-local stage, a pairs stage across both processes) ends with every task's result stored,
# exactly the faulty node failed, pairs judged across the processes' agents; the agent-only
# process stops on SIGTERM with status 0 and its agents say goodbye; options that do not go
# together exit 2; the coordinator runs with two ZeroMQ I/O threads. Every process and the work directory are removed at the end (lib.sh).
. "$(dirname "$0")/lib.sh"


# Keys: the coordinator's; one agent key for sim-[000-127] (a nodes: line); an operator key.
make_fleet_keys "sim-[000-127]"
K="$WORK/keys"

CAMPAIGN="$FB_SRC/tests/fixtures/campaigns/sim-scale.yaml"
cat >"$WORK/faults.yaml" <<'YAML'
seed: 3
false_fail_rate: 0
faults:
  - {node: sim-017, kind: hard}
YAML

# Two ZeroMQ I/O threads (serve --io-threads): the handshakes spread over both.
start_coordinator --keys "$K" --max-connections-per-address 0 --io-threads 2
grep -q "2 ZeroMQ I/O threads" "$WORK/coordinator.log" || fail "the coordinator did not announce 2 I/O threads"
io_threads=$(cat /proc/"$COORD_PID"/task/*/comm 2>/dev/null | grep -c '^ZMQbg/IO/') || true
[ "$io_threads" = 2 ] || fail "the coordinator runs $io_threads ZeroMQ I/O threads, not 2"
KEYS=(--key "$WORK/agent.key" --server-key "$K/coordinator.pub")

# The agent-only half, starting its agents 16 at a time (--connect-window).
"$SIMFLEET" --coordinator "$ENDPOINT" "${KEYS[@]}" --agents 64 --first 0 --fleet 128 \
    --faults "$WORK/faults.yaml" --no-submit --delay-ms 0-5 --stats "$WORK/a.stats" --connect-window 16 \
    >"$WORK/a.out" 2>"$WORK/a.log" &
A_PID=$!
PIDS+=("$A_PID")

# The submitting half: waits for the whole fleet in the coordinator's database, then submits.
status_of rc timeout 120 "$SIMFLEET" --coordinator "$ENDPOINT" "${KEYS[@]}" --operator-key "$WORK/operator.key" \
    --agents 64 --first 64 --fleet 128 --faults "$WORK/faults.yaml" --delay-ms 0-5 \
    --campaign "$CAMPAIGN" --db "$WORK/fb.db" --coordinator-pid "$COORD_PID" \
    --report-json "$WORK/report.json" --stats "$WORK/b.stats" >"$WORK/b.out" 2>"$WORK/b.log"
[ $rc -eq 1 ] || fail "the submitting simfleet exited $rc, expected 1 (sim-017 fails)"
grep -q "lists all 128 agents of the fleet alive" "$WORK/b.log" || fail "it did not wait for the fleet"
grep -q "^registered_unix_ms=" "$WORK/a.stats" || fail "the agent-only process wrote no registration time"
grep -q "the other 48 start as agents register" "$WORK/a.log" || fail "--connect-window 16 did not hold agents back"
grep -q "^fleet_registered_unix_ms=" "$WORK/b.stats" || fail "no fleet registration time"
grep -q "^coordinator_peak_rss_mb=" "$WORK/b.stats" || fail "no coordinator memory from --coordinator-pid"
grep -qE "refused (a connection|registration)" "$WORK/coordinator.log" && fail "an agent was refused"
pass "two simfleet processes joined one keyed coordinator; the second counted 128 and submitted"

# Every task of both stages has its result(s) stored; node-local fails exactly sim-017; a pair
# fails exactly when it holds sim-017, and pairs mix the two processes' agents.
[ "$(json_q "$WORK/report.json" 'len(d["stages"][0]["tasks"])')" = 128 ] || fail "node-local tasks"
missing=$(json_q "$WORK/report.json" '[t["nodes"] for s in d["stages"] for t in s["tasks"]
    if len(t["results"]) != len(t["nodes"])]')
[ "$missing" = "[]" ] || fail "tasks without every result stored: $missing"
failed=$(json_q "$WORK/report.json" \
    '[t["nodes"] for t in d["stages"][0]["tasks"] if t["verdict"] != "pass"]')
[ "$failed" = "[['sim-017']]" ] || fail "node-local stage failed $failed, expected [['sim-017']]"
[ "$(json_q "$WORK/report.json" 'len(d["stages"][1]["tasks"])')" = 64 ] || fail "pair tasks"
wrong=$(json_q "$WORK/report.json" '[t["nodes"] for t in d["stages"][1]["tasks"]
    if (t["verdict"] == "pass") == ("sim-017" in t["nodes"])]')
[ "$wrong" = "[]" ] || fail "pairs judged wrongly: $wrong"
mixed=$(json_q "$WORK/report.json" 'sum(1 for t in d["stages"][1]["tasks"]
    if len({int(n[4:]) // 64 for n in t["nodes"]}) == 2)')
[ "$mixed" -ge 1 ] || fail "no pair across the two processes"
pass "every result stored; sim-017 failed alone; $mixed pairs across the processes judged alike"

# The agent-only process: SIGTERM is its normal end (status 0); its agents say goodbye.
kill -TERM "$A_PID"
status_of rc wait "$A_PID"
[ $rc -eq 0 ] || fail "the agent-only simfleet exited $rc on SIGTERM, expected 0"
for _ in $(seq 1 50); do
    "$FLEETBURN" nodes --db "$WORK/fb.db" >"$WORK/nodes.txt"
    [ "$(grep -cE '^sim-0(0[0-9]|[1-5][0-9]|6[0-3]) +gone' "$WORK/nodes.txt")" = 64 ] && break
    sleep 0.1
done
[ "$(grep -cE '^sim-0(0[0-9]|[1-5][0-9]|6[0-3]) +gone' "$WORK/nodes.txt")" = 64 ] \
    || fail "the agent-only process's 64 agents are not all gone: $(head -5 "$WORK/nodes.txt")"
[ "$(grep -c '^sim-' "$WORK/nodes.txt")" = 128 ] || fail "fleetburn nodes does not list 128 agents"
pass "the agent-only process stopped on SIGTERM with status 0, its 64 agents gone"

# Options that do not go together exit 2 with a message.
F=(--faults "$WORK/faults.yaml")
expect_simfleet_usage "--first + --agents is more than --fleet" --coordinator "$ENDPOINT" --agents 64 \
    --first 100 --fleet 128 "${F[@]}" --no-submit
expect_simfleet_usage "--key and --server-key go together" --coordinator "$ENDPOINT" --agents 4 \
    --key "$WORK/agent.key" "${F[@]}" --no-submit
expect_simfleet_usage "--no-submit runs agents only" --coordinator "$ENDPOINT" --agents 4 "${F[@]}" \
    --no-submit --campaign "$CAMPAIGN"
expect_simfleet_usage "--db (the database of the coordinator" --coordinator "$ENDPOINT" --agents 4 \
    "${F[@]}" --campaign "$CAMPAIGN" --report-json "$WORK/x.json"
expect_simfleet_usage "--operator-key is required" --coordinator "$ENDPOINT" "${KEYS[@]}" --agents 4 \
    "${F[@]}" --campaign "$CAMPAIGN" --report-json "$WORK/x.json" --db "$WORK/fb.db"
expect_simfleet_usage "go with --coordinator" --agents 4 --first 2 "${F[@]}" \
    --campaign "$CAMPAIGN" --report-json "$WORK/x.json"
expect_simfleet_usage "set the others on fleetburn serve" --coordinator "$ENDPOINT" --agents 4 --curve \
    "${F[@]}" --no-submit
pass "options that do not go together exit 2 with a message"
ls -d "$WORK"/fleetburn-simfleet-* 2>/dev/null && fail "a joined simfleet made a work directory"
pass "nothing left behind by the joined processes"
