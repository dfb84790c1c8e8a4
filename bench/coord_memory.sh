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
# Environment: CURVE=0 for plaintext; TIMES="10 60 ..." the sample times in seconds.
# Writes bench/results/coord-memory[-curve]-N-<date>.txt (RESULTS overrides).
set -euo pipefail
BUILD=${1:?usage: coord_memory.sh BUILD_DIR [N] [SECONDS]}
N=${2:-1024}
SECS=${3:-960}
CURVE=${CURVE:-1}
TIMES=${TIMES:-$(for t in 10 30 60 120 180 240 300 360 420 480 540 600 720 840 960 1200 1500 1800; do [ "$t" -le "$SECS" ] && echo $t; done)}
HERE=$(cd "$(dirname "$0")" && pwd)
RESULTS=${RESULTS:-"$HERE/results/coord-memory$([ "$CURVE" = 1 ] && echo -curve)-$N-$(date -u +%Y-%m-%d).txt"}
B="$BUILD/bin"
d=$(mktemp -d "${TMPDIR:-/tmp}/fbmem-XXXXXX")
SP="" SIMP=""
trap 'kill $SIMP $SP 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$d"' EXIT
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
"$B/fleetburn" serve --bind "tcp://127.0.0.1:$port" --db "$d/fb.db" --max-connections-per-address 0 \
    "${keys[@]}" >"$d/serve.log" 2>&1 &
SP=$!
for _ in $(seq 1 100); do grep -q "coordinator on" "$d/serve.log" && break; sleep 0.1; done
idle=$(awk '/VmRSS/{print $2}' "/proc/$SP/status")
printf 'seed: 1\nfalse_fail_rate: 0\nfaults: []\n' >"$d/faults.yaml"
start=$(date +%s)
"$B/fleetburn-simfleet" --coordinator "tcp://127.0.0.1:$port" "${akeys[@]}" --agents "$N" --fleet "$N" \
    --faults "$d/faults.yaml" --no-submit --stats "$d/stats" >"$d/sim.log" 2>&1 &
SIMP=$!
{
    echo "# fleetburn coordinator resident memory over time, $(date -u +%Y-%m-%dT%H:%MZ), bench/coord_memory.sh"
    echo "# command: CURVE=$CURVE bench/coord_memory.sh BUILD $N $SECS; commit $(git -C "$HERE/.." rev-parse --short HEAD)"
    echo "# machine: $(nproc) CPUs, $(free -g | awk '/Mem:/ {print $2}') GiB, load at start $(cut -d' ' -f1-3 /proc/loadavg); libzmq $(pkg-config --modversion libzmq)"
    echo "# $N simulated agents (one fleetburn-simfleet process, --no-submit), CURVE=$CURVE, heartbeat 1 s; idle coordinator before they joined: $idle KiB"
    echo "seconds  rss_kib  kib_per_agent"
} >"$d/out"
for t in $TIMES; do
    while [ $(($(date +%s) - start)) -lt "$t" ]; do sleep 1; done
    kill -0 "$SP" 2>/dev/null || { echo "coordinator died:" >&2; tail "$d/serve.log" >&2; exit 1; }
    rss=$(awk '/VmRSS/{print $2}' "/proc/$SP/status")
    printf '%7d  %7d  %7.1f\n' "$t" "$rss" "$(echo "($rss - $idle) / $N" | bc -l)" | tee -a "$d/out"
done
reg=$(grep -c '^registered_unix_ms=' "$d/stats" 2>/dev/null || true)
echo "# all $N registered: $([ "${reg:-0}" -ge 1 ] && echo yes || echo NO)" >>"$d/out"
mkdir -p "$(dirname "$RESULTS")"
cp "$d/out" "$RESULTS"
echo "written $RESULTS"
