#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The diagnosis benchmark (issue 5, item 4): seeded trials of the diagnosis session against the
# simulated fleet's fault model, in one process (fleetburn-bench-diagnosis: the planning code the
# runner uses), for N = 256, 1024 and 4096 nodes with 1-8 faults of each kind, next to two
# baselines in the same simulator; then the same faults through the real coordinator and real
# ZeroMQ (fleetburn-simfleet, on_fail: bisect) at 256, 1024 and 4096 agents, to show that the
# runner names the same parts. Writes bench/results/diagnosis-<date>.txt.
#
#   bench/diagnosis.sh BUILD_DIR [--quick]      (--quick: a tenth of the trials, for a smoke run)
#
# Columns of the trial tables: N nodes, R rails per node, fault kind, method (engine@C: the
# diagnosis session, judged at C pair rounds after the node-local round), trials, faults placed
# in all trials, recall and precision at the cut and when the method ends, found@ (median/max
# pair rounds until every fault of a trial was named; '+' when some trial never named them all),
# rounds the method ran (median/max), simulated time (the node-local round 600 s, each pair or
# group round 60 s; the baselines run no node-local round).
set -euo pipefail

BUILD=${1:?usage: bench/diagnosis.sh BUILD_DIR [--quick]}
QUICK=${2:-}
SRC=$(cd "$(dirname "$0")/.." && pwd)
BENCH="$BUILD/bin/fleetburn-bench-diagnosis"
SIMFLEET="$BUILD/bin/fleetburn-simfleet"
OUT="$SRC/bench/results/diagnosis-$(date +%Y-%m-%d).txt"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/fbdiag-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$SRC/bench/results"

trials() { # full count -> the count for this run
    if [ "$QUICK" = --quick ]; then echo $((($1 + 9) / 10)); else echo "$1"; fi
}

{
    echo "# fleetburn diagnosis benchmark, $(date -u +%Y-%m-%dT%H:%MZ)"
    echo "# commit $(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo '?'), $(uname -srm), $(nproc) CPUs"
    echo "# fault model: sim/faultmodel.h; fabric: leaves of 32 nodes on 4 spines;"
    echo "# 1% of all tests fail spuriously; intermittent faults show with q = 0.5 per test;"
    echo "# slow node x0.6, slow uplink x0.5; engine defaults (docs/diagnosis.md); 2 sweeps"
    echo "# (fresh matchings on every rail, topology pairing), then follow-up rounds."
    echo
} >"$OUT"

run() { # title, then fleetburn-bench-diagnosis arguments
    local title=$1
    shift
    echo "## $title" | tee -a "$OUT"
    "$BENCH" --header "$@" 2>>"$WORK/bench.log" | tee -a "$OUT"
    tail -n 1 "$WORK/bench.log" | sed 's/^/# /' | tee -a "$OUT"
    echo >>"$OUT"
}

# --- in one process: 8 rails -------------------------------------------------------------------
for n in 256 1024 4096; do
    run "hard faults, N=$n, 8 rails (goal: <= 3 pair rounds, recall = precision = 1.0)" \
        --nodes "$n" --rails 8 --kind hard --trials "$(trials 1000)" --cut 3 --rounds 12
done
for n in 256 1024 4096; do
    t=$([ "$n" = 4096 ] && echo 100 || echo 300)
    run "intermittent q=0.5 with 1% false fails, N=$n, 8 rails (goal: recall, precision >= 0.99 in <= 8 rounds)" \
        --nodes "$n" --rails 8 --kind intermittent --trials "$(trials "$t")" --cut 8 --rounds 16
done
for n in 256 1024 4096; do
    t=$([ "$n" = 4096 ] && echo 50 || echo 100)
    run "slow uplink x0.5, N=$n, 8 rails (goal: named as its leaf-spine link in <= 3 rounds)" \
        --nodes "$n" --rails 8 --kind uplink --trials "$(trials "$t")" --cut 3 --rounds 12
    run "slow node x0.6, N=$n, 8 rails" \
        --nodes "$n" --rails 8 --kind slow --trials "$(trials "$t")" --cut 3 --rounds 12
    run "hard NIC (one rail of one node), N=$n, 8 rails" \
        --nodes "$n" --rails 8 --kind nic --trials "$(trials "$t")" --cut 8 --rounds 16
    run "mixed (one of each kind in turn), N=$n, 8 rails" \
        --nodes "$n" --rails 8 --kind mixed --trials "$(trials "$t")" --cut 8 --rounds 16
done

# --- fewer rails: one test per node per round (1) or two (2) -----------------------------------
for r in 1 2; do
    run "hard faults, N=1024, $r rail(s)" \
        --nodes 1024 --rails "$r" --kind hard --trials "$(trials 300)" --cut 3 --rounds 12
    run "intermittent q=0.5, N=1024, $r rail(s), judged at 8 rounds" \
        --nodes 1024 --rails "$r" --kind intermittent --trials "$(trials 200)" --cut 8 --rounds 32 \
        --sweeps 8 --no-baselines
    run "hard NIC, N=1024, $r rail(s)" \
        --nodes 1024 --rails "$r" --kind nic --trials "$(trials 100)" --cut 8 --rounds 16 --no-baselines
done

# --- through the real coordinator: fleetburn-simfleet, on_fail: bisect -------------------------
echo "## the runner: fleetburn-simfleet (real coordinator, real ZeroMQ), on_fail: bisect" | tee -a "$OUT"
echo "# campaign: memtest (node-local), then rdmabw pairs on mlx5_[0-7] with on_fail: bisect," | tee -a "$OUT"
echo "# bisect_prior: the memtest stage; faults: 2 hard nodes, 2 intermittent (q=0.5), 1 hard NIC," | tee -a "$OUT"
echo "# 1% false fails. 'runner' is what the report's diagnosis names through the bisect stage;" | tee -a "$OUT"
echo "# 'in-process' is fleetburn-bench-diagnosis --faults-file on the same file." | tee -a "$OUT"
{
    cat "$SRC/tests/fixtures/campaigns/sim-bisect-rails.yaml"
    echo "    rounds: 2"
} >"$WORK/campaign.yaml"
for n in 256 1024 4096; do
    w=$(($(printf '%d' "$((n - 1))" | wc -c)))
    name() { printf "sim-%0${w}d" "$1"; }
    cat >"$WORK/faults-$n.yaml" <<YAML
seed: $n
false_fail_rate: 0.01
rails: 8
faults:
  - {node: $(name 17), kind: hard}
  - {node: $(name $((n / 2 + 3))), kind: hard}
  - {node: $(name $((n / 4 + 1))), kind: intermittent, q: 0.5}
  - {node: $(name $((n - 5))), kind: intermittent, q: 0.5}
  - {nic: $(name $((n / 3)))/1, kind: hard}
YAML
    start=$(date +%s.%N)
    set +e
    "$SIMFLEET" --agents "$n" --faults "$WORK/faults-$n.yaml" --campaign "$WORK/campaign.yaml" \
        --report-json "$WORK/report-$n.json" --stats "$WORK/stats-$n.txt" >"$WORK/sim-$n.out" 2>"$WORK/sim-$n.log"
    rc=$?
    set -e
    wall=$(python3 -c "import sys; print('%.1f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$start" "$(date +%s.%N)")
    python3 - "$WORK/report-$n.json" "$WORK/faults-$n.yaml" "$n" "$rc" "$wall" <<'PY' | tee -a "$OUT"
import json, re, sys
d = json.load(open(sys.argv[1]))
truth = []
for line in open(sys.argv[2]):
    m = re.search(r"\{(node|nic): ([^,]+),", line)
    if m:
        part = m.group(2)
        if m.group(1) == "nic":
            node, rail = part.split("/")
            part = "%s/mlx5_%s" % (node, rail)
        truth.append(part)
g = d["diagnosis"]
named = sorted(b["part"] for b in g["bad"] if b["method"] == "bisect")
stage = d["stages"][1]
follow = len({t["id"].split("/")[-1].split(".")[0] for t in stage["tasks"] if "/b" in t["id"]})
print("N=%s runner: named %s; truth %s; %s; undecided %s; cleared %d; %d sweep(s) + %d follow-up "
      "round(s), %d tasks; exit %s; %s s wall" % (
          sys.argv[3], named, sorted(truth), "SAME" if named == sorted(truth) else "DIFFERENT",
          [b["part"] for b in g["undecided"]], len(g["cleared"]), 2, follow, len(stage["tasks"]),
          sys.argv[4], sys.argv[5]))
PY
    grep -E "^coordinator (memory|CPU)" "$WORK/sim-$n.log" | sed "s/^/#   N=$n /" | tee -a "$OUT"
    echo "N=$n in-process: $("$BENCH" --nodes "$n" --faults-file "$WORK/faults-$n.yaml" \
        --sweeps 2 --rounds 14 --pairing random | tr '\n' ' ')" | tee -a "$OUT"
done
echo | tee -a "$OUT"
echo "written to $OUT"
