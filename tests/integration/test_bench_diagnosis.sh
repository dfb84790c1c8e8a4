#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The diagnosis benchmark in short (bench/diagnosis.sh runs it in full): its world has the
# statistics it claims (the fault mix's shares, false fails, lost results, disagreements, the
# noise's sigma: --check-world); a clean world of hard node faults is diagnosed exactly by the
# engine and the two-pass baseline (the benchmark hands the engine what it should); a messy run
# replays identically for its seed and prints every table; a burst that never came while its part
# was tested is counted apart from one that came and was missed; a fault that showed and passed
# is counted beside the healthy parts with as bad a record; a fault file with the messy
# world's keys runs; bad options exit 2.
. "$(dirname "$0")/lib.sh"

BENCH="$FB_BIN/bin/fleetburn-bench-diagnosis"

# --- the world's own statistics ----------------------------------------------------------------
"$BENCH" --check-world --nodes 1024 --rails 8 --false-fail 0.02 --noise-sigma 0.05 --lost 0.002 \
    --disagree 0.005 --noisy-share 0.01 --second-share 0.1 >"$WORK/world.out" \
    || fail "the world is off: $(grep OFF "$WORK/world.out")"
grep -q "^world ok$" "$WORK/world.out" || fail "no verdict on the world"
[ "$(grep -cE " {2,}ok$" "$WORK/world.out")" -eq 17 ] || fail "expected 17 measures: $(cat "$WORK/world.out")"
# the old world's noise: uniform +-1%, an sd of 0.01 / sqrt(3) in the logarithm
"$BENCH" --check-world --nodes 256 --rails 2 --noise-width 0.01 --false-fail 0.02 >"$WORK/w2.out" \
    || fail "uniform world off: $(grep OFF "$WORK/w2.out")"
grep -qE "sd of log\(measured / nominal\) +0.0057[0-9] +0.00577" "$WORK/w2.out" \
    || fail "uniform +-1% is not sd 0.0058: $(grep 'sd of log' "$WORK/w2.out")"
pass "the benchmark's world has the mix, false fails, losses, disagreements and noise it claims"

# --- a clean world: the engine and two-pass name exactly the hard nodes ------------------------
"$BENCH" --nodes 256 --rails 2 --trials 5 --mix node-hard --faults 1-4 --false-fail 0 --lost 0 \
    --disagree 0 --noise-width 0.01 --noisy-share 0 --second-share 0 --follow-ups 8 \
    >"$WORK/clean.out" 2>"$WORK/clean.log"
line() { grep -E "^$1 " "$WORK/$2" | head -n 1; }
read -r _ trials faults recall precision _ <<<"$(line engine clean.out)"
[ "$trials" = 5 ] && [ "$faults" -ge 5 ] || fail "clean run: $(line engine clean.out)"
[ "$recall" = 1.0000 ] && [ "$precision" = 1.0000 ] || fail "engine in a clean world: $(line engine clean.out)"
read -r _ _ _ recall precision _ <<<"$(line two-pass clean.out)"
[ "$recall" = 1.0000 ] && [ "$precision" = 1.0000 ] || fail "two-pass in a clean world: $(line two-pass clean.out)"
pass "a clean world of hard nodes: engine and two-pass recall and precision 1.0"

# --- a messy run: every table, and the same output for the same seed ---------------------------
messy=(--nodes 256 --rails 4 --trials 3 --faults 2-4 --seed 9 --disagree 0.01 --order-check 2)
"$BENCH" "${messy[@]}" >"$WORK/m1.out" 2>"$WORK/m1.log"
"$BENCH" "${messy[@]}" >"$WORK/m2.out" 2>"$WORK/m2.log"
for section in "## summary" "## per kind of fault" "named bad, by confidence" \
    "cleared, by P(good)" "## goals" "## order"; do
    grep -qF "$section" "$WORK/m1.out" || fail "no '$section' in the report"
done
for method in engine two-pass random-15; do
    line "$method" m1.out | grep -q . || fail "no $method row"
done
grep -q "(control: 0 of them differed when re-run in the same order)" "$WORK/m1.out" \
    || fail "a re-run in the same order differed: $(grep -A1 '## order' "$WORK/m1.out")"
diff <(grep -v "trials in" "$WORK/m1.out") <(grep -v "trials in" "$WORK/m2.out") >"$WORK/diff.log" \
    || fail "the same seed gave another report"
pass "a messy run prints every table and replays identically for its seed"

# --- a burst that never comes while its node is tested is "unseen", not "passed" ---------------
# Bursts active 2% of the time in periods of 10^5 s are quiet through almost every session; bursts
# active 90% of the time show in the first round.
bursty() { # q, mean burst -> the node-bursty row and the goal's "besides" line
    "$BENCH" --nodes 256 --rails 4 --trials 4 --seed 5 --mix node-bursty --q "$1" --burst "$2" \
        --faults 2-4 --no-baselines --follow-ups 6 2>/dev/null
}
bursty 0.02 100000 >"$WORK/rare.out"
read -r _ faults _ _ _ passed unseen _ <<<"$(grep -E "^node-bursty +[0-9]+ +[0-9.]+ +[0-9.]+ " "$WORK/rare.out")"
[ "${faults:-0}" -ge 8 ] || fail "rare bursts: $(grep node-bursty "$WORK/rare.out")"
awk -v u="$unseen" -v p="$passed" 'BEGIN { exit !(u >= 0.5 && p == 0) }' \
    || fail "rare bursts not unseen: $(grep node-bursty "$WORK/rare.out")"
grep -qE "besides: never showed in a test of the session +[0-9]+ of $faults$" "$WORK/rare.out" \
    || fail "no 'never showed' count: $(grep -A2 'cleared+passed' "$WORK/rare.out")"
bursty 0.9 60 >"$WORK/often.out"
read -r _ _ named _ _ _ unseen _ <<<"$(grep -E "^node-bursty +[0-9]+ +[0-9.]+ +[0-9.]+ " "$WORK/often.out")"
[ "$named" = 1.0000 ] && [ "$unseen" = 0.0000 ] \
    || fail "frequent bursts: $(grep node-bursty "$WORK/often.out")"
! grep -q "besides: never showed" "$WORK/often.out" || fail "frequent bursts reported as never showing"
pass "a burst that never came while its node was tested is unseen; one that came is named"

# --- a fault that showed and passed is set beside the healthy parts with as bad a record ---------
# NICs failing 5% of their tests among 2% false fails: some show and are never implicated; each
# gets the count of healthy NICs of its trial that failed as often in no more tests.
"$BENCH" --nodes 256 --rails 4 --trials 4 --seed 5 --mix nic-intermittent --q 0.05 --faults 2-4 \
    --false-fail 0.02 --no-baselines --follow-ups 6 >"$WORK/faint.out" 2>/dev/null
passed=$(sed -nE 's/.*cleared\+passed +[0-9]+\+([0-9]+) of [0-9]+.*/\1/p' "$WORK/faint.out")
counts=$(sed -nE 's/.*passed: healthy parts of its kind with as bad a record +//p' "$WORK/faint.out")
[ "${passed:-0}" -ge 1 ] || fail "no faint fault passed: $(grep -A3 'cleared+passed' "$WORK/faint.out")"
[ "$(tr ',' '\n' <<<"$counts" | grep -cE '^ *[0-9]+$')" = "$passed" ] \
    || fail "$passed passed, lookalike counts '$counts'"
tr ',' '\n' <<<"$counts" | awk '$1 > 1024 { bad = 1 } $1 > 0 { some = 1 } END { exit bad || !some }' \
    || fail "lookalike counts out of range or all 0: '$counts'"
pass "a faint fault that passed is counted beside the healthy NICs with as bad a record ($counts)"

# --- a fault file with the messy world's keys ----------------------------------------------------
cat >"$WORK/faults.yaml" <<'YAML'
seed: 3
false_fail_rate: 0.01
lost_rate: 0.001
noise: {dist: lognormal, sigma: 0.05}
rails: 2
faults:
  - {node: sim-017, kind: hard}
  - {node: sim-100, kind: intermittent, q: 0.4, burst: 300}
  - {leaf: leaf004, kind: hard}
YAML
"$BENCH" --nodes 256 --faults-file "$WORK/faults.yaml" --follow-ups 6 >"$WORK/file.out"
grep -q "^truth: sim-017 sim-100 leaf004$" "$WORK/file.out" || fail "truth: $(cat "$WORK/file.out")"
grep -q "^found [0-9]* of 3," "$WORK/file.out" || fail "no count: $(cat "$WORK/file.out")"
pass "a fault file with bursts and a leaf runs"

# --- bad options ---------------------------------------------------------------------------------
for bad in "--mix gpu" "--lost 2" "--faults 9-3" "--nodes 3"; do
    set +e
    # shellcheck disable=SC2086
    "$BENCH" $bad >/dev/null 2>"$WORK/bad.log"
    rc=$?
    set -e
    [ $rc -eq 2 ] || fail "$bad exited $rc, expected 2"
    grep -q "usage:" "$WORK/bad.log" || fail "$bad: no usage"
done
pass "bad options exit 2 with the usage"
