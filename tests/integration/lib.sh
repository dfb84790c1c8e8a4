# SPDX-License-Identifier: Apache-2.0
# Shared helpers for integration tests: real fleetburn programs on loopback, a private work
# directory removed on exit, and every process a test started killed on exit.
set -euo pipefail

FB_BIN=${FB_BIN:-$(cd "$(dirname "$0")/../../build" && pwd)}
FB_SRC=${FB_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
FLEETBURN="$FB_BIN/bin/fleetburn"
AGENT="$FB_BIN/bin/fleetburn-agent"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/fbtest-XXXXXX")
PIDS=()
export FLEETBURN_LOG=${FLEETBURN_LOG:-info}

cleanup() {
    local rc=$?
    # Daemons still running are stopped politely first so sanitizer builds get to check them.
    for pid in "${PIDS[@]:-}"; do
        [ -n "$pid" ] && kill -CONT "$pid" 2>/dev/null || true
        [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null || true
    done
    sleep 0.3
    for pid in "${PIDS[@]:-}"; do
        [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null || true
    done
    if [ $rc -eq 0 ] && grep -lE "ERROR: (Address|Leak)Sanitizer|runtime error:" "$WORK"/*.log 2>/dev/null; then
        echo "FAIL: a sanitizer reported an error in the logs above" >&2
        rc=1
    fi
    # A test's own cleanup (unmounting what it mounted in $WORK), before $WORK goes.
    if declare -F test_cleanup >/dev/null; then test_cleanup || true; fi
    if [ $rc -ne 0 ]; then
        echo "--- test failed (status $rc); logs from $WORK:" >&2
        for f in "$WORK"/*.log; do [ -f "$f" ] && { echo "== $f" >&2; tail -n 40 "$f" >&2; }; done
    fi
    rm -rf "$WORK"
    exit $rc
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok: $*"; }

# Kills PID with SIGKILL and returns once it is gone: a process that has been sent SIGKILL still
# holds its sockets until the kernel has torn it down (long for a large sanitizer build), and a
# coordinator restarted on the same port before then cannot bind.
kill_hard() {
    local pid=$1 i
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    for i in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
    fail "process $pid still exists 10 s after SIGKILL"
}

# A free TCP port on loopback.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# jq-like queries on a JSON file with python: json_q FILE 'expression using d'
json_q() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

# Waits until a file contains a pattern (grep -E), up to $3 seconds (default 20).
wait_for_log() {
    local file=$1 pattern=$2 limit=${3:-20} i=0
    while ! grep -qE "$pattern" "$file" 2>/dev/null; do
        i=$((i + 1))
        [ $i -gt $((limit * 10)) ] && fail "timed out waiting for '$pattern' in $file"
        sleep 0.1
    done
}

# Starts a coordinator in the background on a free port; sets COORD_PID and ENDPOINT.
start_coordinator() {
    local port; port=$(free_port)
    ENDPOINT="tcp://127.0.0.1:$port"
    "$FLEETBURN" serve --bind "$ENDPOINT" --db "$WORK/fb.db" --heartbeat-ms 200 --liveness 5 "$@" \
        >>"$WORK/coordinator.log" 2>&1 &
    COORD_PID=$!
    PIDS+=("$COORD_PID")
    wait_for_log "$WORK/coordinator.log" "coordinator on"
}

# Starts an agent NAME in the background; sets AGENT_PID.
start_agent() {
    local name=$1; shift
    "$AGENT" --coordinator "$ENDPOINT" --name "$name" --spool "$WORK/spool-$name" "$@" \
        >>"$WORK/$name.log" 2>&1 &
    AGENT_PID=$!
    PIDS+=("$AGENT_PID")
}
