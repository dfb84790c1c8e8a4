#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `fleetburn relay` with real processes and real CURVE (docs/security.md "Relays"): agents behind
# a relay and one direct agent run a campaign with every result stored under its node; an agent
# at the relay that claims another node's name is refused by the relay and nothing reaches the
# coordinator; a relay key whose nodes: line lacks a node cannot speak for it (a real relay, and
# a hostile one that forges tags, agent keys and results); an agent key cannot act as a relay; a
# relay key without nodes: is refused at load; a relay killed -9 mid-campaign makes its agents
# lost and the campaign ends as with any lost agent; the agents come back through the restarted
# relay; removing the relay's key with SIGHUP drops every node it carried.
. "$(dirname "$0")/lib.sh"
PEER="$FB_BIN/bin/fb_peer"
K="$WORK/keys"
OWN="$WORK/own"
mkdir -p "$K/agents" "$K/operators" "$K/relays" "$OWN" "$WORK/relaykeys/agents"

"$FLEETBURN" keygen "$K/coordinator" >/dev/null
for n in n1 n2 n3 n4 d1; do
    "$FLEETBURN" keygen "$OWN/$n" >/dev/null
    cp "$OWN/$n.pub" "$K/agents/$n.pub"
done
"$FLEETBURN" keygen "$OWN/alice" >/dev/null
cp "$OWN/alice.pub" "$K/operators/alice.pub"
"$FLEETBURN" keygen "$OWN/rack1" >/dev/null
SK="--server-key $K/coordinator.pub"
OP="--key $OWN/alice $SK"

# --- a relay key must say which nodes it speaks for -----------------------------------------------
cp "$OWN/rack1.pub" "$K/relays/rack1.pub"
status_of rc "$FLEETBURN" serve --bind "tcp://127.0.0.1:$(free_port)" --db "$WORK/x.db" --keys "$K" \
    2>"$WORK/nonodes.log"
[ $rc -ne 0 ] || fail "serve accepted a relay key without a nodes: line"
grep -q "relays/rack1.pub: a relay key needs a nodes: line" "$WORK/nonodes.log" \
    || fail "the refusal does not say what is missing: $(cat "$WORK/nonodes.log")"
pass "a relay key without nodes: is refused at load, naming the file"
# rack1 speaks for n1-n3 only; n4 has a valid agent key but is not in rack1's nodes: line.
{ cat "$OWN/rack1.pub"; echo "nodes: n[1-3]"; } >"$K/relays/rack1.pub"
# The relay's copy of the agents' keys: public keys only.
cp "$K"/agents/*.pub "$WORK/relaykeys/agents/"

start_coordinator --keys "$K"
RELAY_EP="tcp://127.0.0.1:$(free_port)"
start_relay() {
    "$FLEETBURN" relay --coordinator "$ENDPOINT" --bind "$RELAY_EP" --keys "$WORK/relaykeys" \
        --key "$OWN/rack1" $SK >>"$WORK/relay.log" 2>&1 &
    RELAY_PID=$!
    PIDS+=("$RELAY_PID")
    wait_for_log "$WORK/relay.log" "relay on"
}
start_relay
RK="--server-key $OWN/rack1.pub" # agents behind the relay pin the relay's key
relay_agent() { # NAME [agent options]
    local name=$1; shift
    "$AGENT" --coordinator "$RELAY_EP" --name "$name" --spool "$WORK/spool-$name" \
        --key "$OWN/$name" $RK "$@" >>"$WORK/$name.log" 2>&1 &
    AGENT_PID=$!
    PIDS+=("$AGENT_PID")
}
relay_agent n1
N1_PID=$AGENT_PID
relay_agent n2
N2_PID=$AGENT_PID
start_agent d1 --key "$OWN/d1" $SK
wait_registered n1 n2 d1
pass "agents register through the relay, and one directly"

q() { python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchone()[0])" "$WORK/fb.db" "$1"; }

# --- a campaign through the relay ------------------------------------------------------------------
cat >"$WORK/quick.yaml" <<'YAML'
name: relayed
nodes: n[1-2],d1
stages:
  - {name: nap, workload: sleep, timeout: 1m, params: {duration: 300ms}}
YAML
"$FLEETBURN" run --coordinator "$ENDPOINT" $OP "$WORK/quick.yaml" >"$WORK/quick.out" 2>"$WORK/quick.log" \
    || fail "the campaign through the relay failed: $(cat "$WORK/quick.log")"
for n in n1 n2 d1; do
    [ "$(q "select count(*) from results where node='$n' and verdict='pass'")" = 1 ] \
        || fail "no stored pass for $n"
    [ "$(q "select count(*) from results r join tasks t on t.id = r.task_id where r.node='$n' and t.nodes_json='[\"$n\"]'")" = 1 ] \
        || fail "$n's result is not stored under its own task"
done
pass "a campaign passes through the relay, every result stored once under its node"

# --- an agent at the relay claiming another node's name ------------------------------------------
"$AGENT" --coordinator "$RELAY_EP" --name n1 --spool "$WORK/spool-imposter" --key "$OWN/n2" $RK \
    >"$WORK/imposter.log" 2>&1 && fail "the imposter was not refused"
grep -q "may not register as node n1" "$WORK/imposter.log" || fail "the imposter's log does not say why"
grep -q "refused registration as n1" "$WORK/relay.log" || fail "the relay did not log the refusal"
grep -q "refused registration as n1" "$WORK/coordinator.log" \
    && fail "the imposter's Hello reached the coordinator"
kill -0 "$N1_PID" || fail "the real n1 went away"
pass "an agent at the relay claiming another node is refused by the relay, nothing forwarded"

# --- the relay's nodes: line binds it ---------------------------------------------------------------
"$AGENT" --coordinator "$RELAY_EP" --name n4 --spool "$WORK/spool-n4" --key "$OWN/n4" $RK \
    >"$WORK/n4.log" 2>&1 && fail "n4 registered through a relay whose nodes: line lacks it"
grep -q "may not speak for node n4" "$WORK/n4.log" || fail "n4's log does not say why: $(tail -3 "$WORK/n4.log")"
"$FLEETBURN" nodes --db "$WORK/fb.db" | grep -qE '^n4 ' && fail "n4 is listed"
# A hostile relay with rack1's key: tags outside its nodes: line, agent keys not allowed for the
# tagged node, and results for another node's task.
"$PEER" --coordinator "$ENDPOINT" --name n4 --key "$OWN/rack1" $SK --relay-for "$OWN/n4.pub" \
    --wait-ms 1000 >"$WORK/hostile1.out" || true
grep -q "welcome accepted" "$WORK/hostile1.out" && fail "a relay registered a node outside its nodes: line"
"$PEER" --coordinator "$ENDPOINT" --name n3 --key "$OWN/rack1" $SK --relay-for "$OWN/n1.pub" \
    --wait-ms 1000 >"$WORK/hostile2.out" || true
grep -q "welcome accepted" "$WORK/hostile2.out" && fail "a relay registered n3 with n1's agent key"
grep -q "welcome refused: .*may not register as node n3" "$WORK/hostile2.out" \
    || fail "no refusal for a wrong agent key: $(cat "$WORK/hostile2.out")"
# An agent key is no relay.
"$PEER" --coordinator "$ENDPOINT" --name n2 --key "$OWN/n2" $SK --relay-for "$OWN/n2.pub" \
    --wait-ms 1000 >"$WORK/hostile3.out" || true
grep -q "^welcome" "$WORK/hostile3.out" && fail "an agent key's Relayed was answered: $(cat "$WORK/hostile3.out")"
grep -q "agents/n2.pub, not a relay's" "$WORK/coordinator.log" || fail "an agent key acting as a relay was not logged"
pass "a relay cannot speak for a node outside its nodes: line, nor with another node's agent key; an agent key is no relay"

# n3 is rack1's and its key is n3's: it registers, then forges a result for n1's task.
cat >"$WORK/hold.yaml" <<'YAML'
name: held
nodes: n1
stages:
  - {name: hold, workload: sleep, timeout: 1m, params: {duration: 3s}}
YAML
"$FLEETBURN" run --coordinator "$ENDPOINT" $OP "$WORK/hold.yaml" >"$WORK/hold.out" 2>"$WORK/hold.log" &
hold_pid=$!
PIDS+=("$hold_pid")
wait_for_log "$WORK/n1.log" "started sleep"
task=$(q "select id from tasks where state='running'")
"$PEER" --coordinator "$ENDPOINT" --name n3 --key "$OWN/rack1" $SK --relay-for "$OWN/n3.pub" \
    --result "$task,$task,fail" --result "$task,$task@n3,fail" --event "$task" --wait-ms 1500 >"$WORK/forger.out"
grep -q "welcome accepted" "$WORK/forger.out" || fail "n3 could not register through rack1: $(cat "$WORK/forger.out")"
grep -q "^ack" "$WORK/forger.out" && fail "a forged relayed result was acknowledged"
status_of rc wait "$hold_pid"
[ $rc -eq 0 ] || fail "n1's campaign exited $rc, expected 0 (the forged fail changed it?)"
[ "$(q "select count(*) from results where node='n3'")" = 0 ] || fail "a forged relayed result was stored"
[ "$(q "select verdict from tasks where id='$task'")" = pass ] || fail "n1's task is not 'pass'"
grep -q "dropped a result from n3 for task $task" "$WORK/coordinator.log" || fail "the forged result was not logged"
pass "a result forged through a relay for another node's task is dropped, never acknowledged"

# --- liveness: the relay answers heartbeats and reports who it heard ------------------------------
# A dead agent behind a live relay is lost all the same; its neighbour is not.
kill_hard "$N2_PID"
wait_for_log "$WORK/coordinator.log" "agent n2 lost: no heartbeat" 10
sleep 1.5 # more than liveness x heartbeat
grep -q "agent n1 lost" "$WORK/coordinator.log" && fail "n1 was lost with n2"
relay_agent n2
N2_PID=$AGENT_PID
wait_for_log "$WORK/coordinator.log" "agent n2 reconnected"
pass "a dead agent behind a live relay is lost, its neighbour stays alive; it comes back through the relay"

# A coordinator restarted on the same database: the relay's status names agents it does not know,
# the relay stops answering for them, and they register again.
registrations() { grep -c "agent $1 registered" "$WORK/coordinator.log" || true; }
before=$(registrations n1)
before2=$(registrations n2)
kill_hard "$COORD_PID"
serve_in_background "$WORK/coordinator.log" --keys "$K"
for _ in $(seq 1 200); do [ "$(registrations n1)" -gt "$before" ] && [ "$(registrations n2)" -gt "$before2" ] && break; sleep 0.1; done
[ "$(registrations n1)" -gt "$before" ] || fail "n1 did not register with the restarted coordinator"
[ "$(registrations n2)" -gt "$before2" ] || fail "n2 did not register with the restarted coordinator"
pass "after a coordinator restart the relay's agents register again"

# --- the relay killed mid-campaign ----------------------------------------------------------------
cat >"$WORK/long.yaml" <<'YAML'
name: relay-lost
nodes: n[1-2],d1
stages:
  - {name: long, workload: sleep, timeout: 1m, params: {duration: 5s}}
  - {name: after, workload: sleep, params: {duration: 200ms}}
YAML
"$FLEETBURN" run --coordinator "$ENDPOINT" $OP "$WORK/long.yaml" >"$WORK/long.out" 2>"$WORK/long.log" &
long_pid=$!
PIDS+=("$long_pid")
for _ in $(seq 1 200); do
    [ "$(q "select count(*) from events e join campaigns c on c.id = e.campaign_id where c.name='relay-lost' and e.kind='started'")" = 3 ] && break
    sleep 0.1
done
[ "$(q "select count(*) from events e join campaigns c on c.id = e.campaign_id where c.name='relay-lost' and e.kind='started'")" = 3 ] \
    || fail "the three tasks of relay-lost did not start"
kill_hard "$RELAY_PID"
status_of rc wait "$long_pid"
[ $rc -eq 1 ] || fail "the campaign exited $rc after its relay died, expected 1"
for n in n1 n2; do
    grep -q "agent $n lost" "$WORK/coordinator.log" || fail "$n behind the dead relay was not lost"
done
cid=$(q "select id from campaigns where name='relay-lost'")
"$FLEETBURN" report "$cid" --db "$WORK/fb.db" --format json >"$WORK/report.json"
v=$(json_q "$WORK/report.json" 'sorted((t["nodes"][0], t["verdict"]) for t in d["stages"][0]["tasks"])')
[ "$v" = "[('d1', 'pass'), ('n1', 'lost'), ('n2', 'lost')]" ] || fail "stage 1 verdicts $v"
v=$(json_q "$WORK/report.json" 'sorted((t["nodes"][0], t["verdict"]) for t in d["stages"][1]["tasks"])')
# The campaign names its nodes: a lost node's task in a later stage ends lost at once.
[ "$v" = "[('d1', 'pass'), ('n1', 'lost'), ('n2', 'lost')]" ] || fail "stage 2 verdicts $v"
pass "a relay killed -9 makes its agents lost; the campaign goes on with the direct agent and ends failed"

# The relay restarted: its agents come back (they reconnect when their heartbeats go unanswered).
start_relay
wait_for_log "$WORK/coordinator.log" "agent n1 reconnected|agent n1 registered.*" 30
for n in n1 n2; do
    for _ in $(seq 1 150); do
        "$FLEETBURN" nodes --db "$WORK/fb.db" | grep -E "^$n " | grep -q alive && break
        sleep 0.2
    done
    "$FLEETBURN" nodes --db "$WORK/fb.db" | grep -E "^$n " | grep -q alive || fail "$n did not come back through the restarted relay"
done
"$FLEETBURN" run --coordinator "$ENDPOINT" $OP "$WORK/quick.yaml" >/dev/null 2>"$WORK/quick2.log" \
    || fail "a campaign after the relay's restart failed: $(cat "$WORK/quick2.log")"
pass "the agents come back through the restarted relay and run a campaign"

# --- SIGHUP with a narrower nodes: line drops the node taken out, and only it ---------------------
{ cat "$OWN/rack1.pub"; echo "nodes: n1,n3"; } >"$K/relays/rack1.pub"
kill -HUP "$COORD_PID"
wait_for_log "$WORK/coordinator.log" "agent n2: its key or its relay's is no longer allowed"
"$FLEETBURN" nodes --db "$WORK/fb.db" | grep -E '^n2 ' | grep -q lost || fail "n2 not lost after leaving rack1's nodes: line"
sleep 1.5 # more than liveness x heartbeat: n1 is still heard through the relay
"$FLEETBURN" nodes --db "$WORK/fb.db" | grep -E '^n1 ' | grep -q alive || fail "n1 was dropped with n2"
grep -q "agent n1: its key or its relay's" "$WORK/coordinator.log" && fail "n1 was dropped with n2"
pass "SIGHUP with a narrower nodes: line drops the node taken out; the relay's other node stays"

# --- SIGHUP without the relay's key: every node it carried is dropped -----------------------------
rm "$K/relays/rack1.pub"
kill -HUP "$COORD_PID"
for n in n1; do
    wait_for_log "$WORK/coordinator.log" "agent $n: its key or its relay's is no longer allowed"
    "$FLEETBURN" nodes --db "$WORK/fb.db" | grep -E "^$n " | grep -q lost || fail "$n not lost after its relay's key was removed"
done
wait_for_log "$WORK/relay.log" "refused this relay's connection"
"$FLEETBURN" nodes --db "$WORK/fb.db" | grep -E '^d1 ' | grep -q alive || fail "the direct agent d1 was dropped too"
pass "SIGHUP without the relay's key drops every node it still carried (and only those)"
