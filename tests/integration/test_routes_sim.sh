#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# routes: FILE through the real coordinator (fleetburn-simfleet, on_fail: bisect): on the 2-spine,
# 4-leaf fabric of tests/fixtures/routes, one leaf-spine link slowed to half; the simulated fabric
# routes flows by the same forwarding tables (--routes). Given the subnet manager's routes, the
# runner names that exact link, leaf02<->spine01, and nothing else; without them at most "one of
# leaf02's uplinks" can be said, and on this small fabric (two nodes per leaf behind each spine)
# not even that: the nodes whose flows cross the link are left undecided between themselves and
# the leaf's uplinks, none named. Both forwarding-table forms (ibroute, ibdiagnet2.fdbs) give the
# same diagnosis, and the same plan whatever real time a task takes. A routes file of another
# fabric is refused before anything runs.
. "$(dirname "$0")/lib.sh"

FIX="$FB_SRC/tests/fixtures"

# The fixtures' fabric with the simulated agents' names: node01 ... node16 -> sim-00 ... sim-15
# (fabric-2s4l16n.topo, written with them).
rename() { python3 -c '
import re, sys
print(re.sub(r"node(\d\d)", lambda m: "sim-%02d" % (int(m.group(1)) - 1), open(sys.argv[1]).read()), end="")' "$1"; }
# four leaves of four nodes under two spines
leaf_spine_topo sim- 4 4 2 2 >"$WORK/fabric.topo"
rename "$FIX/routes/fabric-2s4l16n.routes" >"$WORK/fabric.routes"
rename "$FIX/routes/fabric-2s4l16n-fdbs.routes" >"$WORK/fabric-fdbs.routes"

cat >"$WORK/faults.yaml" <<'YAML'
seed: 5
rails: 4
faults:
  - {link: leaf02<->spine01, kind: slow, factor: 0.5}
YAML

campaign() { # name routes-file (or "" for none)
    cat >"$WORK/$1.yaml" <<YAML
name: routes-$1
stages:
  - name: pairs
    workload: rdmabw
    timeout: 10m
    scope: pairs
    pairing: topology
    topology: fabric.topo
${2:+    routes: $2}
    rounds: 3
    on_fail: bisect
    rails: mlx5_[0-3]
YAML
}

simfleet() { # name [more args]
    local name=$1
    shift
    run_simfleet "$name" --agents 16 --faults "$WORK/faults.yaml" --campaign "$WORK/$name.yaml" \
        --topology "$WORK/fabric.topo" --routes "$WORK/fabric.routes" --delay-ms "${DELAY:-0-5}" "$@"
}

bad_parts() { json_q "$WORK/$1.json" 'sorted(b["part"] for b in d["diagnosis"]["bad"])'; }

campaign ibroute fabric.routes
simfleet ibroute
[ $SIM_RC -eq 1 ] || fail "run with routes exited $SIM_RC, expected 1 (a part named bad)"
[ "$(bad_parts ibroute)" = "['leaf02<->spine01']" ] || fail "with routes: named $(bad_parts ibroute)"
pass "with the subnet manager's routes (ibroute): leaf02<->spine01 named, nothing else"

campaign fdbs fabric-fdbs.routes
simfleet fdbs
[ "$(bad_parts fdbs)" = "['leaf02<->spine01']" ] || fail "with fdbs routes: named $(bad_parts fdbs)"
pass "with ibdiagnet2.fdbs tables: the same link"

campaign none ""
simfleet none
case "$(bad_parts none)" in
*"leaf02<->spine01"*) fail "without routes the spine was named: $(bad_parts none)" ;;
*sim-0[4-7]*) fail "without routes a node of leaf02 was named for the link's slowness: $(bad_parts none)" ;;
esac
# the nodes of leaf02 slow only across the leaf's uplinks are undecided, saying so
between=$(json_q "$WORK/none.json" 'sorted(u["part"] for u in d["diagnosis"]["undecided"] if "leaf02'"'"'s uplinks" in u["summary"])')
case "$between" in
*sim-0[4-7]*) ;;
*) fail "no node of leaf02 undecided between itself and the leaf's uplinks: $between" ;;
esac
pass "without routes the spine is not known: named $(bad_parts none); undecided between node and uplinks: $between"

# The same campaign (without routes: follow-up rounds with trusted partners) with results returned
# after other real delays: the same plan (every task and its members) and the same diagnosis. A
# pairing: topology stage has no seed of its own; its session is seeded by the stage's name, not
# by the clock.
plan() { json_q "$WORK/$1.json" '[(t["id"].split("/", 1)[1], t["nodes"]) for s in d["stages"] for t in s["tasks"]]'; }
cp "$WORK/none.yaml" "$WORK/again.yaml"
DELAY=0-50 simfleet again
[ "$(plan again)" = "$(plan none)" ] || fail "another delay planned other tasks"
[ "$(bad_parts again)" = "$(bad_parts none)" ] || fail "another delay: named $(bad_parts again)"
pass "the same plan and diagnosis with results after 0-50 ms"

# The routes of another fabric (a spine renamed) are refused with the campaign's line.
sed 's/spine02/spine09/g' "$WORK/fabric.routes" >"$WORK/other.routes"
campaign other other.routes
simfleet other
[ $SIM_RC -eq 2 ] || fail "routes of another fabric: exit $SIM_RC, expected 2"
grep -q "other.yaml:9: stages\[0\].routes: 'other.routes' routes over spine spine09, which is no spine of the topology" \
    "$WORK/other.log" || fail "routes of another fabric: $(cat "$WORK/other.log")"
pass "routes of another fabric refused: $(head -c 160 "$WORK/other.log")"
