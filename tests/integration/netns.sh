# SPDX-License-Identifier: Apache-2.0
# Several "hosts" on one machine for integration tests: network namespaces joined by one bridge.
# Source it after lib.sh:
#
#   . "$(dirname "$0")/lib.sh"
#   . "$(dirname "$0")/netns.sh"
#   netns_require            # exit 77 (skipped) when not root or without ip netns / veth / bridge
#   netns_setup 4            # namespaces ${NETNS_NAME[1..4]} = fb-<pid>-<i>, addresses ${NETNS_ADDR[i]}
#   netns_exec 2 cmd ...     # run a command inside namespace 2
#   netns_throttle 2 50mbit  # shape everything to and from namespace 2 (tc tbf, both ways)
#   netns_rsh_map            # host map for netns-rsh.sh (an rsh agent for mpirun)
#
# Layout: a bridge fbb<pid> in the root namespace holds NETNS_BRIDGE_IP (.1 of a /24 picked so
# that it clashes with no route already there); namespace i has eth0 = .(10+i), plugged into the
# bridge through the veth ${NETNS_HOSTIF[i]} (the root namespace's end). A coordinator in the
# root namespace bound to NETNS_BRIDGE_IP is reachable from every namespace.
#
# Everything is named after this shell's pid, so concurrent tests never meet, and everything is
# removed on exit, failure or signal: processes still running in the namespaces are killed, the
# namespaces (which takes their veth ends along) and the bridge are deleted. Leftovers of runs
# that were killed with SIGKILL (whose pid no longer exists) are swept at the next setup.

NETNS_ID=$$
NETNS_BRIDGE="fbb$NETNS_ID"
NETNS_NAME=()
NETNS_ADDR=()
NETNS_HOSTIF=()
NETNS_BRIDGE_IP=
NETNS_COUNT=0

netns_skip() {
    echo "skip: $*"
    # Not a failure: lib.sh's cleanup keeps the status.
    exit 77
}

# Exits 77 unless this shell may create namespaces, veth pairs and bridges.
netns_require() {
    [ "$(id -u)" -eq 0 ] || netns_skip "network namespace tests need root"
    command -v ip >/dev/null || netns_skip "iproute2 (ip) is not installed"
    command -v tc >/dev/null || netns_skip "tc (iproute2) is not installed"
    local probe="fb-$NETNS_ID-probe"
    ip netns add "$probe" 2>/dev/null || netns_skip "ip netns add failed (no CAP_SYS_ADMIN?)"
    if ! ip link add "fbp$NETNS_ID" type veth peer name "fbq$NETNS_ID" 2>/dev/null; then
        ip netns del "$probe"
        netns_skip "cannot create veth pairs"
    fi
    ip link del "fbp$NETNS_ID"
    ip netns del "$probe"
}

# Removes namespaces and bridges left by test shells that no longer exist.
netns_sweep_stale() {
    local ns pid
    for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^fb-[0-9]+-' || true); do
        pid=${ns#fb-}
        pid=${pid%%-*}
        [ -d "/proc/$pid" ] && continue
        ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
        ip netns del "$ns" 2>/dev/null || true
    done
    for br in $(ip -o link show type bridge 2>/dev/null | awk -F': ' '{print $2}' |
        grep -E '^fbb[0-9]+$' || true); do
        [ -d "/proc/${br#fbb}" ] || ip link del "$br" 2>/dev/null || true
    done
}

netns_teardown() {
    local ns
    for ns in "${NETNS_NAME[@]:-}"; do
        [ -n "$ns" ] || continue
        ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
    done
    for ns in "${NETNS_NAME[@]:-}"; do
        [ -n "$ns" ] && ip netns del "$ns" 2>/dev/null || true
    done
    local ifc
    for ifc in "${NETNS_HOSTIF[@]:-}"; do
        [ -n "$ifc" ] && ip link del "$ifc" 2>/dev/null || true
    done
    ip link del "$NETNS_BRIDGE" 2>/dev/null || true
    NETNS_NAME=()
    NETNS_HOSTIF=()
}

# Runs after every exit of the test: namespaces first (their processes die with them), then
# lib.sh's cleanup with the test's exit status.
netns__on_exit() {
    local rc=$? pid
    # Nothing may end this handler early: a failing command under set -e would skip the rest.
    set +e
    # Programs stop politely first (sanitizer builds check them at exit), as in lib.sh; what is
    # left in the namespaces is killed with them.
    for pid in "${PIDS[@]:-}"; do
        [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null || true
    done
    local tries=0
    while [ $tries -lt 30 ]; do
        local alive=0
        for pid in "${PIDS[@]:-}"; do
            [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && alive=1
        done
        [ $alive -eq 0 ] && break
        sleep 0.1
        tries=$((tries + 1))
    done
    for pid in "${PIDS[@]:-}"; do
        [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null || true
    done
    wait "${PIDS[@]:-}" 2>/dev/null || true
    netns_teardown
    if [ $rc -eq 77 ]; then
        # Skipped before anything ran: nothing to report.
        rm -rf "$WORK"
        exit 77
    fi
    (exit $rc)
    cleanup # lib.sh: reads the status from $?, exits with it
}
trap netns__on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# A /24 under 10.0.0.0/8 that no route of the root namespace covers yet.
netns__pick_subnet() {
    local a=$((100 + (NETNS_ID / 256) % 128)) b=$((NETNS_ID % 256)) tries=0
    while ip -4 route show | grep -qE "^10\.$a\.$b\.|^10\.$a\.0\.0/16"; do
        b=$(((b + 1) % 256))
        tries=$((tries + 1))
        [ $tries -lt 256 ] || fail "no free 10.$a.x.0/24 subnet for the test namespaces"
    done
    echo "10.$a.$b"
}

# Creates N namespaces on one bridge; sets NETNS_NAME, NETNS_ADDR, NETNS_HOSTIF (1-based) and
# NETNS_BRIDGE_IP.
netns_setup() {
    local n=$1 i net
    netns_sweep_stale
    net=$(netns__pick_subnet)
    NETNS_BRIDGE_IP="$net.1"
    ip link add name "$NETNS_BRIDGE" type bridge forward_delay 0
    ip addr add "$NETNS_BRIDGE_IP/24" dev "$NETNS_BRIDGE"
    ip link set "$NETNS_BRIDGE" up
    for i in $(seq 1 "$n"); do
        local ns="fb-$NETNS_ID-$i" hostif="fbh${NETNS_ID}x$i" peer="fbn${NETNS_ID}x$i"
        NETNS_NAME[$i]=$ns
        NETNS_HOSTIF[$i]=$hostif
        NETNS_ADDR[$i]="$net.$((10 + i))"
        ip netns add "$ns"
        ip link add "$hostif" type veth peer name "$peer"
        ip link set "$peer" netns "$ns"
        ip link set "$hostif" master "$NETNS_BRIDGE"
        ip link set "$hostif" up
        ip -n "$ns" link set "$peer" name eth0
        ip -n "$ns" addr add "${NETNS_ADDR[$i]}/24" dev eth0
        ip -n "$ns" link set eth0 up
        ip -n "$ns" link set lo up
        ip -n "$ns" route add default via "$NETNS_BRIDGE_IP"
    done
    NETNS_COUNT=$n
    netns__wait_reachable
}

# The bridge learns and forwards at once (forward_delay 0), but the links take a moment to come
# up: wait until every namespace reaches the bridge address.
netns__wait_reachable() {
    local i tries
    for i in $(seq 1 "$NETNS_COUNT"); do
        tries=0
        until netns_exec "$i" python3 -c "
import socket, sys
s = socket.socket(); s.settimeout(0.5)
try: s.connect(('$NETNS_BRIDGE_IP', 9))
except ConnectionRefusedError: sys.exit(0)
except OSError: sys.exit(1)
" 2>/dev/null; do
            tries=$((tries + 1))
            [ $tries -lt 50 ] || fail "namespace $i cannot reach $NETNS_BRIDGE_IP"
            sleep 0.1
        done
    done
}

netns_exec() {
    local i=$1
    shift
    ip netns exec "${NETNS_NAME[$i]}" "$@"
}

# Shapes namespace I's link to RATE both ways (tc tbf on both ends of its veth): what leaves the
# namespace and what the bridge sends into it. BURST (default 64kb) must hold a few timer ticks of
# traffic at RATE: 1mb for 1gbit.
netns_throttle() {
    local i=$1 rate=$2 burst=${3:-64kb}
    tc qdisc add dev "${NETNS_HOSTIF[$i]}" root tbf rate "$rate" burst "$burst" latency 100ms
    ip netns exec "${NETNS_NAME[$i]}" tc qdisc add dev eth0 root tbf rate "$rate" \
        burst "$burst" latency 100ms
}

# The namespace index holding address ADDR, or nothing.
netns_index_of() {
    local i
    for i in $(seq 1 "$NETNS_COUNT"); do
        [ "${NETNS_ADDR[$i]}" = "$1" ] && { echo "$i"; return 0; }
    done
    return 1
}

# Keys for a coordinator off loopback, as on a fleet: the coordinator's, one agent key shared by
# ns1..nsN (a nodes: line) and an operator key. Sets NETNS_AGENT_KEYS and NETNS_CLIENT_KEYS, the
# options agents and `fleetburn run` add.
netns_make_keys() {
    make_fleet_keys "ns[1-$NETNS_COUNT]"
    NETNS_AGENT_KEYS="--key $WORK/agent.key --server-key $WORK/keys/coordinator.pub"
    NETNS_CLIENT_KEYS="--key $WORK/operator.key --server-key $WORK/keys/coordinator.pub"
}

# Starts a coordinator with keys in the root namespace on the bridge address; sets ENDPOINT and
# COORD_PID.
netns_start_coordinator() {
    local port; port=$(free_port)
    ENDPOINT="tcp://$NETNS_BRIDGE_IP:$port"
    [ -n "${NETNS_AGENT_KEYS:-}" ] || netns_make_keys
    serve_in_background "$WORK/coordinator.log" --keys "$WORK/keys" "$@"
    wait_for_log "$WORK/coordinator.log" "coordinator on"
}

# Starts an agent named nsI inside namespace I with its address; sets AGENT_PID (the agent
# itself: ip netns exec replaces itself with the command).
netns_start_agent() {
    local i=$1
    shift
    # shellcheck disable=SC2086 # the key options are words
    ip netns exec "${NETNS_NAME[$i]}" "$AGENT" --coordinator "$ENDPOINT" --name "ns$i" \
        --address "${NETNS_ADDR[$i]}" --spool "$WORK/spool-ns$i" $NETNS_AGENT_KEYS "$@" \
        >>"$WORK/ns$i.log" 2>&1 &
    AGENT_PID=$!
    PIDS+=("$AGENT_PID")
}

# Writes the host map netns-rsh.sh reads (node name and address -> namespace, one a line) to
# $WORK/netns-hosts and exports FB_NETNS_MAP, so that programs started afterwards (agents, and
# the mpirun they run) find it.
netns_rsh_map() {
    local i
    : >"$WORK/netns-hosts"
    for i in $(seq 1 "$NETNS_COUNT"); do
        echo "ns$i ${NETNS_NAME[$i]}" >>"$WORK/netns-hosts"
        echo "${NETNS_ADDR[$i]} ${NETNS_NAME[$i]}" >>"$WORK/netns-hosts"
    done
    export FB_NETNS_MAP="$WORK/netns-hosts"
}
