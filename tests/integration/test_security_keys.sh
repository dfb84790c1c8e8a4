#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The keyed control plane with real processes and real CURVE: keys are made with `fleetburn
# keygen`; an unknown agent key is refused and never appears in `fleetburn nodes`; a valid key
# that claims another node's name is refused while the real node finishes its task; a client
# without an operator key cannot submit and nothing runs; a plaintext peer gets nothing; a node
# posting a result or an event for another node's task changes nothing; an agent pinned to another
# coordinator key never registers; a key removed and
# reloaded with SIGHUP drops its agent, and only its agent (the descriptor a departed node had may
# belong to another peer by then); serving a non-loopback address without keys is refused.
. "$(dirname "$0")/lib.sh"
PEER="$FB_BIN/bin/fb_peer"
K="$WORK/keys"
mkdir -p "$K/agents" "$K/operators" "$WORK/own"

# --- keygen --------------------------------------------------------------------------------
"$FLEETBURN" keygen "$K/coordinator" >/dev/null
for n in n1 n2 n5 n6; do "$FLEETBURN" keygen "$K/agents/$n" >/dev/null; done
"$FLEETBURN" keygen "$K/operators/alice" >/dev/null
"$FLEETBURN" keygen "$WORK/own/rogue" >/dev/null
[ "$(stat -c %a "$K/coordinator")" = 600 ] || fail "secret key mode is $(stat -c %a "$K/coordinator"), expected 600"
grep -q '^public-key: ' "$K/coordinator.pub" || fail "no public key in coordinator.pub"
grep -q 'secret-key' "$K/coordinator.pub" && fail "the public file holds the secret key"
before=$(sha256sum "$K/coordinator")
status_of rc "$FLEETBURN" keygen "$K/coordinator" 2>"$WORK/keygen.err"
[ $rc -eq 2 ] || fail "keygen over an existing key exited $rc, expected 2"
grep -q "never overwritten" "$WORK/keygen.err" || fail "keygen refusal does not say why: $(cat "$WORK/keygen.err")"
[ "$(sha256sum "$K/coordinator")" = "$before" ] || fail "keygen overwrote an existing key"
pass "keygen writes a 0600 secret and a .pub, and never overwrites"
# Secret keys of the agents and operators live with them, not in the coordinator's directory.
for n in n1 n2 n5 n6; do mv "$K/agents/$n" "$WORK/own/$n"; done
mv "$K/operators/alice" "$WORK/own/alice"
SK="--server-key $K/coordinator.pub"

# --- no keys, no network ---------------------------------------------------------------------
status_of rc "$FLEETBURN" serve --bind "tcp://0.0.0.0:$(free_port)" --db "$WORK/x.db" 2>"$WORK/insecure.err"
[ $rc -eq 2 ] || fail "serve on 0.0.0.0 without keys exited $rc, expected 2"
grep -q "fleetburn keygen" "$WORK/insecure.err" || fail "the refusal does not say how to make keys"
pass "serve without keys refuses a non-loopback address"

start_coordinator --keys "$K"
start_agent n1 --key "$WORK/own/n1" $SK
wait_for_log "$WORK/coordinator.log" "agent n1 registered"
pass "an agent with its key registers"

# --- an unknown key, and a plaintext agent ---------------------------------------------------
start_agent n3 --key "$WORK/own/rogue" $SK
wait_for_log "$WORK/coordinator.log" "refused a connection from 127.0.0.1: unknown key"
grep -qF "unknown key $(sed -n 's/^public-key: //p' "$WORK/own/rogue.pub")" "$WORK/coordinator.log" \
    || fail "the refusal does not name the key"
wait_for_log "$WORK/n3.log" "refused the connection: the coordinator does not know this key"
start_agent n4
wait_for_log "$WORK/n4.log" "refused the connection: .*give --key and --server-key"
# n2's own key, but pinned to a coordinator key that is not this coordinator's
start_agent n2 --key "$WORK/own/n2" --server-key "$WORK/own/rogue.pub" --spool "$WORK/spool-n2-pinned"
wait_for_log "$WORK/n2.log" "is --server-key the coordinator's public key"
kill "$AGENT_PID"
"$FLEETBURN" nodes --db "$WORK/fb.db" >"$WORK/nodes.txt"
grep -qE '^n1 ' "$WORK/nodes.txt" || fail "n1 missing from nodes: $(cat "$WORK/nodes.txt")"
grep -qE '^n[34] ' "$WORK/nodes.txt" && fail "a refused agent is listed: $(cat "$WORK/nodes.txt")"
pass "an unknown key and a plaintext agent are refused in the handshake and never listed"

# --- clients ---------------------------------------------------------------------------------
cat >"$WORK/campaign.yaml" <<'YAML'
name: keyed
nodes: n1
stages:
  - name: hold
    workload: sleep
    timeout: 1m
    params: {duration: 4s, exit: fail}
YAML
campaigns() { python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*) from campaigns').fetchone()[0])" "$WORK/fb.db"; }
status_of rc "$FLEETBURN" run --coordinator "$ENDPOINT" "$WORK/campaign.yaml" >/dev/null 2>"$WORK/nokey.err"
[ $rc -eq 3 ] || fail "run without a key exited $rc, expected 3 ($(cat "$WORK/nokey.err"))"
grep -q "refused the connection" "$WORK/nokey.err" || fail "no clear message without a key: $(cat "$WORK/nokey.err")"
status_of rc "$FLEETBURN" run --coordinator "$ENDPOINT" --key "$WORK/own/n2" $SK "$WORK/campaign.yaml" >/dev/null 2>"$WORK/agentkey.err"
[ $rc -eq 3 ] || fail "run with an agent's key exited $rc, expected 3"
grep -q "not authorised" "$WORK/agentkey.err" || fail "no clear message for a non-operator key: $(cat "$WORK/agentkey.err")"
[ "$(campaigns)" = 0 ] || fail "a refused client started a campaign"
pass "clients without an operator key cannot submit (exit 3) and nothing runs"

# --- an operator runs a campaign; imposters and forgers change nothing ------------------------
"$FLEETBURN" run --coordinator "$ENDPOINT" --key "$WORK/own/alice" $SK "$WORK/campaign.yaml" \
    >"$WORK/run.out" 2>"$WORK/run.log" &
run_pid=$!
PIDS+=("$run_pid")
wait_for_log "$WORK/n1.log" "started sleep"
task=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(\"select id from tasks where state='running'\").fetchone()[0])" "$WORK/fb.db")
# n2's valid key claims n1's name
"$AGENT" --coordinator "$ENDPOINT" --name n1 --spool "$WORK/spool-imposter" --key "$WORK/own/n2" $SK \
    >"$WORK/imposter.log" 2>&1 && fail "the imposter agent was not refused"
grep -q "may not register as node n1" "$WORK/imposter.log" || fail "the imposter's log does not say why"
# n2 registers as itself and posts a pass for n1's task (under n1's result id and its own), and an event
"$PEER" --coordinator "$ENDPOINT" --name n2 --key "$WORK/own/n2" $SK \
    --result "$task,$task,pass" --result "$task,$task@n2,pass" --event "$task" --wait-ms 1500 >"$WORK/forger.out"
grep -q "welcome accepted" "$WORK/forger.out" || fail "n2 could not register: $(cat "$WORK/forger.out")"
grep -q "^ack" "$WORK/forger.out" && fail "the coordinator acknowledged a forged result: $(cat "$WORK/forger.out")"
status_of rc wait "$run_pid"
[ $rc -eq 1 ] || fail "the campaign exited $rc, expected 1 (n1's task fails)"
q() { python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchone()[0])" "$WORK/fb.db" "$1"; }
[ "$(q "select verdict from tasks where id='$task'")" = fail ] || fail "n1's task is not 'fail'"
[ "$(q "select count(*) from results where node='n2'")" = 0 ] || fail "a forged result was stored"
[ "$(q "select count(*) from results where task_id='$task'")" = 1 ] || fail "n1's own result is not stored once"
[ "$(q "select count(*) from events where node='n2' and kind='log'")" = 0 ] || fail "a forged event was stored"
grep -q "dropped a result from n2 for task $task" "$WORK/coordinator.log" || fail "the forged result was not logged"
pass "an imposter is refused, a forged result and event change nothing, n1 finishes its task"

# --- the same through the client's configuration file ------------------------------------------
cat >"$WORK/quick.yaml" <<'YAML'
name: quick
nodes: n1
stages:
  - {name: nap, workload: sleep, timeout: 1m, params: {duration: 200ms}}
YAML
printf 'coordinator = %s\nkey = %s\nserver_key = %s\n' "$ENDPOINT" "$WORK/own/alice" "$K/coordinator.pub" >"$WORK/client.conf"
chmod 600 "$WORK/client.conf"
"$FLEETBURN" run --config "$WORK/client.conf" "$WORK/quick.yaml" >/dev/null 2>"$WORK/conf-run.log" \
    || fail "run with the client configuration failed: $(cat "$WORK/conf-run.log")"
chmod 666 "$WORK/client.conf"
status_of rc "$FLEETBURN" run --config "$WORK/client.conf" "$WORK/quick.yaml" >/dev/null 2>"$WORK/conf-bad.log"
[ $rc -eq 2 ] || fail "a world-writable client configuration was used (exit $rc)"
grep -q "writable" "$WORK/conf-bad.log" || fail "no reason for refusing the configuration: $(cat "$WORK/conf-bad.log")"
pass "the client configuration gives coordinator and keys; a world-writable one is refused"

# --- SIGHUP: a removed key's agent is dropped ---------------------------------------------------
start_agent n2 --key "$WORK/own/n2" $SK
# its own log: the coordinator's already says "agent n2 registered" of the forger above
wait_for_log "$WORK/n2.log" "registered with .* as n2"
rm "$K/agents/n2.pub"
kill -HUP "$COORD_PID"
wait_for_log "$WORK/coordinator.log" "agent n2: its key is no longer allowed"
wait_for_log "$WORK/n2.log" "the coordinator does not know this key"
"$FLEETBURN" nodes --db "$WORK/fb.db" | grep -E '^n2 ' | grep -q lost || fail "n2 not lost after its key was removed"
pass "SIGHUP with a removed key drops its agent, and it cannot come back"

# --- a revoked node's old descriptor may be another peer's by now: that peer keeps its connection
"$PEER" --coordinator "$ENDPOINT" --name n6 --key "$WORK/own/n6" $SK --wait-ms 200 >"$WORK/n6.out"
grep -q "welcome accepted" "$WORK/n6.out" || fail "n6 could not register: $(cat "$WORK/n6.out")"
start_agent n5 --key "$WORK/own/n5" $SK # the lowest free descriptor: likely the one n6 had
wait_for_log "$WORK/n5.log" "registered with .* as n5"
rm "$K/agents/n6.pub"
kill -HUP "$COORD_PID"
wait_for_log "$WORK/coordinator.log" "agent n6: its key is no longer allowed"
sleep 1.5
grep -E "agent n5 (reconnected|lost)" "$WORK/coordinator.log" &&
    fail "revoking n6's key cut n5's connection"
[ "$(grep -c "registered with .* as n5" "$WORK/n5.log")" = 1 ] || fail "n5 had to register again: $(cat "$WORK/n5.log")"
pass "revoking a departed node's key cuts no other peer's connection"
