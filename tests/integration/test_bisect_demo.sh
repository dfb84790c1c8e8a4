#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The diagnosis demo (deploy/campaigns/demo-faults.yaml) on eight local agents: bit flips in
# local-2's memtest buffer and local-5's netbw sending throttled to 200 Mbit/s. The report's
# diagnosis names exactly those two (local-2's memory, local-5 slow when sending, confirmed by
# three partners) and nothing else: nothing undecided, no other part bad. Without the injections
# the same campaign passes and names nothing.
. "$(dirname "$0")/lib.sh"

CAMPAIGN="$FB_SRC/deploy/campaigns/demo-faults.yaml"

status_of rc "$FLEETBURN" run --local 8 --db "$WORK/demo.db" \
    --inject local-2:memtest.inject_bitflips=8 --inject local-5:netbw.inject_rate_mbit=200 \
    "$CAMPAIGN" >"$WORK/run.out" 2>"$WORK/run.log"
[ $rc -eq 1 ] || fail "demo exited $rc, expected 1 (the campaign names two faults)"
"$FLEETBURN" report --db "$WORK/demo.db" --format json >"$WORK/report.json"

bad=$(json_q "$WORK/report.json" 'sorted((b["part"], b["stage"]) for b in d["diagnosis"]["bad"])')
echo "bad: $bad"
case "$bad" in
"[('local-2', 'host-memory'), ('local-5', 'network')]") ;;
"[('local-2/"*"', 'host-memory'), ('local-5', 'network')]") ;; # a DIMM label where EDAC has one
*) fail "the diagnosis named $bad, expected local-2 (memory) and local-5 (network) only" ;;
esac
[ "$(json_q "$WORK/report.json" 'd["diagnosis"]["undecided"]')" = "[]" ] || fail "undecided parts"
slow=$(json_q "$WORK/report.json" '[b for b in d["diagnosis"]["bad"] if b["part"] == "local-5"][0]')
json_q "$WORK/report.json" '[b for b in d["diagnosis"]["bad"] if b["part"] == "local-5"][0]["summary"]' \
    | grep -q "when sending" || fail "local-5 is not named slow when sending: $slow"
partners=$(json_q "$WORK/report.json" \
    'len([b for b in d["diagnosis"]["bad"] if b["part"] == "local-5"][0]["partners"])')
[ "$partners" -ge 3 ] || fail "local-5 rests on $partners partners, expected at least 3"
method=$(json_q "$WORK/report.json" '[b["method"] for b in d["diagnosis"]["bad"] if b["part"] == "local-5"][0]')
[ "$method" = bisect ] || fail "local-5 named by $method"
# the evidence cites the pair tests, each with its partner and a measured flow
cited=$(json_q "$WORK/report.json" '[(e["task"].split("/")[-1], e["partners"]) for b in d["diagnosis"]["bad"]
    if b["part"] == "local-5" for e in b["evidence"]]')
echo "evidence: $cited"
json_q "$WORK/report.json" '[e["what"] for b in d["diagnosis"]["bad"] if b["part"] == "local-5" for e in b["evidence"]]' \
    | grep -q "flow local-5 -> " || fail "no flow of local-5 in the evidence"
# the stage ran with on_fail: bisect and ended with a diagnosis task
json_q "$WORK/report.json" '[t["id"] for t in d["stages"][1]["tasks"]]' | grep -q "/1/diagnosis" \
    || fail "no diagnosis task in the network stage"
[ "$(json_q "$WORK/report.json" 'd["stages"][1]["on_fail"]')" = bisect ] || fail "on_fail"
pass "the demo names local-2 (memory) and local-5 (slow sending, $partners partners), nothing else"

# The same campaign on healthy agents: it passes and the diagnosis is empty.
"$FLEETBURN" run --local 8 --db "$WORK/clean.db" "$CAMPAIGN" >"$WORK/clean.out" 2>"$WORK/clean.log" \
    || fail "the demo without injections did not pass"
"$FLEETBURN" report --db "$WORK/clean.db" --format json >"$WORK/clean.json"
[ "$(json_q "$WORK/clean.json" '[d["diagnosis"][k] for k in ("bad", "undecided")]')" = "[[], []]" ] \
    || fail "a healthy run named $(json_q "$WORK/clean.json" 'd["diagnosis"]["bad"]')"
pass "without injections the demo passes and names nothing"
