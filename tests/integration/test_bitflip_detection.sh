#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fault injection proves detection: bit flips injected into one agent's memtest buffer make that
# node, and only that node, fail; its findings list the miscompares. Without the test-only
# switch the same parameter is refused.
. "$(dirname "$0")/lib.sh"

cat >"$WORK/campaign.yaml" <<'YAML'
name: bitflips
stages:
  - name: dram
    workload: memtest
    timeout: 5m
    params: {size: 32MiB, passes: 1, patterns: [own_address, random, moving_inversions]}
YAML

status_of rc "$FLEETBURN" run --local 3 --db "$WORK/t.db" --inject local-1:memtest.inject_bitflips=4 \
    "$WORK/campaign.yaml" >"$WORK/run.out" 2>"$WORK/run.log"
[ $rc -eq 1 ] || fail "run exited $rc, expected 1 (a task failed)"
"$FLEETBURN" report --db "$WORK/t.db" --format json >"$WORK/report.json"
verdicts=$(json_q "$WORK/report.json" 'sorted((t["nodes"][0], t["verdict"]) for t in d["stages"][0]["tasks"])')
[ "$verdicts" = "[('local-0', 'pass'), ('local-1', 'fail'), ('local-2', 'pass')]" ] \
    || fail "verdicts were $verdicts"
nfind=$(json_q "$WORK/report.json" '[len(t["findings"]) for t in d["stages"][0]["tasks"] if t["nodes"][0] == "local-1"][0]')
[ "$nfind" -ge 1 ] || fail "no findings for local-1"
json_q "$WORK/report.json" '[f["what"] for t in d["stages"][0]["tasks"] for f in t["findings"]]' >"$WORK/findings.txt"
grep -qi "expected" "$WORK/findings.txt" || fail "findings do not show expected/actual: $(cat "$WORK/findings.txt")"
miscompares=$(json_q "$WORK/report.json" '[t["metrics"]["miscompares"] for t in d["stages"][0]["tasks"] if t["nodes"][0] == "local-1"][0]')
python3 -c "import sys; sys.exit(0 if float('$miscompares') >= 1 else 1)" || fail "miscompares=$miscompares"
[ "$(json_q "$WORK/report.json" '[b["part"] for b in d["diagnosis"]["bad"]]')" != "[]" ] || fail "diagnosis names nothing"
json_q "$WORK/report.json" '[b["part"] for b in d["diagnosis"]["bad"]]' | grep -q local-1 || fail "diagnosis does not name local-1"
pass "only local-1 failed, with $nfind finding(s) and $miscompares miscompare(s)"

# The campaign parameter without the agent switch is refused, not honoured.
cat >"$WORK/inject.yaml" <<'YAML'
name: refused-injection
stages:
  - name: dram
    workload: memtest
    params: {size: 8MiB, inject_bitflips: 2}
YAML
status_of rc "$FLEETBURN" run --local 1 --db "$WORK/t2.db" "$WORK/inject.yaml" >"$WORK/run2.out" 2>"$WORK/run2.log"
[ $rc -eq 1 ] || fail "injection without the switch exited $rc, expected 1"
"$FLEETBURN" report --db "$WORK/t2.db" --format json >"$WORK/report2.json"
[ "$(json_q "$WORK/report2.json" 'd["stages"][0]["tasks"][0]["verdict"]')" = error ] || fail "expected error verdict"
json_q "$WORK/report2.json" 'd["stages"][0]["tasks"][0]["error"]' | grep -q -- "--allow-fault-injection" \
    || fail "refusal does not name the switch"
pass "inject_bitflips without --allow-fault-injection is refused"
