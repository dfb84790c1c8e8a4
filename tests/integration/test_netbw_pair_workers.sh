#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# netbw between two fleetburn-worker processes on loopback, without agents or a coordinator: the
# members meet through FLEETBURN_EXCHANGE_DIR. A pair measures both directions and latency and
# writes its results; when one member is killed with SIGKILL in the middle, the other ends at
# once with an error that names it, long before any timeout.
. "$(dirname "$0")/lib.sh"

WORKER="$FB_BIN/bin/fleetburn-worker"
export FLEETBURN_EXCHANGE_DIR="$WORK/exchange"

# Starts rank R of task T in the background; sets MEMBER_PID.
member() {
    local task=$1 rank=$2; shift 2
    local node; node=$([ "$rank" = 0 ] && echo node-a || echo node-b)
    "$WORKER" --workload netbw --task-id "$task" --result "$WORK/$task.$rank.result" \
        --node "$node" --rank "$rank" --size 2 --peers node-a,node-b \
        --addresses 127.0.0.1,127.0.0.1 "$@" >"$WORK/$task.$rank.log" 2>&1 &
    MEMBER_PID=$!
    PIDS+=("$MEMBER_PID")
}

mkdir -p "$FLEETBURN_EXCHANGE_DIR"
member pair 0 duration=1s streams=2 lat_iters=200 min_gbps=0.1
p0=$MEMBER_PID
member pair 1 duration=1s streams=2 lat_iters=200 min_gbps=0.1
p1=$MEMBER_PID
wait "$p0" || fail "rank 0 exited $?"
wait "$p1" || fail "rank 1 exited $?"
for r in 0 1; do
    [ -s "$WORK/pair.$r.result" ] || fail "rank $r wrote no result"
    grep -q "log error" "$WORK/pair.$r.log" && fail "rank $r: $(grep 'log error' "$WORK/pair.$r.log")"
    line=$(grep -E "^log netbw: node-a->node-b [0-9.]+ Gb/s, node-b->node-a [0-9.]+ Gb/s, rtt p50" \
        "$WORK/pair.$r.log") || fail "rank $r: no summary line"
    python3 - "$line" <<'PY' || fail "rank $r: implausible numbers: $line"
import re, sys
ab, ba, p50, p99, mx = map(float, re.findall(r"([0-9.]+) (?:Gb/s|us)", sys.argv[1]))
assert ab > 0.1 and ba > 0.1 and 0 < p50 <= p99 <= mx, (ab, ba, p50, p99, mx)
PY
    grep -qE "^progress [0-9.]+ node-a->node-b" "$WORK/pair.$r.log" || fail "rank $r: no progress"
done
pass "two workers on loopback: both directions and latency measured"

# The partner disappears while rank 0 sends to it.
rm -f "$FLEETBURN_EXCHANGE_DIR"/*
member dying 0 duration=30s streams=2
p0=$MEMBER_PID
member dying 1 duration=30s streams=2
p1=$MEMBER_PID
wait_for_log "$WORK/dying.1.log" "^progress" 10
start=$(date +%s%N)
kill -KILL "$p1"
wait "$p1" 2>/dev/null || true
wait "$p0" || fail "rank 0 exited $?"
took_ms=$((($(date +%s%N) - start) / 1000000))
[ $took_ms -lt 3000 ] || fail "rank 0 took $took_ms ms to notice"
grep -q "log error: partner node-b (127.0.0.1) closed the control connection" "$WORK/dying.0.log" ||
    fail "rank 0: $(grep 'log error' "$WORK/dying.0.log" || echo 'no error line')"
[ -s "$WORK/dying.0.result" ] || fail "rank 0 wrote no result"
pass "partner killed mid-transfer: the survivor ended in $took_ms ms naming it"
