#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Coordinator scale with simulated agents: N agents (default 4096) of fleetburn-simfleet, each
# with its own ZeroMQ connection, against the real coordinator (`fleetburn serve`, its own
# process). Measures the time until all are registered, the time from a stage's start until every
# one of its N results is stored (results come back at once: --delay-ms 0), and the coordinator's
# resident memory. Goals: registered within 10 s, stage dispatched and stored within 3 s,
# coordinator under 256 MB for 4096 agents (issue 5) and under 512 MB for more (issue 11: 16384).
# KEEP=1 keeps the work directory (logs, databases of PROCS runs).
#
#   bench/scale.sh BUILD_DIR [N]
#
# Environment: REPEAT (3) runs; the median of each number is kept, because the machine is shared.
# CURVE=1: every connection with CURVE keys (fleetburn-simfleet --curve: a keyed coordinator, one
# agent key for sim-*, an operator key for the submission).
# With CURVE=1, FLEETBURN_SECUREMEM=libsodium in the environment measures libsodium's own guarded
# allocator for CURVE secrets instead of fleetburn's locked pool (docs/security.md).
# PROCS=P (default 1): one fleet from P fleetburn-simfleet processes, for fleets larger than one
# process's descriptor limit allows (about 2 descriptors per agent; a hard limit of 20000 holds
# about 9000 agents): the script starts `fleetburn serve` itself (with CURVE=1 on keys it makes:
# the coordinator's, one agent key with a nodes: line for the whole fleet, an operator key), then
# P-1 agent-only processes (--no-submit) and one that waits until the coordinator's database lists
# the whole fleet alive and submits, each with N/P agents (--first, --fleet). Registration is
# timed from the first process starting its agents to the last agent welcomed (each process's
# stats file, epoch ms); the coordinator's memory and CPU are read from /proc by the submitting
# process (--coordinator-pid).
# RELAYS=R (with PROCS > 1; R a multiple of PROCS dividing N): the agents connect to R `fleetburn
# relay` processes the script starts (N/R agents each, in contiguous name ranges; with CURVE=1
# each relay has its own key, in the coordinator's keys/relays/ with a nodes: line for its range),
# and only the relays connect to the coordinator (docs/operations.md "Relays"). The relays' peak
# resident memory (VmHWM) is read from /proc before they stop, and reported summed. RELAY_ARGS:
# more `fleetburn relay` options (e.g. "--handshake-timeout 30s").
# SIM_ARGS: more fleetburn-simfleet options for every process (e.g. "--connect-window 1024");
# SERVE_ARGS: more `fleetburn serve` options with PROCS > 1 (e.g. "--handshake-timeout 30s").
# A run that does not finish (a simfleet process gives up) is listed and left out of the medians.
# Results are printed and written to bench/results/scale[-curve]-<date>.txt, or with PROCS > 1
# scale<N/1024>k[-curve]-<date>.txt (RESULTS overrides).
set -euo pipefail

BUILD=${1:?usage: scale.sh BUILD_DIR [N]}
N=${2:-4096}
REPEAT=${REPEAT:-3}
SIM="$BUILD/bin/fleetburn-simfleet"
[ -x "$SIM" ] || { echo "$SIM not found" >&2; exit 2; }
HERE=$(cd "$(dirname "$0")" && pwd)
CURVE=${CURVE:-0}
PROCS=${PROCS:-1}
RELAYS=${RELAYS:-0}
if [ "$RELAYS" -gt 0 ] && { [ "$PROCS" -lt 2 ] || [ $((RELAYS % PROCS)) != 0 ] || [ $((N % RELAYS)) != 0 ]; }; then
    echo "RELAYS=$RELAYS needs PROCS > 1, a multiple of PROCS ($PROCS) that divides N ($N)" >&2
    exit 2
fi
CURVE_ARGS=()
[ "$CURVE" = 1 ] && CURVE_ARGS=(--curve)
SIZE=""
[ "$PROCS" -gt 1 ] && SIZE=$([ $((N % 1024)) = 0 ] && echo "$((N / 1024))k" || echo "$N")
RESULTS=${RESULTS:-"$HERE/results/scale$SIZE$([ "$CURVE" = 1 ] && echo -curve)$([ "$RELAYS" -gt 0 ] && echo -relay)-$(date -u +%Y-%m-%d).txt"}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/fbscale-XXXXXX")
trap 'rm -rf "$TMP"' EXIT

# One node-local stage over every agent, then one round of pairs (the campaign the simfleet join
# test runs too); a few faults so that the results are not all alike.
CAMPAIGN="$HERE/../tests/fixtures/campaigns/sim-scale.yaml"
# Agent names have the width of N-1: sim-0017 for 4096 agents, sim-00017 for 16384.
LAST=$((N - 1))
sim() { printf "sim-%0${#LAST}d" "$1"; }
cat >"$TMP/faults.yaml" <<YAML
seed: 1
false_fail_rate: 0.001
faults:
  - {node: $(sim 17), kind: hard}
  - {node: $(sim 420), kind: intermittent, q: 0.5}
  - {node: $(sim 333), kind: slow, factor: 0.6}
YAML
if [ "$N" -lt 1000 ]; then
    printf 'seed: 1\nfalse_fail_rate: 0.001\nfaults: []\n' >"$TMP/faults.yaml"
fi

median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
stat() { grep "^$1=" "$2" | cut -d= -f2; }

# One run of PROCS processes against a `fleetburn serve` of the script's own: run_multi I.
FLEETBURN="$BUILD/bin/fleetburn"
SERVE_PID=""
SIM_PIDS=()
RELAY_PIDS=()
stop_all() {
    for p in "${SIM_PIDS[@]}" "${RELAY_PIDS[@]}" $SERVE_PID; do kill -TERM "$p" 2>/dev/null || true; done
    for p in "${SIM_PIDS[@]}" "${RELAY_PIDS[@]}" $SERVE_PID; do wait "$p" 2>/dev/null || true; done
    SIM_PIDS=()
    RELAY_PIDS=()
    SERVE_PID=""
}
# RELAYS: relay r's (0-based) key, for agents r*N/R ... (r+1)*N/R-1, in the coordinator's keys.
relay_key() { # r dir
    local r=$1 d=$2 chunk=$((N / RELAYS))
    "$FLEETBURN" keygen "$d/relay$r" >/dev/null
    { cat "$d/relay$r.pub"; echo "nodes: sim-[$(printf "%0${#LAST}d" $((r * chunk)))-$(printf "%0${#LAST}d" $(((r + 1) * chunk - 1)))]"; } \
        >"$d/keys/relays/r$r.pub"
}
# Starts relay r and prints its endpoint.
start_relay() { # r dir coordinator-endpoint
    local r=$1 d=$2 ep=$3 port rkeys=()
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    [ "$CURVE" = 1 ] && rkeys=(--keys "$d/keys" --key "$d/relay$r" --server-key "$d/keys/coordinator.pub")
    "$FLEETBURN" relay --coordinator "$ep" --bind "tcp://127.0.0.1:$port" --max-connections-per-address 0 \
        "${rkeys[@]}" ${RELAY_ARGS:-} >"$d/relay$r.log" 2>&1 &
    RELAY_PIDS+=($!)
    echo "tcp://127.0.0.1:$port"
}
# The --relay (and with CURVE=1 --relay-key) options of simfleet process p (1-based).
relay_args() { # p dir
    local p=$1 d=$2 per_proc=$((RELAYS / PROCS)) r
    for r in $(seq $(((p - 1) * per_proc)) $((p * per_proc - 1))); do
        echo "--relay $(cat "$d/relay$r.ep")"
        [ "$CURVE" = 1 ] && echo "--relay-key $d/relay$r.pub"
    done
}
# Peak resident memory of every relay, summed, and the largest, MiB (before they stop).
relays_hwm() { # dir
    local sum=0 max=0 p kb
    for p in "${RELAY_PIDS[@]}"; do
        kb=$(awk '/^VmHWM:/ {print $2}' "/proc/$p/status" 2>/dev/null || echo 0)
        sum=$((sum + kb)); [ "$kb" -gt "$max" ] && max=$kb
    done
    echo "relays_peak_rss_sum_mb=$((sum / 1024))"
    echo "relays_peak_rss_max_mb=$((max / 1024))"
}
trap 'stop_all; [ "${KEEP:-0}" = 1 ] && echo "kept $TMP" >&2 || rm -rf "$TMP"' EXIT
run_multi() {
    local i=$1 per=$((N / PROCS)) d="$TMP/run$1"
    mkdir -p "$d"
    local keys=() skeys=() akeys=()
    if [ "$CURVE" = 1 ]; then
        mkdir -p "$d/keys/agents" "$d/keys/operators" "$d/keys/relays"
        "$FLEETBURN" keygen "$d/keys/coordinator" >/dev/null
        "$FLEETBURN" keygen "$d/sim-agent" >/dev/null
        "$FLEETBURN" keygen "$d/operator" >/dev/null
        # Names have the width of N-1 (sim-00000 ... sim-16383).
        { cat "$d/sim-agent.pub"; echo "nodes: sim-[$(printf "%0${#LAST}d" 0)-$LAST]"; } \
            >"$d/keys/agents/sim.pub"
        mv "$d/operator.pub" "$d/keys/operators/bench.pub"
        keys=(--keys "$d/keys")
        akeys=(--key "$d/sim-agent" --server-key "$d/keys/coordinator.pub")
        skeys=("${akeys[@]}" --operator-key "$d/operator")
    fi
    local port
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    local ep="tcp://127.0.0.1:$port"
    "$FLEETBURN" serve --bind "$ep" --db "$d/fb.db" --max-connections-per-address 0 "${keys[@]}" ${SERVE_ARGS:-} \
        >"$d/coordinator.log" 2>&1 &
    SERVE_PID=$!
    for _ in $(seq 1 100); do grep -q "coordinator on" "$d/coordinator.log" && break; sleep 0.1; done
    grep -q "coordinator on" "$d/coordinator.log" || { echo "serve did not start:" >&2; cat "$d/coordinator.log" >&2; exit 1; }
    local p r
    if [ "$RELAYS" -gt 0 ]; then
        # Keys first, then one reload: the coordinator knows every relay before any connects.
        if [ "$CURVE" = 1 ]; then
            for r in $(seq 0 $((RELAYS - 1))); do relay_key "$r" "$d"; done
            kill -HUP "$SERVE_PID"
            for _ in $(seq 1 100); do grep -q "reloaded" "$d/coordinator.log" && break; sleep 0.1; done
        fi
        for r in $(seq 0 $((RELAYS - 1))); do start_relay "$r" "$d" "$ep" >"$d/relay$r.ep"; done
        for r in $(seq 0 $((RELAYS - 1))); do
            for _ in $(seq 1 100); do grep -q "relay on" "$d/relay$r.log" && break; sleep 0.1; done
            grep -q "relay on" "$d/relay$r.log" || { echo "relay $r did not start:" >&2; cat "$d/relay$r.log" >&2; exit 1; }
        done
    fi
    for p in $(seq 1 $((PROCS - 1))); do
        # shellcheck disable=SC2046
        "$SIM" --coordinator "$ep" "${akeys[@]}" $([ "$RELAYS" -gt 0 ] && relay_args "$p" "$d") --agents "$per" --first $(((p - 1) * per)) \
            --fleet "$N" --faults "$TMP/faults.yaml" --delay-ms 0 --no-submit ${SIM_ARGS:-} \
            --stats "$d/stats.$p" 2>"$d/run.$p.log" >/dev/null &
        SIM_PIDS+=($!)
    done
    # shellcheck disable=SC2046
    "$SIM" --coordinator "$ep" "${skeys[@]}" $([ "$RELAYS" -gt 0 ] && relay_args "$PROCS" "$d") --agents $((N - (PROCS - 1) * per)) \
        --first $(((PROCS - 1) * per)) --fleet "$N" --faults "$TMP/faults.yaml" --delay-ms 0 ${SIM_ARGS:-} \
        --campaign "$CAMPAIGN" --db "$d/fb.db" --coordinator-pid "$SERVE_PID" \
        --report-json "$d/report.json" --stats "$d/stats.$PROCS" \
        2>"$d/run.$PROCS.log" >/dev/null || true
    [ "$RELAYS" -gt 0 ] && relays_hwm "$d" >"$d/relays.hwm"
    stop_all
    cp "$d/run.$PROCS.log" "$TMP/run.$i.log"
    [ -s "$d/stats.$PROCS" ] || return 0
    # The submitting process's stats, with the fleet's registration over every process's.
    grep -v '^register_s=' "$d/stats.$PROCS" >"$TMP/stats.$i" || true
    local first last nreg
    first=$(cat "$d"/stats.* | grep '^start_unix_ms=' | cut -d= -f2 | sort -n | head -1) || true
    last=$(cat "$d"/stats.* | grep '^registered_unix_ms=' | cut -d= -f2 | sort -n | tail -1) || true
    nreg=$(cat "$d"/stats.* | grep -c '^registered_unix_ms=' || true)
    if [ "$nreg" = "$PROCS" ]; then
        echo "register_s=$(awk -v a="$first" -v b="$last" 'BEGIN {printf "%.3f", (b - a) / 1000}')" >>"$TMP/stats.$i"
        local seen; seen=$(grep '^fleet_registered_unix_ms=' "$d/stats.$PROCS" | cut -d= -f2) || true
        echo "coordinator_counted_s=$(awk -v a="$first" -v b="$seen" 'BEGIN {printf "%.3f", (b - a) / 1000}')" >>"$TMP/stats.$i"
    fi
    # Connections the coordinator accepted: more than N+1 (the agents and the submission) are
    # reconnections, e.g. handshakes that ran past the coordinator's handshake timeout.
    echo "coordinator_accepted=$(grep -o 'connections: [0-9]* accepted' "$d/coordinator.log" | tail -1 | cut -d' ' -f2)" >>"$TMP/stats.$i"
    if [ "$RELAYS" -gt 0 ]; then
        cat "$d/relays.hwm" >>"$TMP/stats.$i"
        echo "relays_accepted=$(cat "$d"/relay*.log | grep -o 'connections: [0-9]* accepted' | cut -d' ' -f2 | awk '{s += $1} END {print s}')" >>"$TMP/stats.$i"
    fi
    # Peak resident memory of the largest simfleet process (each writes its own), KiB.
    cat "$d"/stats.* | grep '^simfleet_peak_rss_mb=' | cut -d= -f2 | sort -g | tail -1 \
        | awk '{printf "%d\n", $1 * 1024}' >"$TMP/sim-rss.$i"
    [ "${KEEP:-0}" = 1 ] || rm -rf "$d"
}

LOAD=$(cut -d' ' -f1-3 /proc/loadavg)
OK_RUNS=()
for i in $(seq 1 "$REPEAT"); do
    LOAD_BEFORE=$(cut -d' ' -f1 /proc/loadavg)
    if [ "$PROCS" -gt 1 ]; then
        run_multi "$i"
    else
        /usr/bin/time -f "%M" -o "$TMP/sim-rss.$i" \
            "$SIM" --agents "$N" --faults "$TMP/faults.yaml" --campaign "$CAMPAIGN" \
            --report-json "$TMP/report.$i.json" --stats "$TMP/stats.$i" --delay-ms 0 "${CURVE_ARGS[@]}" ${SIM_ARGS:-} \
            2>"$TMP/run.$i.log" >/dev/null || true
    fi
    if ! { [ -s "$TMP/stats.$i" ] && grep -q "^coordinator_peak_rss_mb=" "$TMP/stats.$i" \
        && grep -q "^stage.node-local.stored_s=" "$TMP/stats.$i"; }; then
        # kept in the results: a run that did not finish is a result too
        echo "run $i: did not finish (load $LOAD_BEFORE before, $(cut -d' ' -f1 /proc/loadavg) after): $(grep -v '^\s*$' "$TMP/run.$i.log" 2>/dev/null | grep -iv 'warn\|registered [0-9]' | tail -2 | tr '\n' ' ')" | tee -a "$TMP/runs" >&2
        rm -f "$TMP/stats.$i"
        continue
    fi
    OK_RUNS+=("$i")
    echo "run $i: registered $(stat register_s "$TMP/stats.$i") s," \
         "node-local stored $(stat stage.node-local.stored_s "$TMP/stats.$i") s," \
         "pairs stored $(stat stage.pairs.stored_s "$TMP/stats.$i") s," \
         "coordinator peak $(stat coordinator_peak_rss_mb "$TMP/stats.$i") MiB," \
         "CPU $(stat coordinator_cpu_register_s "$TMP/stats.$i") s registering," \
         "$(stat coordinator_accepted "$TMP/stats.$i" || true) connections accepted" \
         "$([ "$RELAYS" -gt 0 ] && echo "(relays: $(stat relays_accepted "$TMP/stats.$i" || true) accepted, peak $(stat relays_peak_rss_sum_mb "$TMP/stats.$i") MiB summed)")" \
         "(load $LOAD_BEFORE before, $(cut -d' ' -f1 /proc/loadavg) after)" | tee -a "$TMP/runs" >&2
done

[ ${#OK_RUNS[@]} -gt 0 ] || { echo "no run finished" >&2; mkdir -p "$(dirname "$RESULTS")"; { echo "# fleetburn coordinator scale, $(date -u +%Y-%m-%dT%H:%MZ), bench/scale.sh: no run of $REPEAT finished"; echo "# command: $([ "$PROCS" -gt 1 ] && echo "PROCS=$PROCS ")CURVE=$CURVE REPEAT=$REPEAT bench/scale.sh BUILD $N; load before $LOAD"; sed 's/^/# /' "$TMP/runs"; } >"$RESULTS"; exit 1; }
pick() { for i in "${OK_RUNS[@]}"; do stat "$1" "$TMP/stats.$i"; done | median; }
# "min-max" of a number over the runs.
range() { for i in "${OK_RUNS[@]}"; do stat "$1" "$TMP/stats.$i"; done | sort -g | sed -n '1p;$p' | paste -sd- | sed 's/^\([^-]*\)$/\1-\1/'; }
REG=$(pick register_s)
NODE=$(pick stage.node-local.stored_s)
NODE_STAGE=$(pick stage.node-local.stage_s)
PAIRS=$(pick stage.pairs.stored_s)
RSS=$(pick coordinator_rss_mb)
RSS_REG=$(pick coordinator_registered_rss_mb)
CPU_REG=$(pick coordinator_cpu_register_s)
CPU_ALL=$(pick coordinator_cpu_total_s)
PEAK=$(pick coordinator_peak_rss_mb)
SIMRSS=$(for i in "${OK_RUNS[@]}"; do echo $(( $(tail -n 1 "$TMP/sim-rss.$i") / 1024 )); done | median)
verdict() { awk -v v="$1" -v goal="$2" 'BEGIN {print (v + 0 <= goal + 0) ? "met" : "NOT met"}'; }
# Coordinator memory goal: 256 MB for 4096 agents (issue 5), 512 MB for larger fleets (issue 11).
MEM_GOAL=$([ "$N" -gt 4096 ] && echo 512 || echo 256)
MEM_GOAL_MIB=$((MEM_GOAL * 1000000 / 1048576))

mkdir -p "$(dirname "$RESULTS")"
{
    echo "# fleetburn coordinator scale, $(date -u +%Y-%m-%dT%H:%MZ), bench/scale.sh, median of the ${#OK_RUNS[@]} of $REPEAT runs that finished"
    echo "# machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), $(free -g | awk '/Mem:/ {print $2}') GiB;"
    if [ "$PROCS" -gt 1 ]; then
        echo "#   coordinator (fleetburn serve) and $PROCS fleetburn-simfleet processes ($((N / PROCS)) agents each, one loop thread each) share it;"
    else
        echo "#   coordinator (fleetburn serve) and fleetburn-simfleet (all agents, one loop thread) share it;"
    fi
    echo "#   load average before the runs: $LOAD (other work on the machine moves elapsed times); open-file limit $(ulimit -n) per process"
    echo "# commit: $(git -C "$HERE/.." rev-parse --short HEAD)$(git -C "$HERE/.." diff --quiet HEAD -- . ':!bench/results' || echo ' with uncommitted changes'); libzmq $(pkg-config --modversion libzmq)"
    [ "$RELAYS" -gt 0 ] && echo "#   and $RELAYS fleetburn relay processes ($((N / RELAYS)) agents each); the agents connect to the relays, only the relays to the coordinator"
    echo "# command: $([ "$PROCS" -gt 1 ] && echo "PROCS=$PROCS ")$([ "$RELAYS" -gt 0 ] && echo "RELAYS=$RELAYS ")CURVE=$CURVE REPEAT=$REPEAT$([ -n "${SIM_ARGS:-}" ] && echo " SIM_ARGS=\"$SIM_ARGS\"")$([ -n "${SERVE_ARGS:-}" ] && echo " SERVE_ARGS=\"$SERVE_ARGS\"")$([ -n "${RELAY_ARGS:-}" ] && echo " RELAY_ARGS=\"$RELAY_ARGS\"") bench/scale.sh BUILD $N; connections: $([ "$CURVE" = 1 ] && echo "CURVE (keyed coordinator, ZAP handler; secrets in ${FLEETBURN_SECUREMEM:-the locked pool})" || echo "plain, loopback")"
    echo "# campaign: node-local memtest on every agent, then one round of netbw pairs; results at once (--delay-ms 0)"
    [ "$PROCS" -gt 1 ] && echo "# registration: from the first process starting its agents to the last agent welcomed, over all $PROCS processes"
    sed 's/^/# /' "$TMP/runs"
    echo "agents                                   $N$([ "$PROCS" -gt 1 ] && echo " ($PROCS processes)")"
    echo "all registered                           ${REG} s      (range $(range register_s); goal <= 10 s: $(verdict "$REG" 10))"
    if [ "$PROCS" -gt 1 ]; then
        echo "  ... and listed alive in the database   $(pick coordinator_counted_s) s      (range $(range coordinator_counted_s); seen by the submitting process, polled every 100 ms)"
    fi
    echo "node-local stage: start -> all stored     ${NODE} s      (range $(range stage.node-local.stored_s); goal <= 3 s: $(verdict "$NODE" 3); stage ended after ${NODE_STAGE} s)"
    echo "pairs stage ($((N / 2)) pairs): start -> all stored ${PAIRS} s (range $(range stage.pairs.stored_s))"
    echo "coordinator resident memory, registered  ${RSS_REG} MiB"
    echo "coordinator resident memory at the end   ${RSS} MiB"
    echo "coordinator peak resident memory         ${PEAK} MiB  (range $(range coordinator_peak_rss_mb); goal < $MEM_GOAL MB: $(verdict "$PEAK" "$MEM_GOAL_MIB"))"
    echo "coordinator CPU time (user+system)       ${CPU_REG} s until all registered, ${CPU_ALL} s in all"
    if [ "$RELAYS" -gt 0 ]; then
        echo "relays' peak resident memory, summed     $(pick relays_peak_rss_sum_mb) MiB (range $(range relays_peak_rss_sum_mb); $RELAYS relays, the largest $(pick relays_peak_rss_max_mb) MiB)"
        echo "coordinator + relays, peak, summed       $(awk -v a="$PEAK" -v b="$(pick relays_peak_rss_sum_mb)" 'BEGIN {print a + b}') MiB (medians added)"
    fi
    if [ "$PROCS" -gt 1 ]; then
        echo "fleetburn-simfleet peak resident memory  ${SIMRSS} MiB (the largest of the $PROCS processes)"
    else
        echo "fleetburn-simfleet peak resident memory  ${SIMRSS} MiB (all $N simulated agents)"
    fi
} | tee "$RESULTS"
