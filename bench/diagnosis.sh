#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The diagnosis benchmark in the messy simulated world (issue 14; docs/diagnosis.md "Benchmark"):
# seeded trials of the diagnosis session against the simulated fleet's fault model, in one process
# (fleetburn-bench-diagnosis: the planning code the runner uses), with faults drawn from a real
# fleet's failure mix, false fails, lognormal noise, lost results, noisy nodes, next to two
# baselines in the same simulator; then one fault set through the real coordinator and real ZeroMQ
# (fleetburn-simfleet, on_fail: bisect). Writes bench/results/diagnosis-messy-<date>.txt.
#
#   bench/diagnosis.sh BUILD_DIR [--quick] [TAG] (--quick: a tenth of the trials, for a smoke run;
#                                                TAG: written to diagnosis-messy-<date>-TAG.txt, for
#                                                a re-run on a day that has a results file)
#   bench/diagnosis.sh BUILD_DIR --runner       (only the runs through the real coordinator, into
#                                                bench/results/diagnosis-messy-runner-<date>.txt)
#   bench/diagnosis.sh BUILD_DIR --budget       (only the goal world at follow-up budgets of 24, 48
#                                                and 96 rounds, 30 trials each, into
#                                                bench/results/diagnosis-messy-budget-<date>.txt)
#
# Every section gives the exact command that made it. Run it under nice on a shared machine.
set -euo pipefail

BUILD=${1:?usage: bench/diagnosis.sh BUILD_DIR [--quick|--runner] [TAG]}
QUICK=${2:-}
TAG=${3:+-$3}
SRC=$(cd "$(dirname "$0")/.." && pwd)
BENCH="$BUILD/bin/fleetburn-bench-diagnosis"
SIMFLEET="$BUILD/bin/fleetburn-simfleet"
OUT="$SRC/bench/results/diagnosis-messy-$(date +%Y-%m-%d)$TAG.txt"
[ "$QUICK" = --runner ] && OUT="$SRC/bench/results/diagnosis-messy-runner-$(date +%Y-%m-%d)$TAG.txt"
[ "$QUICK" = --budget ] && OUT="$SRC/bench/results/diagnosis-messy-budget-$(date +%Y-%m-%d)$TAG.txt"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/fbdiag-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$SRC/bench/results"

trials() { # full count -> the count for this run
    if [ "$QUICK" = --quick ]; then echo $((($1 + 9) / 10)); else echo "$1"; fi
}

{
    echo "# fleetburn diagnosis benchmark in the messy simulated world, $(date -u +%Y-%m-%dT%H:%MZ)"
    echo "# commit $(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo '?'), $(uname -srm), $(nproc) CPUs"
    echo "# made by: bench/diagnosis.sh BUILD_DIR $QUICK ${3:-}"
    echo "# the simulator: sim/faultmodel.h, docs/simfleet.md; the mix and the scoring:"
    echo "# bench/diagnosis_mix.c, bench/diagnosis_score.h; what each column means: below each header."
    echo
} >"$OUT"

run() { # title, then fleetburn-bench-diagnosis arguments
    [ "$QUICK" = --runner ] && return 0
    local title=$1
    shift
    {
        echo "################################################################################"
        echo "## $title"
        echo "## command: fleetburn-bench-diagnosis $*"
    } | tee -a "$OUT"
    local start=$SECONDS
    "$BENCH" "$@" 2>>"$WORK/bench.log" | tee -a "$OUT"
    echo "# $((SECONDS - start)) s elapsed" | tee -a "$OUT"
    echo >>"$OUT"
}

MESS=(--false-fail 0.02 --noise-sigma 0.05 --lost 0.002 --noisy-share 0.01 --noisy-sigma 0.15
      --second-share 0.1)

# --- the goal world at larger budgets: what more follow-up rounds buy (--budget) -----------------
if [ "$QUICK" = --budget ]; then
    for rounds in 24 48 96; do
        run "the goal world with a budget of $rounds follow-up rounds (30 trials)" \
            --nodes 1024 --rails 8 --trials 30 --seed 1 --mix fleet --faults 1-8 "${MESS[@]}" \
            --disagree 0 --sweeps 2 --follow-ups "$rounds" --no-baselines
    done
    exit 0
fi

# --- the world of the issue's goals ------------------------------------------------------------
run "the goal world: 1024 nodes, 8 rails, the fleet mix, 2% false fails, lognormal 0.05, 0.2% lost" \
    --nodes 1024 --rails 8 --trials "$(trials 1300)" --seed 1 --mix fleet --faults 1-8 \
    "${MESS[@]}" --disagree 0 --sweeps 2 --follow-ups 24 --order-check "$(trials 30)"
run "the goal world on 1 rail: one intermittent node, q 0.5, netbw pairs, one sweep" \
    --nodes 1024 --rails 1 --trials "$(trials 2000)" --seed 2 --mix node-intermittent --q 0.5 \
    --faults 1 "${MESS[@]}" --second-share 0 --disagree 0 --sweeps 1 --follow-ups 24 \
    --goal-follow-ups 24 --order-check "$(trials 30)"

# --- what each part of the mess does -----------------------------------------------------------
run "the fleet mix with disagreeing members (1%) on top of the goal world" \
    --nodes 1024 --rails 8 --trials "$(trials 300)" --seed 3 --mix fleet --faults 1-8 \
    "${MESS[@]}" --disagree 0.01 --sweeps 2 --follow-ups 24
run "the fleet mix in the old world (1% false fails, +-1% uniform noise, nothing lost, no noisy nodes)" \
    --nodes 1024 --rails 8 --trials "$(trials 300)" --seed 4 --mix fleet --faults 1-8 \
    --false-fail 0.01 --noise-width 0.01 --lost 0 --disagree 0 --noisy-share 0 --second-share 0 \
    --sweeps 2 --follow-ups 24
run "the old world's faults (hard nodes) in the goal world's mess" \
    --nodes 1024 --rails 8 --trials "$(trials 300)" --seed 5 --mix node-hard --faults 1-8 \
    "${MESS[@]}" --second-share 0 --disagree 0 --sweeps 2 --follow-ups 24

# --- through the real coordinator: fleetburn-simfleet, on_fail: bisect -------------------------
N=1024
cat >"$WORK/campaign.yaml" <<'YAML'
name: diagnosis-messy
stages:
  - name: node-local
    workload: memtest
    timeout: 5s
    params: {size: 1GiB}
  - name: pairs
    workload: rdmabw
    timeout: 3s
    scope: pairs
    pairing: topology
    topology: fabric.topo
    rounds: 2
    on_fail: bisect
    bisect_rounds: 24
    rails: mlx5_[0-7]
    bisect_prior: node-local
YAML
cat >"$WORK/faults.yaml" <<'YAML'
seed: 14
false_fail_rate: 0.02
lost_rate: 0.002
noise: {dist: lognormal, sigma: 0.05}
rails: 8
faults:
  - {node: sim-0017, kind: hard}
  - {nic: sim-0341/1, kind: hard}
  - {node: sim-0515, kind: intermittent, q: 0.5}
  - {node: sim-0700, kind: intermittent, q: 0.3, burst: 600}
  - {node: sim-0901, kind: slow, factor: 0.85}
  - {leaf: leaf020, kind: hard}
  - {node: sim-0222, kind: noisy, sigma: 0.15}
YAML
{
    echo "################################################################################"
    echo "## the runner: fleetburn-simfleet (real coordinator, real ZeroMQ), on_fail: bisect"
    echo "## command: fleetburn-simfleet --agents $N --faults faults.yaml --campaign campaign.yaml --topology fabric.topo --delay-ms D"
    echo "# campaign: memtest (node-local, timeout 5s), then rdmabw pairs on mlx5_[0-7], 2 sweeps of topology pairing,"
    echo "#   on_fail: bisect, bisect_rounds 24, bisect_prior: the memtest stage, timeout 3s (so that a"
    echo "#   lost result costs 8 s of real time, not 10 min); the fabric: leaves of 32 on 4 spines"
    echo "# faults.yaml:"
    sed 's/^/#   /' "$WORK/faults.yaml"
    echo "# 'runner' is the report's diagnosis; 'in-process' is fleetburn-bench-diagnosis --faults-file"
    echo "#   on the same file (its own clock and test ids: the same world, other draws)"
} | tee -a "$OUT"
python3 - "$N" >"$WORK/fabric.topo" <<'PY'
import sys
n = int(sys.argv[1])
leaves = (n + 31) // 32
for l in range(leaves):
    print("leaf%03d: %s" % (l + 1, ",".join("sim-%04d" % i for i in range(l * 32, min(n, l * 32 + 32)))))
for s in range(4):
    print("spine%02d: leaf[001-%03d]" % (s + 1, leaves))
PY
# runner TAG [fleetburn-simfleet options]: one run; its diagnosis in $WORK/TAG.diag
runner() {
    local tag=$1 start=$SECONDS rc
    shift
    set +e
    "$SIMFLEET" --agents "$N" --faults "$WORK/faults.yaml" --campaign "$WORK/campaign.yaml" \
        --topology "$WORK/fabric.topo" --report-json "$WORK/$tag.json" "$@" >"$WORK/$tag.out" \
        2>"$WORK/$tag.log"
    rc=$?
    set -e
    echo "# run $tag: fleetburn-simfleet ... $*" | tee -a "$OUT"
    python3 - "$WORK/$tag.json" "$rc" "$((SECONDS - start))" "$WORK/$tag.diag" <<'PY' | tee -a "$OUT"
import json, sys
d = json.load(open(sys.argv[1]))
g = d["diagnosis"]
by_method = {}
for b in g["bad"]:
    by_method.setdefault(b["method"], []).append(b["part"])
und = sorted(b["part"] for b in g["undecided"])
stage = d["stages"][1]
rounds = {t["id"].split("/")[-1].split(".")[0] for t in stage["tasks"] if "/diagnosis" not in t["id"]}
verdicts = {}
for t in stage["tasks"]:
    verdicts[t["verdict"]] = verdicts.get(t["verdict"], 0) + 1
# the simulated clock (docs/simfleet.md): the end of the last round, from the results' metrics
end = max((r["metrics"]["sim.start_s"] + r["metrics"]["sim.duration_s"]) for s in d["stages"]
          for t in s["tasks"] for r in t["results"] if "sim.start_s" in r["metrics"])
for method in sorted(by_method):
    print("runner: named bad by %s (%d): %s" % (method, len(by_method[method]), sorted(by_method[method])))
watch = sorted(b["part"] for b in g["undecided"] if b.get("on_watch"))
print("runner: undecided (%d, %d of them on watch) %s; cleared %d" % (len(und), len(watch), und,
                                                                    len(g["cleared"])))
print("runner: pairs stage %d rounds (%s), %d tasks %s; simulated %.0f s without deadline waits; "
      "exit %s; %s s wall" % (
    len(rounds), " ".join(sorted(rounds, key=lambda r: (r[0] != "r", int(r[1:])))), len(stage["tasks"]),
    verdicts, end, sys.argv[2], sys.argv[3]))
with open(sys.argv[4], "w") as f:
    f.write(repr((sorted(by_method.items()), und, watch, sorted(rounds))))
PY
    grep -E "^coordinator (memory|CPU)" "$WORK/$tag.log" | sed "s/^/#   /" | tee -a "$OUT"
}
# the same seed and faults twice, results returned after 0-50 ms and after 0-5 ms of real time
runner a --delay-ms 0-50
runner b --delay-ms 0-5
if cmp -s "$WORK/a.diag" "$WORK/b.diag"; then
    echo "runner: the two runs named, left undecided, put on watch and planned the same" | tee -a "$OUT"
else
    echo "runner: the two runs (same seed, same faults, other real delays) DIFFER in what they named or planned" | tee -a "$OUT"
fi
echo "in-process: $("$BENCH" --nodes "$N" --faults-file "$WORK/faults.yaml" --sweeps 2 --follow-ups 24 \
    | tr '\n' ' ')" | tee -a "$OUT"
echo | tee -a "$OUT"
echo "written to $OUT"
