#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The floor under the coordinator's registration time and memory: N bare libzmq DEALER
# connections to one ROUTER (fleetburn-bench-zmqfloor, nothing of fleetburn in the way), CURVE
# with a ZAP handler by default, in client processes of at most 8192 connections each (the
# descriptor limit). Measures the time until every connection has had its first message
# answered, the server's CPU time (its I/O thread: the handshakes) and the clients', and the
# server's resident memory after the handshakes and then after SECONDS of one 16-byte message
# each way per connection per second (an agent's heartbeat).
#
#   bench/zmq_floor.sh BUILD_DIR [N] [SECONDS]        # defaults: 16384 connections, 0 s
#
# Environment: CURVE=0 for plaintext; REPEAT (1) runs; SERVER_ARGS: the server's socket settings
# ("--hwm N": ZMQ_SNDHWM and ZMQ_RCVHWM, "--sockbuf BYTES": ZMQ_SNDBUF and ZMQ_RCVBUF,
# "--io-threads N": ZeroMQ I/O threads, 1 by default). Writes
# bench/results/zmq-floor[-curve]-N-<date>.txt (RESULTS overrides).
set -euo pipefail
BUILD=${1:?usage: zmq_floor.sh BUILD_DIR [N] [SECONDS]}
N=${2:-16384}
SECS=${3:-0}
CURVE=${CURVE:-1}
REPEAT=${REPEAT:-1}
BIN="$BUILD/bin/fleetburn-bench-zmqfloor"
[ -x "$BIN" ] || { echo "$BIN not found" >&2; exit 2; }
HERE=$(cd "$(dirname "$0")" && pwd)
RESULTS=${RESULTS:-"$HERE/results/zmq-floor$([ "$CURVE" = 1 ] && echo -curve)-$N-$(date -u +%Y-%m-%d).txt"}
[ "${APPEND:-0}" = 1 ] && [ -f "$RESULTS" ] || APPEND=0 # APPEND=1 adds to an existing file
d=$(mktemp -d "${TMPDIR:-/tmp}/fbfloor-XXXXXX")
SP="" CPIDS=()
trap 'kill ${CPIDS[@]:-} $SP 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$d"' EXIT
PER=8192
PROCS=$(((N + PER - 1) / PER))

calc() { awk "BEGIN {print $1}"; }
# user+system seconds of one thread (/proc/PID/task/TID/stat fields 14, 15) or a process
cpu_s() { awk '{printf "%.2f", ($14 + $15) / 100}' "$1"; }
io_thread_cpu() { # all its ZeroMQ I/O threads together
    local s=0; for t in /proc/"$1"/task/*; do case "$(cat "$t/comm")" in ZMQbg/IO/*) s=$(calc "$s + $(cpu_s "$t/stat")") ;; esac; done; echo "$s"; }

one_run() {
    local port ep key
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    ep="tcp://127.0.0.1:$port"
    "$BIN" server "$ep" $([ "$CURVE" = 1 ] && echo --curve) ${SERVER_ARGS:-} >"$d/server.out" 2>&1 &
    SP=$!
    for _ in $(seq 1 50); do [ -s "$d/server.out" ] && break; sleep 0.1; done
    key=$(head -1 "$d/server.out")
    local idle; idle=$(awk '/VmRSS/{print $2}' "/proc/$SP/status")
    local load0; load0=$(cut -d' ' -f1 /proc/loadavg)
    CPIDS=()
    local left=$N p=0
    while [ "$left" -gt 0 ]; do
        local n=$((left < PER ? left : PER))
        "$BIN" clients "$ep" "$n" $([ "$CURVE" = 1 ] && echo --curve "$key") --seconds "$SECS" \
            >"$d/clients.$p" 2>&1 &
        CPIDS+=($!)
        left=$((left - n)); p=$((p + 1))
    done
    # every client process has printed its time once all its connections were answered
    local waited=0
    while [ "$(cat "$d"/clients.* 2>/dev/null | grep -c '^all_answered_s=' || true)" -lt "$PROCS" ]; do
        sleep 0.1
        waited=$((waited + 1))
        [ "$waited" -lt 3000 ] || { echo "not all connections answered within 300 s" >&2; cat "$d"/clients.* >&2; exit 1; }
    done
    local reg_s srv_io srv_all rss_reg cli=0
    reg_s=$(cat "$d"/clients.* | grep '^all_answered_s=' | cut -d= -f2 | sort -g | tail -1)
    srv_io=$(io_thread_cpu "$SP")
    srv_all=$(cpu_s "/proc/$SP/stat")
    rss_reg=$(awk '/VmRSS/{print $2}' "/proc/$SP/status")
    cli=$(cat "$d"/clients.* | grep '^cpu_s=' | cut -d= -f2 | awk '{s += $1} END {print s}')
    local rss_end=$rss_reg
    if [ "$SECS" -gt 0 ]; then
        sleep "$SECS"
        rss_end=$(awk '/VmRSS/{print $2}' "/proc/$SP/status")
    fi
    printf "run: all %d answered %.3f s; server CPU %.2f s (I/O thread(s) %.2f s, %.3f ms per connection); clients CPU %.2f s until answered (%d processes); server RSS idle %d KiB, after the handshakes %d KiB (%.1f KiB per connection), after %d s of 1 Hz messages %d KiB (%.1f KiB per connection); load %s before, %s after\n" \
        "$N" "$reg_s" "$srv_all" "$srv_io" "$(calc "$srv_io * 1000 / $N")" "$cli" "$PROCS" \
        "$idle" "$rss_reg" "$(calc "($rss_reg - $idle) / $N")" "$SECS" "$rss_end" \
        "$(calc "($rss_end - $idle) / $N")" "$load0" "$(cut -d' ' -f1 /proc/loadavg)"
    kill "${CPIDS[@]}" 2>/dev/null || true
    wait "${CPIDS[@]}" 2>/dev/null || true
    kill "$SP"; wait "$SP" 2>/dev/null || true
    SP="" CPIDS=()
    rm -f "$d"/clients.* "$d/server.out"
}

{
    echo "# bare libzmq: $N DEALER connections to one ROUTER, $(date -u +%Y-%m-%dT%H:%MZ), bench/zmq_floor.sh"
    echo "# command: CURVE=$CURVE REPEAT=$REPEAT${SERVER_ARGS:+ SERVER_ARGS=\"$SERVER_ARGS\"} bench/zmq_floor.sh BUILD $N $SECS; commit $(git -C "$HERE/.." rev-parse --short HEAD)"
    echo "# machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(free -g | awk '/Mem:/ {print $2}') GiB; libzmq $(pkg-config --modversion libzmq), libsodium $(pkg-config --modversion libsodium 2>/dev/null || echo '?')"
    echo "# CURVE=$CURVE$([ "$CURVE" = 1 ] && echo ' (a ZAP handler on the server thread accepts every key)'); $PROCS client process(es), one I/O thread per 4096 connections; the server: ${SERVER_ARGS:-one I/O thread, the libzmq default}"
} >"$d/out"
for i in $(seq 1 "$REPEAT"); do one_run | tee -a "$d/out"; done
mkdir -p "$(dirname "$RESULTS")"
if [ "$APPEND" = 1 ]; then cat "$d/out" >>"$RESULTS"; else cp "$d/out" "$RESULTS"; fi
echo "written $RESULTS"
