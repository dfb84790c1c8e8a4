#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Connection limits: a flood of idle connections from one address (reopened as soon as they are
# ended) does not keep a real agent from registering; connections over the per-address and the
# total limit are ended at once, the rest when their handshake does not come within 5 s; the
# refusals are logged at most once per 10 s, naming the address; the handshake deadline is an
# option.
. "$(dirname "$0")/lib.sh"
HOSTILE="$FB_BIN/bin/fb_hostile"
[ -x "$HOSTILE" ] || fail "no $HOSTILE (built with the tests)"
field() { sed -n "s/.*\b$2=\([0-9]*\).*/\1/p" "$1"; }
ip addr show lo 2>/dev/null | grep -q "127.0.0.1/8" || { echo "skip: loopback is not 127.0.0.0/8"; exit 77; }

# --- per address: 1100 idle connections from 127.0.0.2, reopened as they are ended -------------
# More than the coordinator's 1024 descriptors: without limits they starve it (a real agent took
# 20.9 s to register, bench/results/hostile-2026-11-24.txt).
port=$(free_port)
ENDPOINT="tcp://127.0.0.1:$port"
( ulimit -n 1024 && exec "$FLEETBURN" serve --bind "$ENDPOINT" --db "$WORK/fb.db" \
    --heartbeat-ms 200 --liveness 5 ) >>"$WORK/coordinator.log" 2>&1 &
COORD_PID=$!
PIDS+=("$COORD_PID")
wait_for_log "$WORK/coordinator.log" "coordinator on"

"$HOSTILE" idle --connect "127.0.0.1:$port" --source 127.0.0.2 --count 1100 --reconnect \
    --hold 25 --settle 3 >"$WORK/flood.out" 2>>"$WORK/hostile.log" &
flood_pid=$!
PIDS+=("$flood_pid")
wait_for_log "$WORK/hostile.log" "connections made" 90
sleep 1
t0=$(date +%s.%N)
start_agent n1
wait_for_log "$WORK/coordinator.log" "agent n1 registered" 60
t1=$(date +%s.%N)
took=$(python3 -c "print(f'{$t1 - $t0:.1f}')")
python3 -c "import sys; sys.exit(0 if $t1 - $t0 < 10 else 1)" \
    || fail "agent n1 took ${took} s to register under the flood (10 s allowed)"
"$FLEETBURN" nodes --db "$WORK/fb.db" | grep -w n1 | grep -q alive || fail "fleetburn nodes does not list n1 alive"
pass "agent n1 registered ${took} s after it started, under a flood of 1100 idle connections"
grep -q "connection limits: 896 in all, 64 per address" "$WORK/coordinator.log" \
    || fail "the coordinator did not announce its limits (896 in all, 64 per address)"
wait "$flood_pid"
cat "$WORK/flood.out"
opened=$(field "$WORK/flood.out" opened)
ended=$(field "$WORK/flood.out" ended_by_peer)
[ "$opened" -ge 1100 ] || fail "the flood opened only $opened connections"
[ "$ended" -ge $((opened - 64)) ] || fail "only $ended of $opened flood connections were ended (64 may stay)"
refusals=$(grep -c "refused a connection from 127.0.0.2" "$WORK/coordinator.log" || true)
[ "$refusals" -ge 1 ] || fail "no refusal naming 127.0.0.2 was logged"
grep "refused a connection" "$WORK/coordinator.log" | head -n 2
elapsed_ms=$(field "$WORK/flood.out" elapsed_ms)
[ "$refusals" -le $((elapsed_ms / 10000 + 2)) ] \
    || fail "$refusals refusal lines in $elapsed_ms ms: not rate-limited to one per 10 s"
grep -q "per-address 64\|--max-connections-per-address 64" "$WORK/coordinator.log" \
    || fail "the refusal does not name the option"
grep -qE "more refused in the last" "$WORK/coordinator.log" || fail "suppressed refusals are not counted"
grep -q "agent n1 lost" "$WORK/coordinator.log" && fail "agent n1 was lost during the flood"
pass "$ended of $opened flood connections ended; $refusals refusal lines"
kill -TERM "$COORD_PID"
wait "$COORD_PID" || true

# --- in total, and the handshake deadline -----------------------------------------------------
: >"$WORK/coordinator.log"
start_coordinator --max-connections 50 --max-connections-per-address 0
grep -q "connection limits: 50 in all, handshake within 5.0 s" "$WORK/coordinator.log" \
    || fail "the coordinator did not announce 50 connections in all"
"$HOSTILE" idle --connect "${ENDPOINT#tcp://}" --source 127.0.0.3 --count 200 --hold 20 \
    >"$WORK/total.out" 2>>"$WORK/hostile.log"
cat "$WORK/total.out"
[ "$(field "$WORK/total.out" opened)" = 200 ] || fail "200 connections did not open"
[ "$(field "$WORK/total.out" ended_by_peer)" = 200 ] || fail "idle connections outlived the handshake deadline"
max_ms=$(field "$WORK/total.out" ended_after_ms_max)
[ "$max_ms" -ge 4000 ] || fail "an admitted idle connection was ended after $max_ms ms, before its 5 s handshake deadline"
[ "$max_ms" -le 12000 ] || fail "an idle connection lived $max_ms ms (handshake deadline 5 s)"
grep -q "refused a connection from 127.0.0.3: 50 connections are open (--max-connections 50)" \
    "$WORK/coordinator.log" || fail "no refusal for the total limit was logged"
start_agent n2
wait_for_log "$WORK/coordinator.log" "agent n2 registered" 15
pass "150 connections over the total of 50 ended at once, the other 50 by the 5 s handshake deadline; n2 registered after"

# --- the handshake deadline is an option ------------------------------------------------------
kill -TERM "$COORD_PID"
wait "$COORD_PID" || true
: >"$WORK/coordinator.log"
"$FLEETBURN" serve --handshake-timeout 10ms >/dev/null 2>&1 && fail "--handshake-timeout 10ms was accepted"
for bad in 0 17 two; do
    "$FLEETBURN" serve --io-threads "$bad" >/dev/null 2>"$WORK/io.err" && fail "--io-threads $bad was accepted"
    grep -q -- "--io-threads: '$bad' is not a whole number from 1 to 16" "$WORK/io.err" ||
        fail "--io-threads $bad: $(cat "$WORK/io.err")"
done
start_coordinator --handshake-timeout 2s
grep -q "handshake within 2.0 s" "$WORK/coordinator.log" || fail "the coordinator did not announce a 2 s handshake"
"$HOSTILE" idle --connect "${ENDPOINT#tcp://}" --source 127.0.0.4 --count 10 --hold 20 \
    >"$WORK/hs.out" 2>>"$WORK/hostile.log"
cat "$WORK/hs.out"
[ "$(field "$WORK/hs.out" ended_by_peer)" = 10 ] || fail "idle connections outlived a 2 s handshake deadline"
max_ms=$(field "$WORK/hs.out" ended_after_ms_max)
[ "$max_ms" -ge 1500 ] && [ "$max_ms" -le 8000 ] || fail "idle connections ended after $max_ms ms with a 2 s deadline"
pass "--handshake-timeout 2s: 10 idle connections ended after at most $max_ms ms"
