#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# on_fail: bisect through the real coordinator, with simulated agents (fleetburn-simfleet), against
# the same session in one process (fleetburn-simengine) on the same seeded faults, 2% of tests
# failing spuriously: the runner's diagnosis must be the engine's, part for part and verdict for
# verdict, and say why it ended, over several seeds. Pairs on 8 rails name a hard node, an
# intermittent node and a hard NIC and no healthy part; a group stage names a hard node and the
# node of a hard NIC (in twos with trusted partners: a node alone never shows a NIC fault); a group
# as large as the fleet is split, never below two nodes; slow parts (a node, a NIC, a leaf-spine
# uplink on a single-spine fabric) are named from the flows the pairs measured.
. "$(dirname "$0")/lib.sh"

SIMENGINE="$FB_BIN/bin/fleetburn-simengine"

simfleet() { # name agents faults campaign [more args]
    local name=$1 agents=$2 faults=$3 campaign=$4
    shift 4
    run_simfleet "$name" --agents "$agents" --faults "$faults" --campaign "$campaign" \
        --delay-ms 0-5 --keep "$@"
}

bad_parts() { json_q "$WORK/$1.json" 'sorted(b["part"] for b in d["diagnosis"]["bad"])'; }

# The runner's diagnosis of stage $3 in report $1 against the in-process engine's $2: the same
# parts in every verdict, the same end and the same follow-up rounds. Prints a one-line summary.
same_diagnosis() {
    python3 - "$1" "$2" "$3" <<'PY'
import json, sys
report, engine, stage = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
e = [s for s in engine["stages"] if s["stage"] == stage][0]
d = report["diagnosis"]
ok = True
for state in ("bad", "undecided", "cleared", "passed"):
    runner = sorted(x["part"] for x in d[state] if x["method"] == "bisect")
    if runner != sorted(e[state]):
        ok = False
        print(f"{state}: runner {runner} engine {sorted(e[state])}", file=sys.stderr)
watch = sorted(x["part"] for x in d["undecided"] if x["method"] == "bisect" and x["on_watch"])
if watch != sorted(e["on_watch"]):
    ok = False
    print(f"on watch: runner {watch} engine {sorted(e['on_watch'])}", file=sys.stderr)
s = [x for x in d["sessions"] if x["stage"] == stage][0]
if (s["ended"], s["follow_up_rounds"]) != (e["ended"], e["follow_up_rounds"]):
    ok = False
    print(f"ended: runner {s['ended']} after {s['follow_up_rounds']}, engine {e['ended']} after "
          f"{e['follow_up_rounds']}", file=sys.stderr)
print(f"{len(e['bad'])} bad, {len(e['undecided'])} undecided ({len(e['on_watch'])} on watch), "
      f"{len(e['cleared'])} cleared, "
      f"{len(e['passed'])} passed, ended {e['ended']} after {e['follow_up_rounds']} follow-up "
      f"round(s)")
sys.exit(0 if ok else 1)
PY
}

# Runs campaign $WORK/NAME.yaml with faults $WORK/NAME-faults.yaml on 64 simulated agents through
# the coordinator (report $WORK/NAME.json, which must exit 1: a part is bad) and in the engine
# ($WORK/NAME-engine.json), and fails unless the two diagnoses of stage STAGE are the same; WHAT
# names the run in messages. Sets SUMMARY to same_diagnosis's summary.
runner_as_engine() { # name stage what
    local name=$1 stage=$2 what=$3
    simfleet "$name" 64 "$WORK/$name-faults.yaml" "$WORK/$name.yaml"
    [ $SIM_RC -eq 1 ] || fail "$what: the run exited $SIM_RC, expected 1"
    "$SIMENGINE" --agents 64 --faults "$WORK/$name-faults.yaml" --campaign "$WORK/$name.yaml" \
        >"$WORK/$name-engine.json" || fail "$what: fleetburn-simengine failed"
    SUMMARY=$(same_diagnosis "$WORK/$name.json" "$WORK/$name-engine.json" "$stage") \
        || fail "$what: the runner's diagnosis is not the engine's"
}

# --- pairs on 8 rails: node-local round first, then the sweep and follow-up rounds ------------
cp "$FB_SRC/tests/fixtures/campaigns/sim-bisect-rails.yaml" "$WORK/pairs.yaml"
for seed in 21 22 23; do
    cat >"$WORK/pairs-faults.yaml" <<YAML
seed: $seed
false_fail_rate: 0.02
rails: 8
faults:
  - {node: sim-17, kind: hard}
  - {node: sim-42, kind: intermittent, q: 0.5}
  - {nic: sim-05/3, kind: hard}
YAML
    runner_as_engine pairs pairs "pairs, seed $seed"
    got=$(json_q "$WORK/pairs.json" 'sorted(b["part"] for b in d["diagnosis"]["bad"] if b["method"] == "bisect")')
    [ "$got" = "['sim-05/mlx5_3', 'sim-17', 'sim-42']" ] || fail "seed $seed: pairs named $got"
    pass "pairs on 8 rails, seed $seed: runner = engine ($SUMMARY); sim-17, sim-42, sim-05/mlx5_3 named"
done
[ "$(json_q "$WORK/pairs.json" '[b["kind"] for b in d["diagnosis"]["bad"] if b["part"] == "sim-05/mlx5_3"][0]')" = nic ] \
    || fail "the NIC is not named as one"
json_q "$WORK/pairs.json" '[t["id"] for t in d["stages"][1]["tasks"] if "/b" in t["id"]][0]' \
    | grep -qE '/1/b1\.g0$' || fail "follow-up ids are not <campaign>/<stage>/b<k>.g<j>"
json_q "$WORK/pairs.json" '[e["partners"] for b in d["diagnosis"]["bad"] if b["part"] == "sim-17"
    for e in b["evidence"] if e["task"].split("/")[-1] != "sim-17"][0]' | grep -q "sim-" \
    || fail "evidence without partners"
# A part that passed makes no claim; undecided ones say what they still need.
[ "$(json_q "$WORK/pairs.json" 'set(x["confidence"] for x in d["diagnosis"]["passed"])')" = "{None}" ] \
    || fail "passed parts carry a confidence"
# (passes in a row, or why passes cannot clear it: a failure a fault in bursts explains)
[ "$(json_q "$WORK/pairs.json" 'sum(1 for x in d["diagnosis"]["undecided"]
    if not re.search(r"not cleared: (\d+ more pass|.*passes cannot rule such a fault out)", x["summary"]))')" = 0 ] \
    || fail "undecided parts do not say what clearing them needs"
# On watch: undecided only for want of a bound on bursts, each saying that its passes rule out a
# steady fault (with 2% false fails, some of the parts that failed early are there by now)
[ "$(json_q "$WORK/pairs.json" 'sum(1 for x in d["diagnosis"]["undecided"] if x["on_watch"])')" -gt 0 ] \
    || fail "no undecided part on watch after 24 follow-up rounds"
[ "$(json_q "$WORK/pairs.json" 'sum(1 for x in d["diagnosis"]["undecided"] if x["on_watch"] !=
    x["summary"].startswith("undecided, on watch:"))')" = 0 ] \
    || fail "on_watch and the summaries of undecided parts disagree"
# ... and one held open by the burst rule that is not on watch says what would put it there
[ "$(json_q "$WORK/pairs.json" 'sum(1 for x in d["diagnosis"]["undecided"] if not x["on_watch"]
    and "passes cannot rule such a fault out" in x["summary"] and "on watch once" not in x["summary"])')" = 0 ] \
    || fail "a part held by the burst rule does not say what would put it on watch"

# --- groups: re-tested in twos with trusted partners, a NIC fault found at its node -----------
cat >"$WORK/groups.yaml" <<'YAML'
name: sim-bisect-groups
stages:
  - name: groups
    workload: allreduce
    timeout: 10m
    scope: group
    group_size: 4
    on_fail: bisect
YAML
for seed in 4 5; do
    cat >"$WORK/groups-faults.yaml" <<YAML
seed: $seed
false_fail_rate: 0.02
rails: 8
faults:
  - {node: sim-37, kind: hard}
  - {nic: sim-50/2, kind: hard}
YAML
    runner_as_engine groups groups "groups, seed $seed"
    [ "$(bad_parts groups)" = "['sim-37', 'sim-50']" ] || fail "groups named $(bad_parts groups)"
    small=$(json_q "$WORK/groups.json" 'min(len(t["nodes"]) for t in d["stages"][0]["tasks"] if "/b" in t["id"])')
    [ "$small" -ge 2 ] || fail "a follow-up test of $small node(s): below the floor of two"
    pass "groups of 4, seed $seed: runner = engine ($SUMMARY); sim-37 and sim-50 (its NIC) named"
done

# --- the whole fleet in one group: split, never below two nodes --------------------------------
cat >"$WORK/one.yaml" <<'YAML'
name: sim-bisect-one-group
stages:
  - name: everyone
    workload: allreduce
    timeout: 10m
    scope: group
    group_size: 0
    on_fail: bisect
YAML
printf 'seed: 6\nfalse_fail_rate: 0.02\nfaults:\n  - {node: sim-22, kind: hard}\n' >"$WORK/one-faults.yaml"
runner_as_engine one everyone "one group"
[ "$(bad_parts one)" = "['sim-22']" ] || fail "one group named $(bad_parts one)"
sizes=$(json_q "$WORK/one.json" 'sorted(set(len(t["nodes"]) for t in d["stages"][0]["tasks"] if "/b" in t["id"]))')
json_q "$WORK/one.json" 'min(len(t["nodes"]) for t in d["stages"][0]["tasks"] if "/b" in t["id"])' \
    | grep -qx 2 || fail "split test sizes $sizes: expected down to two, never one"
pass "one group of 64: split into parts of sizes $sizes, never one node; runner = engine ($SUMMARY)"

# --- slow parts, from the flows: a node, a NIC and an uplink of a single-spine fabric ---------
# One spine, so that the topology alone knows every route; eight leaves, so that a slow uplink
# slows a quarter of the flows (with half of them slow there is no healthy median to judge by).
leaf_spine_topo sim- 8 8 1 2 >"$WORK/fabric.topo"
cat >"$WORK/slow.yaml" <<YAML
name: sim-bisect-slow
stages:
  - name: pairs
    workload: rdmabw
    timeout: 10m
    scope: pairs
    pairing: topology
    topology: $WORK/fabric.topo
    rounds: 2
    on_fail: bisect
    rails: mlx5_[0-7]
YAML
cat >"$WORK/slow-faults.yaml" <<'YAML'
seed: 3
rails: 8
faults:
  - {node: sim-07, kind: slow, factor: 0.6}
  - {link: leaf05<->spine01, kind: slow, factor: 0.5}
  - {nic: sim-50/2, kind: slow, factor: 0.5}
YAML
simfleet slow 64 "$WORK/slow-faults.yaml" "$WORK/slow.yaml" --topology "$WORK/fabric.topo"
[ $SIM_RC -eq 1 ] || fail "slow run exited $SIM_RC, expected 1"
[ "$(bad_parts slow)" = "['leaf05<->spine01', 'sim-07', 'sim-50/mlx5_2']" ] \
    || fail "slow parts named: $(bad_parts slow)"
[ "$(json_q "$WORK/slow.json" 'd["diagnosis"]["undecided"]')" = "[]" ] || fail "undecided parts left"
pass "slow node, slow NIC and slow uplink named from the flows, told apart"
