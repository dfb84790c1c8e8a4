#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Where the CPU time of registering a CURVE fleet goes, per thread: a keyed `fleetburn serve` and
# P fleetburn-simfleet processes (--no-submit) of N/P agents each; once every agent is registered,
# the user+system time of every thread of the coordinator and of each simfleet process (its loop
# thread: the agents' timers, Hellos and heartbeats; its ZeroMQ I/O threads: the clients' half of
# the handshakes). On a shared machine elapsed times move with other work; the CPU times are the
# steadier measure.
#
#   bench/register_cpu.sh BUILD_DIR [N] [P]          # defaults: 4096 agents, 1 process
#
# Environment: REPEAT (1) runs; BEFORE=OTHER_BUILD_DIR alternates runs of OTHER_BUILD_DIR's
# binaries (labelled "before") with BUILD_DIR's ("after"), for an A/B under the same load.
# Writes bench/results/register-cpu-N-<date>.txt (RESULTS overrides).
set -uo pipefail
BUILD=${1:?usage: register_cpu.sh BUILD_DIR [N] [P]}
N=${2:-4096}
P=${3:-1}
REPEAT=${REPEAT:-1}
HERE=$(cd "$(dirname "$0")" && pwd)
RESULTS=${RESULTS:-"$HERE/results/register-cpu-$N-$(date -u +%Y-%m-%d).txt"}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/fbregcpu-XXXXXX")
SP="" PIDS=()
stop_all() {
    [ ${#PIDS[@]} -gt 0 ] && kill "${PIDS[@]}" 2>/dev/null
    [ ${#PIDS[@]} -gt 0 ] && wait "${PIDS[@]}" 2>/dev/null
    [ -n "$SP" ] && kill "$SP" 2>/dev/null && wait "$SP" 2>/dev/null
    SP="" PIDS=()
}
trap 'stop_all; rm -rf "$TMP"' EXIT

threads_cpu() { # PID: "name seconds" per thread, threads of one name summed
    for t in /proc/"$1"/task/*; do
        awk -v n="$(cat "$t/comm")" '{printf "%s %.2f\n", n, ($14 + $15) / 100}' "$t/stat"
    done | awk '{s[$1] += $2} END {for (n in s) if (s[n] > 0) printf " %s %.2f", n, s[n]}'
}

one_run() { # LABEL BIN_DIR
    local label=$1 B=$2 d="$TMP/run" port
    rm -rf "$d"
    mkdir -p "$d/keys/agents"
    "$B/fleetburn" keygen "$d/keys/coordinator" >/dev/null
    "$B/fleetburn" keygen "$d/sim-agent" >/dev/null
    local last=$((N - 1))
    { cat "$d/sim-agent.pub"; echo "nodes: sim-[$(printf "%0${#last}d" 0)-$last]"; } >"$d/keys/agents/sim.pub"
    printf 'seed: 1\nfalse_fail_rate: 0\nfaults: []\n' >"$d/faults.yaml"
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    "$B/fleetburn" serve --bind "tcp://127.0.0.1:$port" --db "$d/fb.db" --max-connections-per-address 0 \
        --keys "$d/keys" >"$d/serve.log" 2>&1 &
    SP=$!
    for _ in $(seq 1 100); do grep -q "coordinator on" "$d/serve.log" && break; sleep 0.1; done
    local load0 per=$((N / P)) p
    load0=$(cut -d' ' -f1 /proc/loadavg)
    for p in $(seq 0 $((P - 1))); do
        "$B/fleetburn-simfleet" --coordinator "tcp://127.0.0.1:$port" --key "$d/sim-agent" \
            --server-key "$d/keys/coordinator.pub" --agents "$per" --first $((p * per)) --fleet "$N" \
            --faults "$d/faults.yaml" --no-submit --stats "$d/stats.$p" 2>"$d/sim.$p.log" &
        PIDS+=($!)
    done
    local waited=0
    while [ "$(cat "$d"/stats.* 2>/dev/null | grep -c '^registered_unix_ms=' || true)" -lt "$P" ]; do
        sleep 0.1
        waited=$((waited + 1))
        if [ "$waited" -ge 3000 ]; then
            echo "$label: not all registered within 300 s (load $load0)"
            stop_all
            return
        fi
    done
    local first lastreg line
    first=$(cat "$d"/stats.* | grep '^start_unix_ms=' | cut -d= -f2 | sort -n | head -1)
    lastreg=$(cat "$d"/stats.* | grep '^registered_unix_ms=' | cut -d= -f2 | sort -n | tail -1)
    line="$label: registered $(awk -v a="$first" -v b="$lastreg" 'BEGIN {printf "%.3f", (b - a) / 1000}') s; coordinator:$(threads_cpu "$SP")"
    for p in "${PIDS[@]}"; do line="$line; simfleet:$(threads_cpu "$p")"; done
    stop_all
    echo "$line; $(grep -o 'connections: [0-9]* accepted' "$d/serve.log" | tail -1); load $load0 before, $(cut -d' ' -f1 /proc/loadavg) after"
}

{
    echo "# CPU time of registering $N CURVE agents ($P fleetburn-simfleet process(es)), per thread, $(date -u +%Y-%m-%dT%H:%MZ), bench/register_cpu.sh"
    echo "# command: REPEAT=$REPEAT${BEFORE:+ BEFORE=BUILD_BEFORE} bench/register_cpu.sh BUILD $N $P; commit $(git -C "$HERE/.." rev-parse --short HEAD)"
    echo "# machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(free -g | awk '/Mem:/ {print $2}') GiB, shared with other work (the load average of each run is given); libzmq $(pkg-config --modversion libzmq)"
    echo "# threads: fleetburn = the coordinator's loop (Hello, store, heartbeats); ZMQbg/IO/0 = its ZeroMQ I/O thread (TCP and CURVE handshakes);"
    echo "#   fleetburn-simfl = a simfleet process's loop (the agents' timers, Hellos, heartbeats); ZMQbg/IO/N = its I/O threads (the clients' side of the handshakes)"
} | tee "$TMP/out"
for i in $(seq 1 "$REPEAT"); do
    [ -n "${BEFORE:-}" ] && one_run "run $i before" "$BEFORE/bin" | tee -a "$TMP/out"
    one_run "run $i${BEFORE:+ after}" "$BUILD/bin" | tee -a "$TMP/out"
done
mkdir -p "$(dirname "$RESULTS")"
cp "$TMP/out" "$RESULTS"
echo "written $RESULTS"
