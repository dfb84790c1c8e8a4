#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# on_fail: bisect through the real coordinator, with simulated agents (fleetburn-simfleet): a
# pairs stage on 8 rails names a hard node, an intermittent node and a hard NIC and nothing else,
# with follow-up tasks on the timeline; a group stage splits its failing group down to the bad
# node; slow parts (a node, a NIC, a leaf-spine uplink on a single-spine fabric) are named from
# the flows the pairs measured.
. "$(dirname "$0")/lib.sh"

export TMPDIR="$WORK"

simfleet() { # name agents faults campaign [more args]
    local name=$1 agents=$2 faults=$3 campaign=$4
    shift 4
    set +e
    "$SIMFLEET" --agents "$agents" --faults "$faults" --campaign "$campaign" \
        --report-json "$WORK/$name.json" --delay-ms 0-5 --keep "$@" >"$WORK/$name.out" 2>"$WORK/$name.log"
    SIM_RC=$?
    set -e
    collect_simfleet_logs
}

bad_parts() { json_q "$WORK/$1.json" 'sorted(b["part"] for b in d["diagnosis"]["bad"])'; }

# --- pairs on 8 rails: node-local round first, then the sweep and follow-up rounds ------------
cp "$FB_SRC/tests/fixtures/campaigns/sim-bisect-rails.yaml" "$WORK/pairs.yaml"
cat >"$WORK/pairs-faults.yaml" <<'YAML'
seed: 21
false_fail_rate: 0
rails: 8
faults:
  - {node: sim-17, kind: hard}
  - {node: sim-42, kind: intermittent, q: 0.5}
  - {nic: sim-05/3, kind: hard}
YAML
simfleet pairs 64 "$WORK/pairs-faults.yaml" "$WORK/pairs.yaml"
[ $SIM_RC -eq 1 ] || fail "pairs run exited $SIM_RC, expected 1"
got=$(json_q "$WORK/pairs.json" 'sorted(b["part"] for b in d["diagnosis"]["bad"] if b["stage"] == "pairs" or b["method"] == "bisect")')
[ "$got" = "['sim-05/mlx5_3', 'sim-17', 'sim-42']" ] || fail "pairs named $got"
[ "$(json_q "$WORK/pairs.json" 'd["diagnosis"]["undecided"]')" = "[]" ] || fail "undecided parts left"
[ "$(json_q "$WORK/pairs.json" '[b["kind"] for b in d["diagnosis"]["bad"] if b["part"] == "sim-05/mlx5_3"][0]')" = nic ] \
    || fail "the NIC is not named as one"
follow=$(json_q "$WORK/pairs.json" 'len([t for t in d["stages"][1]["tasks"] if "/b" in t["id"]])')
[ "$follow" -ge 1 ] || fail "no follow-up tasks on the timeline"
json_q "$WORK/pairs.json" '[t["id"] for t in d["stages"][1]["tasks"] if "/b" in t["id"]][0]' \
    | grep -qE '/1/b1\.g0$' || fail "follow-up ids are not <campaign>/<stage>/b<k>.g<j>"
rails=$(json_q "$WORK/pairs.json" 'len([t for t in d["stages"][1]["tasks"] if t["id"].endswith("/r0.g0")])')
[ "$rails" = 1 ] || fail "no sweep round"
json_q "$WORK/pairs.json" '[e["partners"] for b in d["diagnosis"]["bad"] if b["part"] == "sim-17"
    for e in b["evidence"] if e["task"].split("/")[-1] != "sim-17"][0]' | grep -q "sim-" \
    || fail "evidence without partners"
pass "pairs on 8 rails: sim-17, sim-42 and sim-05/mlx5_3 named, nothing else; $follow follow-up tasks"

# --- a group stage: the failing group of 16 is split down to its bad node ---------------------
cat >"$WORK/groups.yaml" <<'YAML'
name: sim-bisect-groups
stages:
  - name: groups
    workload: allreduce
    timeout: 10m
    scope: group
    group_size: 16
    on_fail: bisect
    bisect_repeat: 2
YAML
printf 'seed: 4\nfaults:\n  - {node: sim-37, kind: hard}\n' >"$WORK/groups-faults.yaml"
simfleet groups 64 "$WORK/groups-faults.yaml" "$WORK/groups.yaml"
[ $SIM_RC -eq 1 ] || fail "groups run exited $SIM_RC, expected 1"
[ "$(bad_parts groups)" = "['sim-37']" ] || fail "groups named $(bad_parts groups)"
cleared=$(json_q "$WORK/groups.json" 'len(d["diagnosis"]["cleared"])')
[ "$cleared" = 15 ] || fail "$cleared cleared, expected the 15 others of the failing group"
parts=$(json_q "$WORK/groups.json" 'sorted(len(t["nodes"]) for t in d["stages"][0]["tasks"] if "/b" in t["id"])')
[ "$parts" = "[1, 1, 1, 1, 1, 1, 1, 1, 4, 4, 4, 4, 4, 4, 4, 4]" ] || fail "split parts were $parts"
pass "a failing group of 16 split into 4 x 4 then 4 x 1 (twice each), sim-37 named, 15 cleared"

# --- slow parts, from the flows: a node, a NIC and an uplink of a single-spine fabric ---------
# One spine, so that the topology alone knows every route; eight leaves, so that a slow uplink
# slows a quarter of the flows (with half of them slow there is no healthy median to judge by).
cat >"$WORK/fabric.topo" <<'TOPO'
leaf01: sim-[00-07]
leaf02: sim-[08-15]
leaf03: sim-[16-23]
leaf04: sim-[24-31]
leaf05: sim-[32-39]
leaf06: sim-[40-47]
leaf07: sim-[48-55]
leaf08: sim-[56-63]
spine01: leaf[01-08]
TOPO
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
