#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Frames over the wire's limit: four connections that announce 2 GiB frames (a ZMTP handshake,
# then a long-frame header) are ended by the coordinator before it buffers their payload, and
# its memory (VmRSS) stays where it was; garbage connections are ended too, the log says so at
# most once per 10 s, and a registered agent never notices.
. "$(dirname "$0")/lib.sh"
HOSTILE="$FB_BIN/bin/fb_hostile"
[ -x "$HOSTILE" ] || fail "no $HOSTILE (built with the tests)"

# Every ZeroMQ socket of the programs is made by fb_zsock_new_socket, which sets the frame limit.
stray=$(cd "$FB_SRC" && grep -rn "zmq_socket *(" --include=*.c agent common coordinator scheduler \
    workloads | grep -v "^common/zsock.c:" || true)
[ -z "$stray" ] || fail "sockets made without fb_zsock_new_socket (no frame limit): $stray"

rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$COORD_PID/status"; }
# Runs fb_hostile with the arguments given, its summary into $OUT_FILE, and sets PEAK_KB to the
# coordinator's largest VmRSS while it ran (sampled every 0.1 s).
hostile_peak() {
    "$HOSTILE" "$@" >"$OUT_FILE" 2>>"$WORK/hostile.log" &
    local pid=$! kb
    PIDS+=("$pid")
    PEAK_KB=$(rss_kb)
    while kill -0 "$pid" 2>/dev/null; do
        kb=$(rss_kb)
        [ "$kb" -gt "$PEAK_KB" ] && PEAK_KB=$kb
        sleep 0.1
    done
    wait "$pid" || fail "fb_hostile $1 failed"
    cat "$OUT_FILE"
}
field() { sed -n "s/.*\b$2=\([0-9]*\).*/\1/p" "$1"; }

start_coordinator
TARGET=${ENDPOINT#tcp://}
start_agents n1
sleep 1
before=$(rss_kb)

# Each connection would send 64 MiB of its frame as fast as the coordinator reads: 256 MiB held
# by the coordinator when nothing limits frames.
# Every connection is held for up to 10 s, so a coordinator that buffers shows it meanwhile.
OUT_FILE="$WORK/bigframe.out"
hostile_peak bigframe --connect "$TARGET" --count 4 --frame-size $((2 << 30)) --send $((64 << 20)) \
    --hold 10
growth=$((PEAK_KB - before))
echo "coordinator VmRSS ${before} kB before, at most ${PEAK_KB} kB during the attack (+${growth} kB)"
[ "$(field "$WORK/bigframe.out" opened)" = 4 ] || fail "the four connections did not open"
[ "$(field "$WORK/bigframe.out" ended_by_peer)" = 4 ] || fail "the coordinator kept connections that announced 2 GiB frames"
sent=$(field "$WORK/bigframe.out" sent)
[ "$sent" -lt $((4 * (64 << 20))) ] || fail "every payload byte was accepted ($sent bytes)"
[ "$growth" -lt 16384 ] || fail "the coordinator grew by $growth kB while peers announced 2 GiB frames"
pass "4 connections announcing 2 GiB frames ended after $sent payload bytes in all; VmRSS +$growth kB"

# A slow trickle is ended just the same (at the header, not at the payload's end).
"$HOSTILE" bigframe --connect "$TARGET" --count 1 --send $((1 << 20)) --rate 65536 --hold 30 \
    >"$WORK/trickle.out" 2>>"$WORK/hostile.log"
cat "$WORK/trickle.out"
[ "$(field "$WORK/trickle.out" ended_by_peer)" = 1 ] || fail "a trickling 2 GiB frame was kept"
[ "$(field "$WORK/trickle.out" ended_after_ms_max)" -lt 10000 ] || fail "a trickling 2 GiB frame was kept for 10 s or more"
pass "a trickled 2 GiB frame is ended at its header"

"$HOSTILE" garbage --connect "$TARGET" --count 8 --send 1048576 --hold 20 >"$WORK/garbage.out" \
    2>>"$WORK/hostile.log"
cat "$WORK/garbage.out"
[ "$(field "$WORK/garbage.out" ended_by_peer)" = 8 ] || fail "the coordinator kept connections that sent garbage"
lines=$(grep -cE "dropped|refused a peer" "$WORK/coordinator.log" || true)
[ "$lines" -le 4 ] || fail "8 garbage connections made $lines log lines (one per 10 s expected)"
pass "8 connections sending garbage were ended; $lines log lines"

kill -0 "$COORD_PID" 2>/dev/null || fail "the coordinator died"
grep -q "agent n1 lost" "$WORK/coordinator.log" && fail "agent n1 was lost during the attacks"
cat >"$WORK/campaign.yaml" <<'YAML'
name: after-hostile-frames
stages:
  - name: nap
    workload: sleep
    params: {duration: 100ms}
YAML
"$FLEETBURN" run --coordinator "$ENDPOINT" "$WORK/campaign.yaml" >"$WORK/run.out" 2>"$WORK/run.log" \
    || fail "a campaign after the attacks did not pass"
pass "the coordinator still runs campaigns on n1"
