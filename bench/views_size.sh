#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Size and time of the operator views on simulated fleets: for each N, fleetburn-simfleet runs a
# node-local memtest stage and a netbw pairs stage on N agents (one hard node fault) into a
# database; then `fleetburn report --format html` (bytes, seconds: median of REPEAT runs) and
# /metrics of `fleetburn serve --http` on that database (bytes, seconds per scrape with curl:
# median of REPEAT scrapes). Prints one line per N.
#
#   bench/views_size.sh BUILD_DIR [N ...]        (default N: 64 1024 4096)
set -euo pipefail
BUILD=$(cd "$1" && pwd)
SRC=$(cd "$(dirname "$0")/.." && pwd)
shift
SIZES=("$@")
[ $# -eq 0 ] && SIZES=(64 1024 4096)
REPEAT=${REPEAT:-5}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/fb-views-XXXXXX")
SERVE_PID=""
trap '[ -n "$SERVE_PID" ] && kill "$SERVE_PID" 2>/dev/null; rm -rf "$WORK"' EXIT
FB="$BUILD/bin/fleetburn"
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

cp "$SRC/tests/fixtures/campaigns/sim-memtest-netbw.yaml" "$WORK/c.yaml"
printf '%8s %14s %12s %14s %12s\n' nodes html_bytes html_s metrics_bytes metrics_s
for n in "${SIZES[@]}"; do
    db="$WORK/n$n.db"
    last=$((n - 1))
    printf 'seed: 7\nfalse_fail_rate: 0\nfaults:\n  - {node: sim-%0*d, kind: hard}\n' "${#last}" 3 >"$WORK/f.yaml"
    TMPDIR="$WORK" "$BUILD/bin/fleetburn-simfleet" --agents "$n" --faults "$WORK/f.yaml" \
        --campaign "$WORK/c.yaml" --report-json "$WORK/r.json" --db "$db" --delay-ms 0-5 \
        >/dev/null 2>"$WORK/sim.log" || [ $? -eq 1 ]
    html_s=$(for i in $(seq "$REPEAT"); do
        /usr/bin/time -f %e "$FB" report --db "$db" --format html 2>&1 >"$WORK/r.html" | tail -1
    done | median)
    html_bytes=$(stat -c %s "$WORK/r.html")
    hp=$(port)
    "$FB" serve --bind "tcp://127.0.0.1:$(port)" --db "$db" --http "127.0.0.1:$hp" >"$WORK/serve.log" 2>&1 &
    SERVE_PID=$!
    for i in $(seq 100); do curl -sf "http://127.0.0.1:$hp/metrics" -o /dev/null && break; sleep 0.1; done
    metrics_s=$(for i in $(seq "$REPEAT"); do
        curl -s -o "$WORK/m.txt" -w '%{time_total}\n' "http://127.0.0.1:$hp/metrics"
    done | median)
    metrics_bytes=$(stat -c %s "$WORK/m.txt")
    kill "$SERVE_PID"
    wait "$SERVE_PID" 2>/dev/null || true
    SERVE_PID=""
    printf '%8s %14s %12s %14s %12s\n' "$n" "$html_bytes" "$html_s" "$metrics_bytes" "$metrics_s"
done
