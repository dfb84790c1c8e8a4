#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# rdmabw against perftest's ib_write_bw on the same link, for wherever RDMA hardware is: two hosts
# reachable by ssh, with perftest and fleetburn installed at the same paths on both.
#
#   bench/rdmabw_vs_perftest.sh HOST_A HOST_B [DEVICE [IB_WRITE_BW_PATH]]
#
#   HOST_A, HOST_B    ssh destinations (HOST_A must reach HOST_B by that name for ib_write_bw)
#   DEVICE            HCA on both hosts, mlx5_0 (default) or mlx5_0:1
#   IB_WRITE_BW_PATH  ib_write_bw on the hosts (default: ib_write_bw from their PATH)
#
# Environment:
#   FB_BIN     directory of fleetburn-agent on the hosts (default: this build's bin/, which must
#              exist at the same path there, e.g. on a shared file system)
#   FB_LOCAL   directory of fleetburn on this machine (default: FB_BIN)
#   COORD      the address the hosts reach this machine at (default: hostname -f)
#   ITERS      messages per size (5000, ib_write_bw's default), REPEAT (3) runs of each tool,
#              alternating, the median of each kept
#   GPU        no (default) or yes: both tools use the GPU nearest the HCA (ib_write_bw
#              --use_cuda=0 then; set PERFTEST_GPU_ARGS to change that)
#   SSH        ssh command (default: ssh -o BatchMode=yes)
#
# Both tools run write bandwidth, one direction (A writes to B), sizes 2 B to 8 MiB, a window of
# 128 outstanding writes, and report Gb/s as 10^9 bits per second ("BW average": all bytes over
# the time from the first post to the last completion). The comparison is per size, fleetburn's
# rdmabw.write.<size>.avg_gbps of HOST_A (the member that wrote first) against ib_write_bw's
# "BW average[Gb/sec]" column. The goal is within 2% from 64 KiB up. Results are printed and
# appended to bench/results/rdmabw-vs-perftest.txt.
set -euo pipefail

A=${1:?usage: rdmabw_vs_perftest.sh HOST_A HOST_B [DEVICE [IB_WRITE_BW_PATH]]}
B=${2:?usage: rdmabw_vs_perftest.sh HOST_A HOST_B [DEVICE [IB_WRITE_BW_PATH]]}
DEVICE=${3:-mlx5_0}
IB_WRITE_BW=${4:-ib_write_bw}
HERE=$(cd "$(dirname "$0")" && pwd)
FB_BIN=${FB_BIN:-$(cd "$HERE/../build/bin" 2>/dev/null && pwd || echo /usr/local/bin)}
FB_LOCAL=${FB_LOCAL:-$FB_BIN}
COORD=${COORD:-$(hostname -f)}
ITERS=${ITERS:-5000}
REPEAT=${REPEAT:-3}
GPU=${GPU:-no}
SSH=${SSH:-ssh -o BatchMode=yes}
RESULTS=${RESULTS:-"$HERE/results/rdmabw-vs-perftest.txt"}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/fbrdma-XXXXXX")
HCA=${DEVICE%%:*}
PORT_ARGS=""
[ "$HCA" != "$DEVICE" ] && PORT_ARGS="-i ${DEVICE#*:}"
PERFTEST_GPU_ARGS=${PERFTEST_GPU_ARGS:---use_cuda=0}
GPU_ARGS=""
[ "$GPU" = yes ] && GPU_ARGS=$PERFTEST_GPU_ARGS

[ -x "$FB_LOCAL/fleetburn" ] || { echo "$FB_LOCAL/fleetburn not found (set FB_LOCAL)" >&2; exit 2; }
SPOOL="/tmp/fbrdma-bench-$$"
COORD_PID=""
declare -A AGENT_PID=()
cleanup() {
    for h in "${!AGENT_PID[@]}"; do
        $SSH "$h" "kill ${AGENT_PID[$h]}; rm -rf $SPOOL-$h $SPOOL-$h.log" >/dev/null 2>&1 || true
    done
    [ -n "$COORD_PID" ] && kill "$COORD_PID" 2>/dev/null || true
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- perftest -----------------------------------------------------------------------------------
# One ib_write_bw -a run. Its client writes to its server, so B serves and A writes: the same
# direction as the first half of rdmabw's write steps (rank 0, HOST_A, writes first).
perftest_run() {
    local out=$1
    $SSH "$B" "$IB_WRITE_BW -d $HCA $PORT_ARGS $GPU_ARGS -a -n $ITERS -F --report_gbits" \
        >"$TMP/server.log" 2>&1 &
    local spid=$!
    sleep 2
    $SSH "$A" "$IB_WRITE_BW -d $HCA $PORT_ARGS $GPU_ARGS -a -n $ITERS -F --report_gbits $B" >"$out" 2>&1
    wait "$spid" || true
}

# "#bytes #iterations BW peak BW average MsgRate" rows -> "bytes avg_gbps" lines.
perftest_table() {
    awk '$1 ~ /^[0-9]+$/ && NF >= 5 { print $1, $4 }' "$1"
}

# ---- fleetburn ----------------------------------------------------------------------------------
start_fleetburn() {
    local port
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("",0)); print(s.getsockname()[1])')
    "$FB_LOCAL/fleetburn" serve --bind "tcp://*:$port" --db "$TMP/fb.db" >"$TMP/coordinator.log" 2>&1 &
    COORD_PID=$!
    sleep 1
    for h in "$A" "$B"; do
        AGENT_PID[$h]=$($SSH "$h" "nohup $FB_BIN/fleetburn-agent --coordinator tcp://$COORD:$port \
            --name $h --spool $SPOOL-$h >$SPOOL-$h.log 2>&1 </dev/null & echo \$!")
    done
    ENDPOINT="tcp://127.0.0.1:$port"
    for _ in $(seq 1 60); do
        [ "$(grep -c 'registered' "$TMP/coordinator.log" || true)" -ge 2 ] && return 0
        sleep 1
    done
    echo "the agents on $A and $B did not register with $COORD:$port" >&2
    cat "$TMP/coordinator.log" >&2
    exit 3
}

fleetburn_run() {
    local out=$1 n=$2
    cat >"$TMP/campaign.yaml" <<YAML
name: rdmabw-vs-perftest-$n
stages:
  - name: write
    workload: rdmabw
    scope: pairs
    rounds: 1
    timeout: 30m
    params: {modes: write, min_size: 2, max_size: 8MiB, iters: $ITERS, lat_iters: 0,
             device: "$DEVICE", gpu_memory: $GPU, min_gbps: 0.001}
YAML
    "$FB_LOCAL/fleetburn" run --coordinator "$ENDPOINT" "$TMP/campaign.yaml" >"$TMP/run.out" 2>&1 ||
        { echo "rdmabw run failed:" >&2; cat "$TMP/run.out" >&2; exit 3; }
    "$FB_LOCAL/fleetburn" report --db "$TMP/fb.db" --format json >"$TMP/report.json"
    python3 - "$TMP/report.json" "$A" >"$out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
rows = 0
for t in d["stages"][0]["tasks"]:
    for r in t.get("results", []):
        if r.get("node") not in (None, sys.argv[2]):
            continue
        for name, v in r["metrics"].items():
            p = name.split(".")
            if len(p) == 4 and p[:2] == ["rdmabw", "write"] and p[3] == "avg_gbps":
                print(p[2], v)
                rows += 1
        if not rows:
            print("rdmabw on %s measured nothing: %s %s" % (sys.argv[2], r.get("verdict"),
                  r.get("error") or ""), file=sys.stderr)
        break
PY
}

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'; }

# ---- the comparison -------------------------------------------------------------------------------
start_fleetburn
for n in $(seq 1 "$REPEAT"); do
    perftest_run "$TMP/perftest.$n.log"
    perftest_table "$TMP/perftest.$n.log" >"$TMP/perftest.$n.txt"
    fleetburn_run "$TMP/fleetburn.$n.txt" "$n"
done

{
    echo "# rdmabw vs ib_write_bw, $(date -u +%Y-%m-%dT%H:%MZ), $A -> $B, $DEVICE, iters $ITERS, gpu $GPU, median of $REPEAT"
    printf "%10s %16s %16s %8s\n" bytes "ib_write_bw" "rdmabw" "diff%"
    for size in $(awk '{ print $1 }' "$TMP/perftest.1.txt"); do
        p=$(for n in $(seq 1 "$REPEAT"); do awk -v s="$size" '$1 == s { print $2 }' "$TMP/perftest.$n.txt"; done | median)
        f=$(for n in $(seq 1 "$REPEAT"); do awk -v s="$size" '$1 == s { print $2 }' "$TMP/fleetburn.$n.txt"; done | median)
        [ -n "$p" ] && [ -n "$f" ] || continue
        printf "%10s %16.2f %16.2f %8.2f\n" "$size" "$p" "$f" "$(python3 -c "print(($f - $p) / $p * 100 if $p else 0)")"
    done
} | tee -a "$RESULTS"
