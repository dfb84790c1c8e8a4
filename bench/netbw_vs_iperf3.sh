#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# netbw against iperf3 with the same number of parallel streams, on loopback and between two
# network namespaces joined by a veth pair (the namespace half needs root; without it, only
# loopback runs).
#
#   bench/netbw_vs_iperf3.sh BUILD_DIR [IPERF3_PATH]
#
# Environment: STREAMS (4), DURATION seconds per direction (5), REPEAT (3): each measurement is
# taken REPEAT times, the tools alternating, and the median is kept, because a shared machine
# moves numbers by more than the difference being measured.
#
# Both tools count what the receiver got after a warm-up: iperf3 -O 1 leaves out its first second,
# netbw its warm-up (duration/10, 0.2-1 s). Both directions are measured: iperf3 forward and -R,
# netbw's two directions (it runs them one after the other). netbw also checks every byte it
# receives; iperf3 checks nothing.
#
# The rate depends on the CPU time a tool gets, which other load on the machine takes away. So
# the CPU time of both ends (user + system, from /usr/bin/time, kernel work done in the
# processes' context included) per byte moved (all bytes, warm-up included) is printed as well:
# it does not move with the load. Results are printed and appended to
# bench/results/netbw-vs-iperf3.txt.
set -euo pipefail

BUILD=${1:?usage: netbw_vs_iperf3.sh BUILD_DIR [IPERF3_PATH]}
IPERF3=${2:-$(command -v iperf3 || true)}
[ -x "$IPERF3" ] || { echo "iperf3 not found (give its path)" >&2; exit 2; }
WORKER="$BUILD/bin/fleetburn-worker"
TIME=/usr/bin/time
[ -x "$TIME" ] || { echo "GNU time (/usr/bin/time) is needed for the CPU cost" >&2; exit 2; }
[ -x "$WORKER" ] || { echo "$WORKER not found" >&2; exit 2; }
STREAMS=${STREAMS:-4}
DURATION=${DURATION:-5}
REPEAT=${REPEAT:-3}
HERE=$(cd "$(dirname "$0")" && pwd)
RESULTS=${RESULTS:-"$HERE/results/netbw-vs-iperf3.txt"}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/fbbench-XXXXXX")
NS_A="fbbench-$$-a"
NS_B="fbbench-$$-b"

# The namespaces are named after this shell's pid: deleting them is safe whether or not they
# were made (setup runs in a subshell of the pipeline below, so no flag would reach here).
cleanup() {
    for ns in "$NS_A" "$NS_B"; do
        ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
        ip netns del "$ns" 2>/dev/null || true
    done
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A veth pair between two namespaces, 10.254.<x>.1 and .2.
setup_ns() {
    [ "$(id -u)" -eq 0 ] || return 1
    local net="10.254.$(($$ % 250))"
    ip netns add "$NS_A" 2>/dev/null || return 1
    ip netns add "$NS_B"
    ip link add "fbba$$" type veth peer name "fbbb$$"
    ip link set "fbba$$" netns "$NS_A"
    ip link set "fbbb$$" netns "$NS_B"
    ip -n "$NS_A" addr add "$net.1/24" dev "fbba$$"
    ip -n "$NS_B" addr add "$net.2/24" dev "fbbb$$"
    for ns in "$NS_A" "$NS_B"; do
        ip -n "$ns" link set lo up
    done
    ip -n "$NS_A" link set "fbba$$" up
    ip -n "$NS_B" link set "fbbb$$" up
    NS_ADDR_A="$net.1"
    NS_ADDR_B="$net.2"
    sleep 1
}

# run_in WHERE cmd...: WHERE is "" (this namespace) or a namespace name.
run_in() {
    local where=$1
    shift
    if [ -n "$where" ]; then ip netns exec "$where" "$@"; else "$@"; fi
}

free_port() { run_in "$1" python3 -c 'import socket; s=socket.socket(); s.bind(("",0)); print(s.getsockname()[1])'; }

# CPU seconds (user + system) in the /usr/bin/time outputs given.
cpu_s() { cat "$@" | awk '{u += $1; s += $2} END {printf "%.3f", u + s}'; }

# iperf3 SERVER_NS CLIENT_NS SERVER_ADDR [-R] -> "Gb/s ns_per_byte": the rate received after the
# omitted second; CPU of both ends over every byte sent, the omitted second included.
iperf3_gbps() {
    local sns=$1 cns=$2 addr=$3 rev=${4:-} port
    port=$(free_port "$sns")
    run_in "$sns" "$TIME" -f "%U %S" -o "$TMP/srv.time" "$IPERF3" -s -1 -B "$addr" -p "$port" \
        >/dev/null 2>&1 &
    local spid=$!
    sleep 0.3
    run_in "$cns" "$TIME" -f "%U %S" -o "$TMP/cli.time" "$IPERF3" -c "$addr" -p "$port" \
        -P "$STREAMS" -t "$DURATION" -O 1 $rev -J >"$TMP/iperf3.json"
    wait $spid || true
    python3 - "$TMP/iperf3.json" "$(cpu_s "$TMP/srv.time" "$TMP/cli.time")" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
moved = sum(i["sum"]["bytes"] for i in d["intervals"])
print("%.3f %.3f" % (d["end"]["sum_received"]["bits_per_second"] / 1e9,
                     float(sys.argv[2]) * 1e9 / moved))
PY
}

# netbw NS_A NS_B ADDR_A ADDR_B -> "a->b b->a rtt_p50 ns_per_byte" (Gb/s, Gb/s, us, ns): CPU of
# both members over every byte received both ways (each member logs its total).
netbw_gbps() {
    local nsa=$1 nsb=$2 aa=$3 ab=$4
    rm -rf "$TMP/x" && mkdir "$TMP/x"
    for r in 0 1; do
        local ns=$([ $r = 0 ] && echo "$nsa" || echo "$nsb")
        run_in "$ns" env FLEETBURN_EXCHANGE_DIR="$TMP/x" "$TIME" -f "%U %S" -o "$TMP/w$r.time" \
            "$WORKER" --workload netbw \
            --task-id bench --result "$TMP/r$r" --node "n$r" --rank $r --size 2 --peers n0,n1 \
            --addresses "$aa,$ab" duration="${DURATION}s" streams="$STREAMS" lat_iters=2000 \
            >"$TMP/netbw$r.log" 2>&1 &
        eval "pid$r=\$!"
    done
    wait "$pid0" "$pid1"
    local moved rates
    moved=$(sed -nE 's/^log netbw: .*: ([0-9]+) bytes received in all.*/\1/p' \
        "$TMP/netbw0.log" "$TMP/netbw1.log" | awk '{s += $1} END {print s}')
    rates=$(sed -nE 's/^log netbw: n0->n1 ([0-9.]+) Gb\/s, n1->n0 ([0-9.]+) Gb\/s, rtt p50 ([0-9.]+) us.*/\1 \2 \3/p' \
        "$TMP/netbw0.log")
    echo "$rates $(awk -v c="$(cpu_s "$TMP/w0.time" "$TMP/w1.time")" -v m="$moved" \
        'BEGIN {printf "%.3f", c * 1e9 / m}')"
}

median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

# compare LABEL NS_A NS_B ADDR_A ADDR_B
compare() {
    local label=$1 nsa=$2 nsb=$3 aa=$4 ab=$5 i f r l c
    for k in if ir nf nr lat icpu ncpu; do : >"$TMP/$k"; done
    for i in $(seq 1 "$REPEAT"); do
        read -r f c < <(iperf3_gbps "$nsb" "$nsa" "$ab")      # a -> b
        echo "$f" >>"$TMP/if"
        echo "$c" >>"$TMP/icpu"
        read -r r c < <(iperf3_gbps "$nsb" "$nsa" "$ab" -R)   # b -> a
        echo "$r" >>"$TMP/ir"
        echo "$c" >>"$TMP/icpu"
        read -r f r l c < <(netbw_gbps "$nsa" "$nsb" "$aa" "$ab")
        echo "$f" >>"$TMP/nf"
        echo "$r" >>"$TMP/nr"
        echo "$l" >>"$TMP/lat"
        echo "$c" >>"$TMP/ncpu"
    done
    local if_ ir nf nr lat icpu ncpu
    if_=$(median <"$TMP/if"); ir=$(median <"$TMP/ir")
    nf=$(median <"$TMP/nf"); nr=$(median <"$TMP/nr"); lat=$(median <"$TMP/lat")
    icpu=$(median <"$TMP/icpu"); ncpu=$(median <"$TMP/ncpu")
    printf "%-16s a->b  iperf3 %7.3f Gb/s  netbw %7.3f Gb/s  ratio %.2f  (runs: iperf3 %s | netbw %s)\n" \
        "$label" "$if_" "$nf" "$(echo "$nf $if_" | awk '{print $1/$2}')" \
        "$(paste -sd, "$TMP/if")" "$(paste -sd, "$TMP/nf")"
    printf "%-16s b->a  iperf3 %7.3f Gb/s  netbw %7.3f Gb/s  ratio %.2f  (runs: iperf3 %s | netbw %s)\n" \
        "$label" "$ir" "$nr" "$(echo "$nr $ir" | awk '{print $1/$2}')" \
        "$(paste -sd, "$TMP/ir")" "$(paste -sd, "$TMP/nr")"
    printf "%-16s CPU per byte, both ends: iperf3 %.3f ns  netbw %.3f ns  (runs: iperf3 %s | netbw %s)\n" \
        "$label" "$icpu" "$ncpu" "$(paste -sd, "$TMP/icpu")" "$(paste -sd, "$TMP/ncpu")"
    printf "%-16s netbw rtt p50 %s us (32-byte ping-pong)\n" "$label" "$lat"
}

{
    echo "== $(date -u +%Y-%m-%dT%H:%M:%SZ) $(uname -r), $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg) ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $("$IPERF3" --version | head -1 | cut -d' ' -f1-2), streams $STREAMS, ${DURATION}s per direction, median of $REPEAT"
    compare "loopback" "" "" 127.0.0.1 127.0.0.1
    if setup_ns; then
        compare "netns veth" "$NS_A" "$NS_B" "$NS_ADDR_A" "$NS_ADDR_B"
    else
        echo "netns veth: skipped (needs root and ip netns)"
    fi
} | tee -a "$RESULTS"
