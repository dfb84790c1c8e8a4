#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The coordinator's resident memory over time with an idle registered fleet: N simulated agents
# (one fleetburn-simfleet process, --no-submit) joined to a `fleetburn serve`, CURVE on by
# default, heartbeats at the default 1 s. bench/scale.sh measures the peak during a short
# campaign; this measures what a fleet costs after minutes, as in an overnight run: libzmq's
# per-connection message queues grow in chunks of 256 messages and reach their steady size only
# after several hundred heartbeats.
#
#   bench/coord_memory.sh BUILD_DIR [N] [SECONDS]          # defaults: 1024 agents, 960 s
#
# Environment: CURVE=0 for plaintext; TIMES="10 60 ..." the sample times in seconds; PROCS=P
# fleetburn-simfleet processes of N/P agents each (--first, --fleet), for fleets larger than one
# process's descriptor limit holds (about 9000 agents under 20000); HEAPTRACK=1 runs the coordinator
# under heaptrack and appends who holds its heap at the peak (the last sample), by allocation
# site and by allocation size (libzmq's own structures have sizes of their own: 16400-byte message
# queue chunks, 18160-byte decoder buffers, 8192-byte encoder buffers); SERVE_ARGS: more `fleetburn
# serve` options (a fleet of 16384 connecting at once needs "--handshake-timeout 30s").
# Writes bench/results/coord-memory[-curve]-N-<date>.txt (RESULTS overrides).
set -euo pipefail
BUILD=${1:?usage: coord_memory.sh BUILD_DIR [N] [SECONDS]}
N=${2:-1024}
SECS=${3:-960}
CURVE=${CURVE:-1}
PROCS=${PROCS:-1}
TIMES=${TIMES:-$(for t in 10 30 60 120 180 240 300 360 420 480 540 600 720 840 960 1200 1500 1800; do [ "$t" -le "$SECS" ] && echo $t; done)}
HERE=$(cd "$(dirname "$0")" && pwd)
RESULTS=${RESULTS:-"$HERE/results/coord-memory$([ "$CURVE" = 1 ] && echo -curve)-$N-$(date -u +%Y-%m-%d).txt"}
B="$BUILD/bin"
d=$(mktemp -d "${TMPDIR:-/tmp}/fbmem-XXXXXX")
SP="" SIMP=""
trap 'kill $SIMP $SP 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$d"' EXIT
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
mkdir -p "$d/keys/agents" "$d/keys/operators"
keys=() akeys=()
if [ "$CURVE" = 1 ]; then
    "$B/fleetburn" keygen "$d/keys/coordinator" >/dev/null
    "$B/fleetburn" keygen "$d/sim-agent" >/dev/null
    LAST=$((N - 1))
    { cat "$d/sim-agent.pub"; echo "nodes: sim-[$(printf "%0${#LAST}d" 0)-$LAST]"; } >"$d/keys/agents/sim.pub"
    keys=(--keys "$d/keys")
    akeys=(--key "$d/sim-agent" --server-key "$d/keys/coordinator.pub")
fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
HT=()
[ "${HEAPTRACK:-0}" = 1 ] && HT=(heaptrack -o "$d/heap")
"${HT[@]}" "$B/fleetburn" serve --bind "tcp://127.0.0.1:$port" --db "$d/fb.db" --max-connections-per-address 0 \
    "${keys[@]}" ${SERVE_ARGS:-} >"$d/serve.log" 2>&1 &
SP=$!
HTP=""
if [ "${HEAPTRACK:-0}" = 1 ]; then # the coordinator is heaptrack's child
    HTP=$SP
    for _ in $(seq 1 100); do SP=$(pgrep -P "$HTP" -f "fleetburn serve" || true); [ -n "$SP" ] && break; sleep 0.1; done
fi
for _ in $(seq 1 100); do grep -q "coordinator on" "$d/serve.log" && break; sleep 0.1; done
idle=$(awk '/VmRSS/{print $2}' "/proc/$SP/status")
printf 'seed: 1\nfalse_fail_rate: 0\nfaults: []\n' >"$d/faults.yaml"
start=$(date +%s)
PER=$((N / PROCS))
for p in $(seq 0 $((PROCS - 1))); do
    n=$([ "$p" -eq $((PROCS - 1)) ] && echo $((N - p * PER)) || echo "$PER")
    "$B/fleetburn-simfleet" --coordinator "tcp://127.0.0.1:$port" "${akeys[@]}" --agents "$n" \
        --first $((p * PER)) --fleet "$N" --faults "$d/faults.yaml" --no-submit --stats "$d/stats.$p" \
        >"$d/sim.$p.log" 2>&1 &
    SIMP="$SIMP $!"
done
{
    echo "# fleetburn coordinator resident memory over time, $(date -u +%Y-%m-%dT%H:%MZ), bench/coord_memory.sh"
    echo "# command: $([ "$PROCS" -gt 1 ] && echo "PROCS=$PROCS ")$([ -n "${SERVE_ARGS:-}" ] && echo "SERVE_ARGS=\"$SERVE_ARGS\" ")CURVE=$CURVE bench/coord_memory.sh BUILD $N $SECS; commit $(git -C "$HERE/.." rev-parse --short HEAD)"
    echo "# machine: $(nproc) CPUs, $(free -g | awk '/Mem:/ {print $2}') GiB, load at start $LOAD_BEFORE; libzmq $(pkg-config --modversion libzmq); open-file limit $(ulimit -n) per process"
    echo "# $N simulated agents ($PROCS fleetburn-simfleet process(es), --no-submit), CURVE=$CURVE, heartbeat 1 s; idle coordinator before they joined: $idle KiB"
    echo "seconds  rss_kib  kib_per_agent  load"
} >"$d/out"
for t in $TIMES; do
    while [ $(($(date +%s) - start)) -lt "$t" ]; do sleep 1; done
    kill -0 "$SP" 2>/dev/null || { echo "coordinator died:" >&2; tail "$d/serve.log" >&2; exit 1; }
    rss=$(awk '/VmRSS/{print $2}' "/proc/$SP/status")
    printf '%7d  %7d  %7.1f  %s\n' "$t" "$rss" "$(echo "($rss - $idle) / $N" | bc -l)" \
        "$(cut -d' ' -f1 /proc/loadavg)" | tee -a "$d/out"
done
reg=$(cat "$d"/stats.* 2>/dev/null | grep -c '^registered_unix_ms=' || true)
echo "# all $N registered: $([ "${reg:-0}" -ge "$PROCS" ] && echo yes || echo NO); coordinator peak (VmHWM) $(awk '/VmHWM/{print $2}' "/proc/$SP/status") KiB" >>"$d/out"
if [ -n "$HTP" ]; then
    kill -INT "$SP"
    wait "$HTP" 2>/dev/null || true
    {
        echo "# heaptrack (the coordinator stopped while every agent was connected, so its peak is the last sample):"
        heaptrack_print -f "$d"/heap.* -p 1 -a 0 -T 0 -l 0 -s 0 -n 8 2>/dev/null \
            | grep -E '^[0-9.]+[KMG]? peak memory|^  in |^[a-zA-Z_]|^peak heap|^peak RSS|^total runtime' \
            | grep -v '^reading\|^Debuggee\|^finished\|^PEAK' | sed 's/^/#   /'
        heaptrack_print -f "$d"/heap.* -H "$d/sizes" -p 0 -a 0 -T 0 -l 0 -s 0 >/dev/null 2>&1 || true
        echo "# allocation sizes by bytes allocated over the run (size, calls, calls per agent):"
        awk '{print $1 * $2, $1, $2}' "$d/sizes" | sort -g -r | head -8 \
            | awk -v n="$N" '{printf "#   %8d B  %8d calls  %6.1f per agent\n", $2, $3, $3 / n}'
    } >>"$d/out"
fi
mkdir -p "$(dirname "$RESULTS")"
cp "$d/out" "$RESULTS"
echo "written $RESULTS"
