#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The diagnosis is a function of the results, not of when they arrive: the same seed gives the
# same plan (every task and its members), the same rounds and the same verdicts (every part, its
# state, confidence and summary, and why the session ended) through the real coordinator and
# fleetburn-simfleet whatever real time a simulated task takes (--delay-ms), over several seeds,
# with 2% of tests failing spuriously and an intermittent fault, on a pairs stage and a group
# stage in one campaign.
. "$(dirname "$0")/lib.sh"


cat >"$WORK/campaign.yaml" <<'YAML'
name: sim-bisect-determinism
stages:
  - name: node-local
    workload: memtest
    params: {size: 1GiB}
  - name: pairs
    workload: rdmabw
    timeout: 10m
    scope: pairs
    pairing: random
    seed: 5
    rounds: 2
    on_fail: bisect
    bisect_budget: {rounds: 10}
    rails: mlx5_[0-3]
    bisect_prior: node-local
  - name: groups
    workload: allreduce
    timeout: 10m
    scope: group
    group_size: 8
    on_fail: bisect
    bisect_budget: {rounds: 10}
YAML

# What must not change with the timing: the tasks of every stage (ids without the campaign id,
# members, verdicts) and the diagnosis (parts by state with confidence and summary, sessions).
fingerprint() {
    python3 - "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
out = []
for s in d["stages"]:
    for t in s["tasks"]:
        out.append(("task", t["id"].split("/", 1)[1], tuple(t["nodes"]), t["verdict"]))
g = d["diagnosis"]
for state in ("bad", "undecided", "cleared", "passed"):
    for x in sorted(g[state], key=lambda x: x["part"]):
        out.append((state, x["part"], x["stage"], x["confidence"], x["summary"]))
for s in g["sessions"]:
    out.append(("session", s["stage"], s["ended"], s["follow_up_rounds"]))
print(json.dumps(out))
PY
}

for seed in 7 8 9; do
    cat >"$WORK/faults.yaml" <<YAML
seed: $seed
false_fail_rate: 0.02
rails: 4
faults:
  - {node: sim-11, kind: intermittent, q: 0.5}
  - {nic: sim-30/1, kind: hard}
YAML
    first=""
    for delay in 0 0-20 5-50; do
        run_simfleet run --agents 48 --faults "$WORK/faults.yaml" --campaign "$WORK/campaign.yaml" \
            --delay-ms "$delay"
        [ $SIM_RC -eq 1 ] || fail "seed $seed, --delay-ms $delay: exited $SIM_RC, expected 1"
        fingerprint "$WORK/run.json" >"$WORK/fp-$delay"
        if [ -z "$first" ]; then
            first=$delay
            continue
        fi
        if ! cmp -s "$WORK/fp-$first" "$WORK/fp-$delay"; then
            python3 - "$WORK/fp-$first" "$WORK/fp-$delay" <<'PY' >&2
import json, sys
a, b = (set(map(tuple, json.load(open(p)))) for p in sys.argv[1:3])
for x in sorted(a - b, key=str)[:10]: print("only first:", x)
for x in sorted(b - a, key=str)[:10]: print("only second:", x)
PY
            fail "seed $seed: --delay-ms $first and $delay gave different plans or verdicts"
        fi
    done
    tasks=$(json_q "$WORK/run.json" 'sum(len(s["tasks"]) for s in d["stages"])')
    bad=$(json_q "$WORK/run.json" 'sorted(b["part"] for b in d["diagnosis"]["bad"] if b["method"] == "bisect")')
    pass "seed $seed: the same $tasks tasks and the same diagnosis (bad: $bad) at --delay-ms 0, 0-20 and 5-50"
done
