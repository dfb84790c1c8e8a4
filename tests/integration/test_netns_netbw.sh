#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# netbw across four "hosts" (network namespaces on one bridge, netns.sh), agents in the
# namespaces and the coordinator in the root namespace:
#   1. two workers in two namespaces, without the coordinator, measure sane numbers;
#   2. a pair stage (round-robin, one round) passes with every direction above min_gbps;
#   3. a fleet of 1 Gbit/s nodes with ns2 at 50 Mbit/s (tc tbf on every link, both ways), three
#      rounds of round-robin pairs: the pairs with ns2 are slow, the others are not, and the
#      stage-level judgment names ns2 (slow with three partners that pass with everyone else)
#      and no other node. Shaping the healthy links too keeps their rates steady on a loaded
#      machine: unshaped, their spread can hide a slow node from a judgment made over four.
# Skipped (77) when not root or without ip netns.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/netns.sh"

netns_require
netns_setup 4
WORKER="$FB_BIN/bin/fleetburn-worker"

# ---- 1. two workers across namespaces ------------------------------------------------------------
export FLEETBURN_EXCHANGE_DIR="$WORK/exchange"
mkdir -p "$FLEETBURN_EXCHANGE_DIR"
addrs="${NETNS_ADDR[1]},${NETNS_ADDR[3]}"
for r in 0 1; do
    ns=$([ $r = 0 ] && echo 1 || echo 3)
    netns_exec $ns "$WORKER" --workload netbw --task-id direct --result "$WORK/direct.$r.result" \
        --node "ns$ns" --rank $r --size 2 --peers ns1,ns3 --addresses "$addrs" \
        duration=1s streams=2 lat_iters=200 >"$WORK/direct.$r.log" 2>&1 &
    PIDS+=($!)
    eval "direct$r=\$!"
done
wait "$direct0" || fail "direct rank 0 exited $?"
wait "$direct1" || fail "direct rank 1 exited $?"
unset FLEETBURN_EXCHANGE_DIR
line=$(grep -E "^log netbw: ns1->ns3" "$WORK/direct.0.log") ||
    fail "direct pair: $(grep 'log error' "$WORK/direct.0.log" || echo 'no summary')"
grep -q "listening on ${NETNS_ADDR[1]} port" "$WORK/direct.0.log" || fail "rank 0 did not bind its address"
python3 - "$line" <<'PY' || fail "direct pair: implausible numbers: $line"
import re, sys
ab, ba, p50, p99, mx = map(float, re.findall(r"([0-9.]+) (?:Gb/s|us)", sys.argv[1]))
# veth through a bridge: well above 0.5 Gb/s on any machine, round trips under 10 ms
assert ab > 0.5 and ba > 0.5 and 0 < p50 <= p99 <= mx and p50 < 10000, (ab, ba, p50, p99, mx)
PY
pass "workers in two namespaces: $line"

# ---- 2. a clean pair stage through the coordinator ------------------------------------------------
netns_start_coordinator
for i in 1 2 3 4; do netns_start_agent $i; done
for i in 1 2 3 4; do wait_for_log "$WORK/coordinator.log" "agent ns$i registered"; done

cat >"$WORK/clean.yaml" <<'YAML'
name: netns-netbw-clean
stages:
  - name: pairs
    workload: netbw
    scope: pairs
    pairing: round-robin
    rounds: 1
    timeout: 2m
    params: {duration: 2s, streams: 2, lat_iters: 200, min_gbps: 0.5}
YAML
"$FLEETBURN" run --coordinator "$ENDPOINT" $NETNS_CLIENT_KEYS "$WORK/clean.yaml" >"$WORK/clean.out" 2>"$WORK/clean.log" ||
    fail "clean campaign exited $?"
"$FLEETBURN" report --db "$WORK/fb.db" --format json >"$WORK/clean.json"
python3 - "$WORK/clean.json" <<'PY' || fail "clean pair stage"
import json, sys
d = json.load(open(sys.argv[1]))
tasks = d["stages"][0]["tasks"]
assert len(tasks) == 2, [t["nodes"] for t in tasks]
seen = set()
for t in tasks:
    assert len(t["nodes"]) == 2 and t["verdict"] == "pass", (t["nodes"], t["verdict"], t["error"])
    seen |= set(t["nodes"])
    assert len(t["results"]) == 2, t["results"]
    for r in t["results"]:
        m = r["metrics"]
        assert r["verdict"] == "pass", r
        assert m["netbw.tx_gbps"] > 0.5 and m["netbw.rx_gbps"] > 0.5, m
        assert 0 < m["netbw.rtt_p50_us"] <= m["netbw.rtt_p99_us"] <= m["netbw.rtt_max_us"], m
        assert m["netbw.streams"] == 2, m
assert seen == {"ns1", "ns2", "ns3", "ns4"}, seen
PY
pass "clean pair stage across namespaces: 2 pairs, every direction above 0.5 Gb/s"

# ---- 3. one throttled node --------------------------------------------------------------------------
netns_throttle 2 50mbit
for i in 1 3 4; do netns_throttle $i 1gbit 1mb; done
cat >"$WORK/throttled.yaml" <<'YAML'
name: netns-netbw-throttled
stages:
  - name: pairs
    workload: netbw
    scope: pairs
    pairing: round-robin
    rounds: 3
    timeout: 2m
    params: {duration: 2s, streams: 2, lat_iters: 100}
YAML
status_of rc "$FLEETBURN" run --coordinator "$ENDPOINT" $NETNS_CLIENT_KEYS "$WORK/throttled.yaml" >"$WORK/throttled.out" 2>"$WORK/throttled.log"
[ $rc -eq 1 ] || fail "throttled campaign exited $rc, expected 1 (a stage failed)"
"$FLEETBURN" report --db "$WORK/fb.db" --format json >"$WORK/throttled.json"
python3 - "$WORK/throttled.json" <<'PY' || fail "throttled stage: ns2 not singled out"
import json, sys
d = json.load(open(sys.argv[1]))
stage = d["stages"][0]
tasks = stage["tasks"]
pairs = sorted(tuple(sorted(t["nodes"])) for t in tasks)
# Three rounds of round-robin over four nodes: every pair once.
assert len(set(pairs)) == 6 and len(pairs) == 6, pairs
for t in tasks:
    # The members' results; the stage judgment adds its own (no metrics) to the tasks it blames.
    members = [r for r in t["results"] if "netbw.tx_gbps" in r["metrics"]]
    assert sorted(r["node"] for r in members) == sorted(t["nodes"]), (t["nodes"], t["results"])
    for r in members:
        m = r["metrics"]
        rates = (m["netbw.tx_gbps"], m["netbw.rx_gbps"])
        if "ns2" in t["nodes"]:
            assert max(rates) < 0.1, ("throttled pair too fast", t["nodes"], rates)
        else:
            assert min(rates) > 0.5, ("pair without ns2 too slow", t["nodes"], rates)

# Every finding of the stage's tasks (the judgment's included), and the report's verdict.
found = [f for t in tasks for f in t["findings"]]
named = {f["part"] for f in found if f["kind"] == "node"}
assert named == {"ns2"}, ("nodes named", named, found)
# The evidence names the slow pairs: ns2's three partners.
what = " ".join(f["what"] for f in found if f["kind"] == "node")
assert all(p in what for p in ("ns1", "ns3", "ns4")), what
# No pair without ns2 is blamed on its link either.
others = [f["part"] for f in found if f["kind"] == "link" and "ns2" not in f["part"]]
assert not others, ("links named without ns2", others)
# The slow pairs are the failed tasks of the report.
verdicts = {tuple(sorted(t["nodes"])): t["verdict"] for t in tasks}
assert all(v == ("fail" if "ns2" in p else "pass") for p, v in verdicts.items()), verdicts
bad = {b["part"] for b in d["diagnosis"]["bad"]}
assert bad == {"ns2"}, ("diagnosis", d["diagnosis"]["bad"])
print("named ns2:", what[:100])
PY
pass "ns2 at 50 Mbit/s among 1 Gbit/s nodes: its 3 pairs are slow, ns2 is named, no other node is"
