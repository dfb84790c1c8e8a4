#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Descriptor headroom at start: the coordinator raises its soft descriptor limit to the hard one;
# where the connection limit does not fit the descriptor limit with a reserve, it lowers the
# limit, warns what to raise, and still serves.
. "$(dirname "$0")/lib.sh"

serve_with_limit() { # ULIMIT_ARGS... -- SERVE_ARGS...
    local ul=() port
    while [ "$1" != "--" ]; do ul+=("$1"); shift; done
    shift
    port=$(free_port)
    ENDPOINT="tcp://127.0.0.1:$port"
    : >"$WORK/coordinator.log"
    ( ulimit "${ul[@]}" && exec "$FLEETBURN" serve --bind "$ENDPOINT" --db "$WORK/fb.db" \
        --heartbeat-ms 200 --liveness 5 "$@" ) >>"$WORK/coordinator.log" 2>&1 &
    COORD_PID=$!
    PIDS+=("$COORD_PID")
    wait_for_log "$WORK/coordinator.log" "coordinator on"
}
stop_coordinator() { kill -TERM "$COORD_PID"; wait "$COORD_PID" || true; }

# A hard limit of 256: room for 128 connections, and a warning that says what to raise.
serve_with_limit -n 256 --
grep -q "descriptor limit of 256 leaves room for 128 connections" "$WORK/coordinator.log" \
    || fail "no warning about a descriptor limit of 256"
grep -q "ulimit -n" "$WORK/coordinator.log" || fail "the warning does not say what to raise"
grep -q "connection limits: 128 in all" "$WORK/coordinator.log" || fail "the limit is not 128"
start_agent n1
wait_for_log "$WORK/coordinator.log" "agent n1 registered" 15
pass "with ulimit -n 256: warned, 128 connections, and n1 registered"
stop_coordinator

# An explicit limit that does not fit is lowered, with the number to raise the limit to.
serve_with_limit -n 512 -- --max-connections 1000
grep -q -- "--max-connections 1000 does not fit the descriptor limit of 512.*at most 384 connections; raise the limit to 1128 or more" \
    "$WORK/coordinator.log" || fail "no warning that --max-connections 1000 does not fit 512 descriptors"
grep -q "connection limits: 384 in all" "$WORK/coordinator.log" || fail "the limit was not lowered to 384"
start_agent n2
wait_for_log "$WORK/coordinator.log" "agent n2 registered" 15
pass "--max-connections 1000 with ulimit -n 512: lowered to 384 with a warning; n2 registered"
stop_coordinator

# Only the soft limit low: raised to the hard limit, no warning.
hard=$(ulimit -Hn)
if [ "$hard" != unlimited ] && [ "$hard" -ge 2048 ]; then
    serve_with_limit -Sn 256 --
    want=$((hard - 128))
    [ $want -gt 65536 ] && want=65536
    grep -q "connection limits: $want in all" "$WORK/coordinator.log" \
        || fail "the soft limit was not raised to the hard limit $hard (expected $want connections)"
    grep -q "descriptor limit" "$WORK/coordinator.log" && fail "a warning although the hard limit $hard fits"
    pid_limit=$(awk '/^Max open files/ {print $4}' "/proc/$COORD_PID/limits")
    [ "$pid_limit" = "$hard" ] || fail "the coordinator's soft limit is $pid_limit, not $hard"
    pass "soft limit 256 raised to the hard limit $hard: $want connections, no warning"
    stop_coordinator
else
    echo "skip: the hard descriptor limit ($hard) is too low to test raising the soft one"
fi
