#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The driver-upgrade regression of docs/operations.md, on loopback with 4 local agents: a baseline
# run, then a run after a "driver upgrade" (the agents read a copy of the gpu-node fixture tree
# whose NVIDIA driver version changes) in which every node sends 25% slower and local-2 70% slower.
# Links are paced (netbw's test-only inject_rate_mbit) at 200 Mbit/s, then 150 and 60: what the
# comparison is told apart is a fleet-wide shift with the driver change beside it, and one node
# worse than the shifted fleet. Prints every command and its output.
#
#   bench/compare_demo.sh [BUILD_DIR] > bench/results/compare-demo-2026-11-24.txt
set -euo pipefail
BIN=$(cd "${1:-build}" && pwd)/bin
SRC=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/fbdemo-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
cp -a "$SRC/tests/fixtures/sysfs/gpu-node" root
export FLEETBURN_SYSFS_ROOT="$WORK/root"
cat >rack.yaml <<'EOF'
name: rack7-net
stages:
  - name: network
    workload: netbw
    scope: pairs
    rounds: 3
    params: {duration: 1s, streams: 2, lat_iters: 200}
EOF
pace() { for i in 0 1 2 3; do r=$1; [ "$i" = 2 ] && r=$2; echo "--inject local-$i:netbw.inject_rate_mbit=$r"; done; }
show() { echo "\$ $*" | sed "s|$BIN/||; s|$WORK/||g"; set +e; "$@" 2>/dev/null | sed "s|$WORK/||g"; echo "(exit $?)"; set -e; echo; }

# shellcheck disable=SC2046
"$BIN/fleetburn" run --local 4 --db fb.db $(pace 200 200) rack.yaml >/dev/null 2>&1
BASE=$(python3 -c 'import sqlite3; print(sqlite3.connect("fb.db").execute("SELECT id FROM campaigns").fetchone()[0])')
show "$BIN/fleetburn" baseline set before-580.95 "$BASE" --db fb.db
sed -i 's/580\.65\.06/580.95.05/' root/proc/driver/nvidia/version
# shellcheck disable=SC2046
show "$BIN/fleetburn" run --local 4 --db fb.db $(pace 150 60) --baseline before-580.95 rack.yaml
show "$BIN/fleetburn" baseline list --db fb.db
NOW=$(python3 -c 'import sqlite3; print(sqlite3.connect("fb.db").execute("SELECT id FROM campaigns ORDER BY started_ms DESC").fetchone()[0])')
show "$BIN/fleetburn" compare before-580.95 "$NOW" --db fb.db --format json
