#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What hostile peers of the control plane cost a coordinator (docs/security.md, "Limits"), with
# fb_hostile (tests/tools) against `fleetburn serve` on loopback:
#   1. four connections announce 2 GiB frames and send 64 MiB of them each: the coordinator's
#      largest VmRSS while they are held, and how many it ended;
#   2. 1100 idle connections from 127.0.0.2, reopened as they are ended, against a coordinator
#      with 1024 descriptors: how long a real agent then takes to register;
#   3. one connection sends 200 frames of 1 MiB with the MORE flag and never ends the message:
#      the coordinator's largest VmRSS meanwhile;
#   4. eight connections send 1 MiB of random bytes each: the coordinator's log lines.
# usage: bench/hostile.sh BUILD_DIR [HOSTILE]   (BUILD_DIR/bin holds fleetburn and the agent;
#        HOSTILE defaults to BUILD_DIR/bin/fb_hostile). Prints one line per measurement.
set -euo pipefail
BIN=$(cd "$1/bin" && pwd)
HOSTILE=${2:-$BIN/fb_hostile}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/fbbench-XXXXXX")
PIDS=()
cleanup() {
    for pid in "${PIDS[@]:-}"; do [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null || true; done
    sleep 0.3
    for pid in "${PIDS[@]:-}"; do [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
rss() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
serve() { # NOFILE ("" keeps the shell's); sets COORD, PORT
    PORT=$(port)
    rm -f "$WORK"/fb.db*
    : >"$WORK/coordinator.log"
    ( if [ -n "$1" ]; then ulimit -n "$1"; fi && exec "$BIN/fleetburn" serve --bind "tcp://127.0.0.1:$PORT" --db "$WORK/fb.db" \
        --heartbeat-ms 200 --liveness 5 ) >>"$WORK/coordinator.log" 2>&1 &
    COORD=$!
    PIDS+=("$COORD")
    for _ in $(seq 100); do grep -q "coordinator on" "$WORK/coordinator.log" && break; sleep 0.1; done
}
stop() { kill -TERM "$COORD"; wait "$COORD" 2>/dev/null || true; }
peak_during() { # PID of a running fb_hostile; prints the coordinator's peak VmRSS in kB
    local peak kb
    peak=$(rss "$COORD")
    while kill -0 "$1" 2>/dev/null; do
        kb=$(rss "$COORD"); [ "$kb" -gt "$peak" ] && peak=$kb; sleep 0.1
    done
    echo "$peak"
}

echo "# $("$BIN/fleetburn" --version), $(uname -sr), $(date -u +%Y-%m-%d)"

serve ""
base=$(rss "$COORD")
"$HOSTILE" bigframe --connect "127.0.0.1:$PORT" --count 4 --send $((64 << 20)) --hold 10 >"$WORK/h.out" 2>/dev/null &
h=$!
peak=$(peak_during "$h")
echo "bigframe: VmRSS ${base} kB -> peak ${peak} kB (+$(((peak - base) / 1024)) MiB); $(cat "$WORK/h.out")"
stop

serve 1024
"$HOSTILE" idle --connect "127.0.0.1:$PORT" --source 127.0.0.2 --count 1100 --reconnect --hold 60 \
    >"$WORK/h.out" 2>"$WORK/h.err" &
h=$!
PIDS+=("$h")
for _ in $(seq 600); do grep -q "connections made" "$WORK/h.err" && break; sleep 0.1; done
sleep 1
t0=$(date +%s.%N)
"$BIN/fleetburn-agent" --coordinator "tcp://127.0.0.1:$PORT" --name bench-agent \
    --spool "$WORK/spool" >"$WORK/agent.log" 2>&1 &
agent=$!
PIDS+=("$agent")
took=">30"
for _ in $(seq 300); do
    if grep -q "agent bench-agent registered" "$WORK/coordinator.log"; then
        took=$(python3 -c "import time; print(f'{time.time() - $t0:.1f}')"); break
    fi
    sleep 0.1
done
kill -TERM "$agent" 2>/dev/null || true
wait "$h" || true
echo "idle flood: $(cat "$WORK/h.err"), then a real agent registered after ${took} s; $(cat "$WORK/h.out")"
stop

serve ""
base=$(rss "$COORD")
"$HOSTILE" multipart --connect "127.0.0.1:$PORT" --count 200 --frame-size 1048576 --hold 5 \
    >"$WORK/h.out" 2>/dev/null &
h=$!
peak=$(peak_during "$h")
echo "multipart: VmRSS ${base} kB -> peak ${peak} kB (+$(((peak - base) / 1024)) MiB); $(cat "$WORK/h.out")"
stop

serve ""
"$HOSTILE" garbage --connect "127.0.0.1:$PORT" --count 8 --send 1048576 --hold 5 >"$WORK/h.out" \
    2>/dev/null
sleep 0.5
lines=$(grep -cE "dropped|refused a peer" "$WORK/coordinator.log" || true)
echo "garbage: ${lines} coordinator log lines; $(cat "$WORK/h.out")"
stop
