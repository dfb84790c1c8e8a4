# SPDX-License-Identifier: Apache-2.0
# Shared helpers for integration tests: real fleetburn programs on loopback, a private work
# directory removed on exit, and every process a test started killed on exit.
set -euo pipefail

FB_BIN=${FB_BIN:-$(cd "$(dirname "$0")/../../build" && pwd)}
FB_SRC=${FB_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
FLEETBURN="$FB_BIN/bin/fleetburn"
AGENT="$FB_BIN/bin/fleetburn-agent"
SIMFLEET="$FB_BIN/bin/fleetburn-simfleet"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/fbtest-XXXXXX")
# Everything the test starts makes its temporary files in $WORK, which goes on exit: an agent
# killed with SIGKILL cannot remove its work directory itself.
export TMPDIR="$WORK"
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
json_q() { python3 -c "import json,re,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

# Waits until a file contains a pattern (grep -E), up to $3 seconds (default 20).
wait_for_log() {
    local file=$1 pattern=$2 limit=${3:-20} i=0
    while ! grep -qE "$pattern" "$file" 2>/dev/null; do
        i=$((i + 1))
        [ $i -gt $((limit * 10)) ] && fail "timed out waiting for '$pattern' in $file"
        sleep 0.1
    done
}

# Starts `fleetburn serve` in the background on $ENDPOINT with the tests' database ($WORK/fb.db),
# 200 ms heartbeats, liveness 5 and SERVE-OPTIONS, its output appended to LOG; sets COORD_PID.
# It does not wait: a coordinator started again on a log that already says "coordinator on"
# would not be waited for by that line, so each caller waits for what it needs.
serve_in_background() { # log [serve-options...]
    local log=$1
    shift
    "$FLEETBURN" serve --bind "$ENDPOINT" --db "$WORK/fb.db" --heartbeat-ms 200 --liveness 5 "$@" \
        >>"$log" 2>&1 &
    COORD_PID=$!
    PIDS+=("$COORD_PID")
}

# Waits until FILE holds at least COUNT lines matching PATTERN (grep -E), up to SECONDS; fails
# the test with WHAT when it does not.
wait_for_lines() { # file pattern count seconds what
    local i=0
    until [ "$(grep -cE "$2" "$1" 2>/dev/null || true)" -ge "$3" ]; do
        i=$((i + 1))
        [ $i -gt $(($4 * 10)) ] && fail "$5"
        sleep 0.1
    done
}

# Starts a coordinator in the background on a free port; sets COORD_PID and ENDPOINT.
start_coordinator() {
    local port; port=$(free_port)
    ENDPOINT="tcp://127.0.0.1:$port"
    serve_in_background "$WORK/coordinator.log" "$@"
    wait_for_log "$WORK/coordinator.log" "coordinator on"
}

# Keys for a keyed coordinator as on a fleet, under $WORK/keys: the coordinator's, one agent key
# ($WORK/agent.key) whose public half says which nodes may register with it (nodes: NODES), and
# an operator key ($WORK/operator.key).
make_fleet_keys() { # nodes
    local k="$WORK/keys"
    mkdir -p "$k/agents" "$k/operators"
    "$FLEETBURN" keygen "$k/coordinator" >/dev/null
    "$FLEETBURN" keygen "$WORK/agent.key" >/dev/null
    "$FLEETBURN" keygen "$WORK/operator.key" >/dev/null
    { cat "$WORK/agent.key.pub"; echo "nodes: $1"; } >"$k/agents/fleet.pub"
    cp "$WORK/operator.key.pub" "$k/operators/operator.pub"
}

# Starts an agent NAME in the background; sets AGENT_PID.
start_agent() {
    local name=$1; shift
    "$AGENT" --coordinator "$ENDPOINT" --name "$name" --spool "$WORK/spool-$name" "$@" \
        >>"$WORK/$name.log" 2>&1 &
    AGENT_PID=$!
    PIDS+=("$AGENT_PID")
}

# Starts each agent named and waits until the coordinator has registered them all.
start_agents() {
    local name
    for name in "$@"; do start_agent "$name"; done
    wait_registered "$@"
}

# Kills agent NAME (process PID) with SIGKILL and prints the milliseconds until the coordinator
# declared it lost; fails the test if that takes more than 5 s.
ms_until_lost() { # name pid
    local start
    start=$(date +%s%N)
    kill -KILL "$2"
    wait_for_log "$WORK/coordinator.log" "agent $1 lost" 5
    echo $((($(date +%s%N) - start) / 1000000))
}

# Waits until the coordinator's log says each agent named registered.
wait_registered() {
    local name
    for name in "$@"; do wait_for_log "$WORK/coordinator.log" "agent $name registered"; done
}

# Submits campaign FILE to the coordinator with `fleetburn run --coordinator` and RUN-OPTIONS in
# the background, its output in $WORK/NAME.out and its log in $WORK/NAME.log (NAME: run by
# default); sets RUN_PID.
run_in_background() { # file [name [run-options...]]
    local file=$1 name=${2:-run}
    shift $(($# < 2 ? $# : 2))
    "$FLEETBURN" run --coordinator "$ENDPOINT" "$@" "$file" >"$WORK/$name.out" 2>"$WORK/$name.log" &
    RUN_PID=$!
    PIDS+=("$RUN_PID")
}

# Prints a two-tier fabric in the topology file's form (docs/scheduling.md): LEAVES leaves
# (leaf01, ...) of PER-LEAF nodes each, named PREFIX and a number from 0 with WIDTH digits, and
# SPINES spines (spine01, ...) each joined to every leaf.
leaf_spine_topo() { # prefix leaves per-leaf spines width
    local prefix=$1 leaves=$2 per=$3 spines=$4 width=$5 i
    for i in $(seq 1 "$leaves"); do
        printf 'leaf%02d: %s[%0*d-%0*d]\n' "$i" "$prefix" "$width" $(((i - 1) * per)) "$width" $((i * per - 1))
    done
    for i in $(seq 1 "$spines"); do printf 'spine%02d: leaf[01-%02d]\n' "$i" "$leaves"; done
}

# Writes to FILE a campaign NAME on NODES of one stage, nap: the sleep workload with PARAMS (the
# inside of a YAML flow mapping, e.g. "duration: 5s") and a timeout of TIMEOUT (1m by default).
nap_campaign() { # file name nodes params [timeout]
    cat >"$1" <<YAML
name: $2
nodes: $3
stages:
  - {name: nap, workload: sleep, timeout: ${5:-1m}, params: {$4}}
YAML
}

# Waits until `fleetburn run` has logged its submission in LOG and prints the campaign's id.
submitted_id() {
    wait_for_log "$1" "^submitted .* as [^ ]+ to"
    sed -n 's/^submitted .* as \([^ ]*\) to .*/\1/p' "$1"
}

# Runs a command (with the redirections the caller gives the call) and puts its exit status into
# the variable named VAR, where set -e would end the test at a status other than 0.
status_of() { # var cmd...
    local var=$1 status=0
    shift
    "$@" || status=$?
    printf -v "$var" '%d' "$status"
}

# Runs a command with its output and errors in LOGFILE and fails the test unless it exits with
# the expected status.
expect_exit() { # expected-status logfile cmd...
    local want=$1 log=$2 rc=0
    shift 2
    "$@" >"$log" 2>&1 || rc=$?
    [ $rc -eq "$want" ] || fail "'$*' exited $rc, expected $want: $(cat "$log")"
}

# fleetburn-simfleet, which must refuse its arguments: exit status 2 and WANT (a fixed string)
# in what it wrote to standard error ($WORK/bad.log).
expect_simfleet_usage() { # want simfleet-arguments...
    local want=$1 code=0
    shift
    "$SIMFLEET" "$@" >"$WORK/bad.out" 2>"$WORK/bad.log" || code=$?
    [ $code -eq 2 ] || fail "$* exited $code, expected 2"
    grep -qF -- "$want" "$WORK/bad.log" || fail "expected '$want' in: $(cat "$WORK/bad.log")"
}

# Moves the logs of the coordinators fleetburn-simfleet started under $WORK (TMPDIR) into
# $WORK/coordinator.log, where the sanitizer check of cleanup looks, and removes their folders.
collect_simfleet_logs() {
    local d
    for d in "$WORK"/fleetburn-simfleet-*; do
        [ -d "$d" ] || continue
        cat "$d/coordinator.log" >>"$WORK/coordinator.log" 2>/dev/null || true
        rm -rf "$d"
    done
}

# Runs fleetburn-simfleet with SIMFLEET-ARGUMENTS, its report in $WORK/NAME.json and what it
# printed in $WORK/NAME.out and $WORK/NAME.log, and puts its exit status into SIM_RC; the logs
# of the coordinators a --keep run left are collected (collect_simfleet_logs).
run_simfleet() { # name simfleet-arguments...
    local name=$1
    shift
    status_of SIM_RC "$SIMFLEET" "$@" --report-json "$WORK/$name.json" >"$WORK/$name.out" 2>"$WORK/$name.log"
    collect_simfleet_logs
}
