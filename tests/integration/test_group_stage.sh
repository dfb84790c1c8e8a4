#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Multi-node stages on local agents:
#  1. scope: group runs as ONE task on 3 nodes: every member gets its rank and the group, the
#     members all-gather their names through the coordinator's exchange (sleep exchange: true),
#     and each reports its own result (<task>@<node>);
#  2. scope: pairs with rounds: 3 over 4 nodes is a round-robin tournament: 2 pair tasks per
#     round, every two nodes meet exactly once, rounds one after the other; topology pairs cross
#     leaves; an odd node out of a random matching is idle, on the timeline; a topology file that
#     cannot be read is refused before anything runs;
#  3. a member whose worker is killed ends its group task as `error` naming it, and a member whose
#     agent is killed ends it as `lost`; in both cases the survivors are cancelled at once (no
#     wait for the stage deadline) and the campaign goes on to the next stage.
. "$(dirname "$0")/lib.sh"

# --- 1 and 2: group and pair rounds ------------------------------------------------------------
# two leaves of two nodes (local-0 ... local-3) under one spine
leaf_spine_topo local- 2 2 1 1 >"$WORK/fabric.topo"
cat >"$WORK/campaign.yaml" <<'YAML'
name: group-stage
stages:
  - name: together
    workload: sleep
    scope: group
    nodes: local-[0-2]
    timeout: 1m
    params: {duration: 300ms, exchange: true}
  - name: pairs
    workload: sleep
    scope: pairs
    rounds: 3
    timeout: 1m
    params: {duration: 200ms, exchange: true}
  - name: cross-leaf
    workload: sleep
    scope: pairs
    pairing: topology
    topology: fabric.topo
    params: {duration: 100ms, exchange: true}
  - name: odd
    workload: sleep
    nodes: local-[0-2]
    scope: pairs
    pairing: random
    seed: 5
    params: {duration: 100ms}
YAML
"$FLEETBURN" run --local 4 --db "$WORK/g.db" "$WORK/campaign.yaml" >"$WORK/run.out" 2>"$WORK/run.log" ||
    fail "group campaign exited $?"
"$FLEETBURN" report --db "$WORK/g.db" --format json >"$WORK/g.json"
python3 - "$WORK/g.json" <<'PY' || fail "group stage"
import json, sys
d = json.load(open(sys.argv[1]))
tasks = d["stages"][0]["tasks"]
assert len(tasks) == 1, [t["id"] for t in tasks]
t = tasks[0]
assert t["id"].endswith("/0/r0.g0"), t["id"]
assert t["nodes"] == ["local-0", "local-1", "local-2"], t["nodes"]
assert t["verdict"] == "pass", (t["verdict"], t["error"])
ids = sorted(r["result_id"] for r in t["results"])
assert ids == [t["id"] + "@local-%d" % i for i in range(3)], ids
for r in t["results"]:
    assert r["metrics"]["sleep.group_size"] == 3, r
PY
pass "scope group: one task on 3 nodes, every member passed the exchange"

python3 - "$WORK/g.json" <<'PY' || fail "pair rounds"
import json, sys, itertools
d = json.load(open(sys.argv[1]))
tasks = d["stages"][1]["tasks"]
assert d["stages"][1]["verdict"] == "pass", d["stages"][1]["verdict"]
ids = [t["id"].rsplit("/", 1)[1] for t in tasks]
assert ids == ["r0.g0", "r0.g1", "r1.g0", "r1.g1", "r2.g0", "r2.g1"], ids
met = sorted(tuple(sorted(t["nodes"])) for t in tasks)
want = sorted(itertools.combinations(["local-%d" % i for i in range(4)], 2))
assert met == want, met
for t in tasks:
    assert t["verdict"] == "pass" and len(t["results"]) == 2, t
# a round starts after the previous one has ended
for r in range(1, 3):
    prev = max(t["finished"] for t in tasks[2 * (r - 1):2 * r])
    assert all(t["started"] >= prev for t in tasks[2 * r:2 * r + 2]), r
PY
pass "scope pairs, rounds: 3 over 4 nodes: 2 pairs a round, every two nodes met once"

python3 - "$WORK/g.db" <<'PY' || fail "timeline of the group"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute("select node, message from events where kind = 'dispatch' and task_id like '%/0/r0.g0' order by node").fetchall()
assert rows == [("local-%d" % i, "sleep rank %d of 3" % i) for i in range(3)], rows
rounds = db.execute("select message from events where kind = 'round' order by id").fetchall()
assert [r[0] for r in rounds][1:4] == ["pairs round %d of 3: 2 pair(s) (round-robin), 0 idle" % i for i in (1, 2, 3)], rounds
PY
pass "the timeline records each member's rank and every round"

python3 - "$WORK/g.json" "$WORK/g.db" <<'PY' || fail "topology and random pairs"
import json, sys, sqlite3
d = json.load(open(sys.argv[1]))
leaf = {"local-0": 1, "local-1": 1, "local-2": 2, "local-3": 2}
tasks = d["stages"][2]["tasks"]
assert len(tasks) == 2 and all(t["verdict"] == "pass" for t in tasks), tasks
for t in tasks:
    a, b = t["nodes"]
    assert leaf[a] != leaf[b], ("pair inside a leaf", t["nodes"])
tasks = d["stages"][3]["tasks"]
assert len(tasks) == 1 and len(tasks[0]["nodes"]) == 2 and tasks[0]["verdict"] == "pass", tasks
paired = set(tasks[0]["nodes"])
idle = sqlite3.connect(sys.argv[2]).execute("select node, message from events where kind = 'idle'").fetchall()
assert len(idle) == 1 and idle[0][0] not in paired and "no partner" in idle[0][1], idle
rounds = sqlite3.connect(sys.argv[2]).execute("select message from events where kind = 'round' and message like 'odd %'").fetchall()
assert rounds == [("odd round 1 of 1: 1 pair(s) (random, seed 5), 1 idle",)], rounds
PY
pass "topology pairs cross leaves; an odd node out is idle, with an event"

# A topology that cannot be read is refused before anything runs, naming the file.
sed 's/fabric.topo/missing.topo/' "$WORK/campaign.yaml" >"$WORK/bad-topology.yaml"
status_of rc "$FLEETBURN" run --local 1 --db "$WORK/bad.db" "$WORK/bad-topology.yaml" >/dev/null 2>"$WORK/bad.log"
[ $rc -eq 2 ] || fail "a missing topology file: run exited $rc, expected 2"
grep -q "bad-topology.yaml:[0-9]*: stages\[2\].topology: cannot load missing.topo: $WORK/missing.topo: cannot read: No such file" "$WORK/bad.log" ||
    fail "missing topology error: $(cat "$WORK/bad.log")"
pass "a missing topology file is refused with the file named"

# --- 3: members dying --------------------------------------------------------------------------
start_coordinator
for n in n1 n2 n3; do
    start_agent $n
    eval "pid_$n=$AGENT_PID"
done
wait_registered n1 n2 n3

cat >"$WORK/dying.yaml" <<'YAML'
name: dying-members
stages:
  - name: worker-dies
    workload: sleep
    scope: group
    timeout: 2m
    params: {duration: 60s, exchange: true}
  - name: agent-dies
    workload: sleep
    scope: group
    timeout: 2m
    params: {duration: 60s, exchange: true}
  - name: after
    workload: sleep
    params: {duration: 200ms}
YAML
run_in_background "$WORK/dying.yaml" dying
start=$(date +%s)

wait_for_count() { # FILE PATTERN COUNT
    local i=0
    while [ "$(grep -cE "$2" "$1" 2>/dev/null || true)" -lt "$3" ]; do
        i=$((i + 1))
        [ $i -gt 300 ] && fail "timed out waiting for $3 x '$2' in $1"
        sleep 0.1
    done
}
# Every member has started; a second covers the exchange, after which they all sleep.
for n in n1 n2 n3; do wait_for_count "$WORK/$n.log" "started sleep" 1; done
sleep 1
worker=$(pgrep -f "fleetburn-worker --workload sleep --task-id [^ ]*/0/r0.g0 .*--node n2( |$)" | head -n1)
[ -n "$worker" ] || fail "no worker of n2 to kill"
kill -KILL "$worker"

for n in n1 n2 n3; do wait_for_count "$WORK/$n.log" "started sleep" 2; done
sleep 1
kill -KILL "$pid_n3"

status_of rc wait "$RUN_PID"
elapsed=$(($(date +%s) - start))
[ $rc -eq 1 ] || fail "run exited $rc, expected 1"
[ $elapsed -lt 45 ] || fail "the campaign took $elapsed s: survivors waited for their sleep or the deadline"

"$FLEETBURN" report --db "$WORK/fb.db" --format json >"$WORK/dying.json"
python3 - "$WORK/dying.json" <<'PY' || fail "dying members"
import json, sys
d = json.load(open(sys.argv[1]))
s0, s1, s2 = d["stages"]
t = s0["tasks"][0]
assert len(s0["tasks"]) == 1 and t["nodes"] == ["n1", "n2", "n3"], s0["tasks"]
assert t["verdict"] == "error", (t["verdict"], t["error"])
assert t["error"].startswith("n2: ") and "signal" in t["error"], t["error"]
# the survivors were cancelled, their results still stored
survivors = {r["node"]: r for r in t["results"] if r["node"] != "n2"}
assert set(survivors) == {"n1", "n3"}, t["results"]
for r in survivors.values():
    assert r["verdict"] == "error" and "n2 (rank 1)" in r["error"], r
t = s1["tasks"][0]
assert t["verdict"] == "lost", (t["verdict"], t["error"])
assert "member n3 (rank 2) lost" in t["error"], t["error"]
assert s2["verdict"] == "pass", s2
assert sorted(x["nodes"][0] for x in s2["tasks"]) == ["n1", "n2"], s2["tasks"]
PY
pass "a killed worker ends its group as error, a killed agent as lost; survivors cancelled, campaign went on (${elapsed}s)"
