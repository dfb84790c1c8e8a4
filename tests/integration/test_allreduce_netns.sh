#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# allreduce on the host path across three "hosts" (network namespaces on one bridge, netns.sh),
# through OpenMPI's mpirun with an rsh agent that enters the namespaces (netns-rsh.sh), the way
# operators run it over ssh. The rsh agent, mpirun's arguments and the consent to run ranks as
# root are site settings: the workers get them with --site, the agents from their configuration
# file (fleetburn-agent --config), never from the campaign.
#   1. three workers in three namespaces, without the coordinator (exchange through files): rank
#      0's worker runs mpirun over the three addresses, the others end with its verdict;
#   2. a `scope: group` stage of the three agents through the coordinator: one task, three nodes,
#      three ranks, busbw metrics, every member passes;
#   3. the same with an injected wrong element: the task fails and the finding names rank 0's
#      node, no other;
#   4. rank 0's agent killed in the middle of a long sweep: the task ends (lost or error), the other
#      members are not left waiting, and no rank is left running anywhere.
# Skipped (77) when not root, without ip netns, or without mpirun / fleetburn-mpirank.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/netns.sh"

netns_require
command -v mpirun >/dev/null || netns_skip "mpirun is not installed"
[ -x "$FB_BIN/bin/fleetburn-mpirank" ] || netns_skip "built without MPI (no fleetburn-mpirank)"
netns_setup 3
netns_rsh_map
WORKER="$FB_BIN/bin/fleetburn-worker"
RSH="$FB_SRC/tests/integration/netns-rsh.sh"
SUBNET="${NETNS_BRIDGE_IP%.*}.0/24"
# Open MPI would otherwise try every interface (and the bridge's other ends) for its daemons'
# and ranks' connections: keep both to the namespaces' subnet. Daemons report straight to mpirun
# (no tree of daemons relaying for each other): one run in seven failed with a daemon unable to
# reach its relay on this busy two-core machine, and the relay tree is not what is tested here.
# (fleetburn itself keeps daemons attached to their shell: detached, one in twenty died silently
# and left mpirun waiting.)
MPI_ARGS="--mca btl tcp,self --mca btl_tcp_if_include $SUBNET --mca oob_tcp_if_include $SUBNET"
MPI_ARGS="$MPI_ARGS --mca routed direct --mca plm_rsh_no_tree_spawn 1"
SWEEP="min_size=64 max_size=256KiB factor=4 iters=3 warmup=1"
# The agents' site configuration.
cat >"$WORK/agent.conf" <<CONF
# site settings of the namespace agents
rsh_agent = $RSH
mpirun_args = $MPI_ARGS
mpirun_allow_run_as_root = yes
CONF
chmod 600 "$WORK/agent.conf"

# ---- 1. three workers, files for the exchange ---------------------------------------------------
export FLEETBURN_EXCHANGE_DIR="$WORK/exchange"
mkdir -p "$FLEETBURN_EXCHANGE_DIR"
addrs="${NETNS_ADDR[1]},${NETNS_ADDR[2]},${NETNS_ADDR[3]}"
for r in 0 1 2; do
    i=$((r + 1))
    # shellcheck disable=SC2086  # the sweep is several words on purpose
    netns_exec $i "$WORKER" --workload allreduce --task-id direct --result "$WORK/direct.$r.result" \
        --node "ns$i" --rank $r --size 3 --peers ns1,ns2,ns3 --addresses "$addrs" \
        --site "rsh_agent=$RSH" --site "mpirun_args=$MPI_ARGS" --site mpirun_allow_run_as_root=yes \
        launcher=mpirun $SWEEP \
        >"$WORK/direct.$r.log" 2>&1 &
    PIDS+=($!)
    eval "direct$r=\$!"
done
for r in 0 1 2; do
    eval "pid=\$direct$r"
    wait "$pid" || fail "direct rank $r exited $?"
done
unset FLEETBURN_EXCHANGE_DIR
grep -q "log allreduce: 3 ranks on 3 node(s): mpirun --host ${NETNS_ADDR[1]}:1,${NETNS_ADDR[2]}:1,${NETNS_ADDR[3]}:1" \
    "$WORK/direct.0.log" || fail "rank 0 did not run mpirun over the three addresses"
grep -qE "^log +256.0 KiB +65536 " "$WORK/direct.0.log" ||
    fail "no 256 KiB row: $(grep -E 'log (error|mpirun)' "$WORK/direct.0.log" | head -5)"
for r in 1 2; do
    grep -q "rank 0 (ns1) ran mpirun: pass;" "$WORK/direct.$r.log" || fail "member $r did not end with rank 0's pass"
done
row=$(grep -E "^log +256.0 KiB" "$WORK/direct.0.log" | sed 's/^log *//')
pass "three workers in three namespaces through mpirun: $row"

# ---- 2. a group stage through the coordinator -----------------------------------------------------
netns_start_coordinator
declare -A AGENT_OF
for i in 1 2 3; do
    netns_start_agent $i --allow-fault-injection --config "$WORK/agent.conf"
    AGENT_OF[$i]=$AGENT_PID
done
for i in 1 2 3; do wait_for_log "$WORK/coordinator.log" "agent ns$i registered"; done

# The latest campaign's log lines from the timeline, for a failure message.
dump_events() {
    python3 - "$WORK/fb.db" <<'PY' >&2 || true
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
cid = db.execute("SELECT campaign_id FROM events WHERE campaign_id IS NOT NULL ORDER BY time_ms DESC LIMIT 1").fetchone()
for t, node, kind, msg in db.execute(
        "SELECT time_ms, node, kind, message FROM events WHERE campaign_id = ? ORDER BY id", cid):
    print(t, node, kind, (msg or "")[:300])
PY
}

campaign() { # NAME ITERS EXTRA_PARAMS
    cat <<YAML
name: $1
stages:
  - name: allreduce
    workload: allreduce
    scope: group
    timeout: 3m
    params: {launcher: mpirun, min_size: 64, max_size: 1MiB, factor: 4, iters: $2, warmup: 1$3}
YAML
}
campaign netns-allreduce 3 "" >"$WORK/clean.yaml"
"$FLEETBURN" run --coordinator "$ENDPOINT" $NETNS_CLIENT_KEYS "$WORK/clean.yaml" >"$WORK/clean.out" 2>"$WORK/clean.log" ||
    { dump_events; fail "clean campaign exited $?"; }
"$FLEETBURN" report --db "$WORK/fb.db" --format json >"$WORK/clean.json"
python3 - "$WORK/clean.json" <<'PY' || fail "clean group stage"
import json, sys
d = json.load(open(sys.argv[1]))
tasks = d["stages"][0]["tasks"]
assert len(tasks) == 1, [t["nodes"] for t in tasks]
t = tasks[0]
assert sorted(t["nodes"]) == ["ns1", "ns2", "ns3"] and t["verdict"] == "pass", (t["nodes"], t["verdict"], t["error"])
assert len(t["results"]) == 3 and all(r["verdict"] == "pass" for r in t["results"]), t["results"]
m = [r["metrics"] for r in t["results"] if "allreduce.busbw_gbs" in r["metrics"]]
assert len(m) == 1, "one member (rank 0) measures"
m = m[0]
assert m["allreduce.ranks"] == 3 and m["allreduce.errors"] == 0, m
assert m["allreduce.busbw_gbs"] > 0 and m["allreduce.1048576.busbw_gbs"] > 0 and m["allreduce.lat_us"] > 0, m
print("busbw %.3f GB/s at 1 MiB, latency %.1f us at 64 B" % (m["allreduce.busbw_gbs"], m["allreduce.lat_us"]))
PY
pass "scope: group of three agents in three namespaces: one task, every member passes"

# ---- 3. an injected wrong element names rank 0's node -------------------------------------------
campaign netns-allreduce-inject 3 ", inject_corrupt: true" >"$WORK/inject.yaml"
status_of rc "$FLEETBURN" run --coordinator "$ENDPOINT" $NETNS_CLIENT_KEYS "$WORK/inject.yaml" >"$WORK/inject.out" 2>"$WORK/inject.log"
[ $rc -eq 1 ] || fail "injected campaign exited $rc, expected 1"
"$FLEETBURN" report --db "$WORK/fb.db" --format json >"$WORK/inject.json"
python3 - "$WORK/inject.json" <<'PY' || fail "injected group stage"
import json, sys
d = json.load(open(sys.argv[1]))
t = d["stages"][0]["tasks"][0]
assert t["verdict"] == "fail", (t["verdict"], t["error"])
rank0 = [r for r in t["results"] if "allreduce.errors" in r["metrics"]]
assert len(rank0) == 1, t["results"]
rank0 = rank0[0]
assert rank0["metrics"]["allreduce.errors"] == 1, rank0["metrics"]
parts = {f["part"] for f in t["findings"]}
assert parts == {rank0["node"]}, (parts, rank0["node"])
what = t["findings"][0]["what"]
assert "rank 0 (%s)" % rank0["node"] in what, what
print("named", rank0["node"], ":", what)
PY
pass "inject_corrupt in a group: fail, only rank 0's node is named"

# ---- 4. rank 0's node dies mid-sweep ------------------------------------------------------------
campaign netns-allreduce-lost 100000 "" >"$WORK/lost.yaml"
"$FLEETBURN" run --coordinator "$ENDPOINT" $NETNS_CLIENT_KEYS "$WORK/lost.yaml" >"$WORK/lost.out" 2>"$WORK/lost.log" &
run_pid=$!
PIDS+=("$run_pid")
tries=0
until pgrep -f "fleetburn-mpirank min_bytes=64 " >/dev/null; do
    tries=$((tries + 1))
    [ $tries -lt 300 ] || fail "the long sweep did not start"
    sleep 0.1
done
sleep 1
kill -KILL "${AGENT_OF[1]}"
t0=$SECONDS
wait "$run_pid" || true
[ $((SECONDS - t0)) -lt 60 ] || fail "the campaign took $((SECONDS - t0)) s to end after rank 0's node died"
"$FLEETBURN" report --db "$WORK/fb.db" --format json >"$WORK/lost.json"
python3 - "$WORK/lost.json" <<'PY' || fail "lost rank 0"
import json, sys
t = json.load(open(sys.argv[1]))["stages"][0]["tasks"][0]
assert t["verdict"] in ("lost", "error"), (t["verdict"], t["error"])
assert "ns1" in (t["error"] or ""), t["error"]
print(t["verdict"] + ": " + t["error"])
PY
tries=0
while pgrep -f "fleetburn-mpirank min_bytes=64 " >/dev/null; do
    tries=$((tries + 1))
    [ $tries -lt 100 ] || fail "ranks still running 10 s after the task ended: $(pgrep -af fleetburn-mpirank)"
    sleep 0.1
done
pass "rank 0's agent killed mid-sweep: the task ends naming ns1, no rank left running"
