#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The daemons under a Type=notify unit with WatchdogSec=, through a notification socket as systemd
# reads it (notify_listener.py, the sender's PID from SO_PASSCRED as NotifyAccess=main checks):
#  - fleetburn serve says READY=1 once it listens, with its status (agents alive, campaigns);
#  - fleetburn-agent says STATUS=connecting and no READY while its coordinator is away, and
#    READY=1 with STATUS=registered once the coordinator welcomes it;
#  - both ping the watchdog at half of WATCHDOG_USEC from their event loop, and a stopped process
#    stops pinging (what makes systemd restart a stuck daemon);
#  - run --local's agents stay silent when `run` itself inherited NOTIFY_SOCKET;
#  - both say STOPPING=1 on SIGTERM.
# Skipped (77) when the programs were built without libsystemd.
. "$(dirname "$0")/lib.sh"

ldd "$FLEETBURN" >"$WORK/ldd.fleetburn"
ldd "$FB_BIN/bin/fleetburn-worker" >"$WORK/ldd.worker"
grep -q libsystemd "$WORK/ldd.fleetburn" || { echo "skip: fleetburn built without libsystemd"; exit 77; }
grep -q libsystemd "$WORK/ldd.worker" && fail "the worker links libsystemd"

listen() { # socket-path output-file
    python3 "$FB_SRC/tests/integration/notify_listener.py" "$1" "$2" &
    PIDS+=($!)
    for _ in $(seq 1 50); do [ -S "$1" ] && return 0; sleep 0.1; done
    fail "no notification socket at $1"
}
listen "$WORK/agent.sock" "$WORK/agent.notify"
listen "$WORK/serve.sock" "$WORK/serve.notify"

# The agent first: its coordinator is not there yet.
port=$(free_port)
NOTIFY_SOCKET="$WORK/agent.sock" WATCHDOG_USEC=1000000 \
    "$AGENT" --coordinator "127.0.0.1:$port" --name n1 --spool "$WORK/spool-n1" >>"$WORK/n1.log" 2>&1 &
agent_pid=$!
PIDS+=($agent_pid)
sleep 2
grep -q "STATUS=connecting to tcp://127.0.0.1:$port as n1" "$WORK/agent.notify" ||
    fail "agent status while its coordinator is away: $(cat "$WORK/agent.notify")"
grep -q "READY=1" "$WORK/agent.notify" && fail "the agent said READY before it registered"
pass "agent without its coordinator: STATUS=connecting, no READY"

NOTIFY_SOCKET="$WORK/serve.sock" WATCHDOG_USEC=1000000 \
    "$FLEETBURN" serve --bind "127.0.0.1:$port" --db "$WORK/fb.db" --heartbeat-ms 200 \
    >>"$WORK/coordinator.log" 2>&1 &
serve_pid=$!
PIDS+=($serve_pid)
wait_for_log "$WORK/serve.notify" "READY=1"
grep -q "^[0-9.]* $serve_pid WATCHDOG=1|READY=1|STATUS=listening on tcp://127.0.0.1:$port; 0 agent(s) alive, 0 campaign(s) running" \
    "$WORK/serve.notify" || fail "serve's first message: $(head -2 "$WORK/serve.notify")"
wait_for_log "$WORK/agent.notify" "READY=1"
grep -q "^[0-9.]* $agent_pid WATCHDOG=1|READY=1|STATUS=registered with tcp://127.0.0.1:$port as n1; 0 task(s) running" \
    "$WORK/agent.notify" || fail "agent's READY: $(cat "$WORK/agent.notify")"
wait_for_log "$WORK/serve.notify" "STATUS=listening on tcp://127.0.0.1:$port; 1 agent\(s\) alive"
pass "serve READY once it listens; the agent READY once registered; both from their main PID"

# Watchdog pings at half of WATCHDOG_USEC (500 ms): about 6 in 3 s.
count_pings() { awk -v from="$2" -v to="$3" '$1 >= from && $1 < to && /WATCHDOG=1/' "$1" | wc -l; }
t0=$(date +%s.%N); sleep 3; t1=$(date +%s.%N)
for who in serve agent; do
    n=$(count_pings "$WORK/$who.notify" "$t0" "$t1")
    [ "$n" -ge 4 ] && [ "$n" -le 8 ] || fail "$who: $n watchdog pings in 3 s at 500 ms"
done
# A stopped process pings no more: systemd would kill and restart it after WatchdogSec.
kill -STOP "$serve_pid"
t0=$(date +%s.%N); sleep 2; t1=$(date +%s.%N)
kill -CONT "$serve_pid"
n=$(count_pings "$WORK/serve.notify" "$t0" "$t1")
[ "$n" -eq 0 ] || fail "a stopped coordinator pinged $n times"
sleep 1.2
t2=$(date +%s.%N)
[ "$(count_pings "$WORK/serve.notify" "$t1" "$t2")" -ge 1 ] || fail "no pings after SIGCONT"
pass "watchdog pings every 500 ms from both loops; none while the coordinator is stopped"

# run --local under systemd: its agents are not the unit's daemon and say nothing.
listen "$WORK/run.sock" "$WORK/run.notify"
printf 'name: quiet\nstages:\n  - {name: s, workload: sleep, params: {duration: 100ms}}\n' >"$WORK/q.yaml"
NOTIFY_SOCKET="$WORK/run.sock" "$FLEETBURN" run --local 1 --db "$WORK/q.db" "$WORK/q.yaml" \
    >"$WORK/q.out" 2>&1 || fail "run --local: $(cat "$WORK/q.out")"
sleep 0.5
[ -s "$WORK/run.notify" ] && fail "run --local's agents notified systemd: $(cat "$WORK/run.notify")"
pass "run --local's agents send nothing to a NOTIFY_SOCKET run inherited"

kill -TERM "$agent_pid"
wait_for_log "$WORK/agent.notify" "STOPPING=1"
kill -TERM "$serve_pid"
wait_for_log "$WORK/serve.notify" "STOPPING=1"
pass "STOPPING=1 on SIGTERM"
