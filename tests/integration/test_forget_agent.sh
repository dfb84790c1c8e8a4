#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Agents that stay away leave the live registry after --forget-after: a stopped agent and 200
# names a hostile peer registered are forgotten, the database keeps them (fleetburn nodes lists
# them as gone or lost), a campaign on `nodes: all` runs on live agents only, and a forgotten agent that
# comes back registers as a new one and runs tasks.
. "$(dirname "$0")/lib.sh"
HOSTILE="$FB_BIN/bin/fb_hostile"
[ -x "$HOSTILE" ] || fail "no $HOSTILE (built with the tests)"

"$FLEETBURN" serve --forget-after 0 >/dev/null 2>&1 && fail "--forget-after 0 was accepted"
"$FLEETBURN" serve --forget-after soon >/dev/null 2>&1 && fail "--forget-after soon was accepted"

start_coordinator --forget-after 3s
start_agent n1
start_agent n2
n2_pid=$AGENT_PID
wait_registered n1 n2

# 200 names from one connection that then goes away.
"$HOSTILE" hello --connect "${ENDPOINT#tcp://}" --count 200 --prefix fake --hold 1 \
    >"$WORK/hello.out" 2>>"$WORK/hostile.log"
wait_for_log "$WORK/coordinator.log" "agent fake-199 registered"
kill -TERM "$n2_pid"
wait "$n2_pid" || true
wait_for_log "$WORK/coordinator.log" "agent n2 gone: said goodbye" 20
wait_for_log "$WORK/coordinator.log" "agent n2 forgotten: away for" 30
for i in $(seq 1 300); do
    [ "$(grep -c "agent fake-[0-9]* forgotten" "$WORK/coordinator.log")" -ge 200 ] && break
    sleep 0.1
done
forgotten=$(grep -c "agent fake-[0-9]* forgotten" "$WORK/coordinator.log" || true)
[ "$forgotten" = 200 ] || fail "$forgotten of 200 fake names were forgotten"
grep -q "agent n1 forgotten" "$WORK/coordinator.log" && fail "n1, which heartbeats, was forgotten"
"$FLEETBURN" nodes --db "$WORK/fb.db" >"$WORK/nodes.out"
grep -w n2 "$WORK/nodes.out" | grep -q gone || fail "fleetburn nodes does not list forgotten n2 as gone"
[ "$(grep -c "fake-" "$WORK/nodes.out")" -ge 200 ] || fail "the database lost the fake names' history"
pass "n2 and 200 fake names forgotten after 3 s away; the database still lists them (gone, lost)"

cat >"$WORK/campaign.yaml" <<'YAML'
name: live-only
nodes: all
stages:
  - name: nap
    workload: sleep
    params: {duration: 100ms}
YAML
"$FLEETBURN" run --coordinator "$ENDPOINT" "$WORK/campaign.yaml" >"$WORK/run1.out" 2>"$WORK/run1.log" \
    || fail "the campaign on the live agent did not pass"
"$FLEETBURN" report --db "$WORK/fb.db" --format json >"$WORK/report1.json"
v=$(json_q "$WORK/report1.json" 'sorted((t["nodes"][0], t["verdict"]) for t in d["stages"][0]["tasks"])')
[ "$v" = "[('n1', 'pass')]" ] || fail "nodes: all ran on $v, expected n1 alone"
pass "nodes: all ran on the live agent only"

# n2 returns: a fresh registration (not a reconnection of a known agent), and it runs tasks.
start_agent n2
for i in $(seq 1 150); do
    [ "$(grep -c "agent n2 registered" "$WORK/coordinator.log")" -ge 2 ] && break
    sleep 0.1
done
[ "$(grep -c "agent n2 registered" "$WORK/coordinator.log")" = 2 ] || fail "n2 did not register again within 15 s"
grep -q "agent n2 reconnected" "$WORK/coordinator.log" && fail "n2 was still known when it came back"
"$FLEETBURN" run --coordinator "$ENDPOINT" "$WORK/campaign.yaml" >"$WORK/run2.out" 2>"$WORK/run2.log" \
    || fail "the campaign after n2 returned did not pass"
"$FLEETBURN" report --db "$WORK/fb.db" --format json >"$WORK/report2.json"
v=$(json_q "$WORK/report2.json" 'sorted((t["nodes"][0], t["verdict"]) for t in d["stages"][0]["tasks"])')
[ "$v" = "[('n1', 'pass'), ('n2', 'pass')]" ] || fail "after n2 returned, nodes: all ran on $v"
"$FLEETBURN" nodes --db "$WORK/fb.db" | grep -w n2 | grep -q alive || fail "fleetburn nodes does not list n2 alive again"
pass "n2 came back, registered anew and ran its task"
