#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Deadlines and crashes are verdicts, never agent failures: a hung worker is killed at its
# deadline (`timeout`), a crashing worker is `error` naming the signal, and the same agent then
# runs the next stage normally. on_fail: stop skips what follows.
. "$(dirname "$0")/lib.sh"

cat >"$WORK/campaign.yaml" <<'YAML'
name: supervision
stages:
  - name: hang
    workload: sleep
    timeout: 2s
    params: {duration: 100ms, exit: hang}
  - name: crash
    workload: sleep
    params: {duration: 100ms, exit: crash}
  - name: fine
    workload: sleep
    on_fail: stop
    params: {duration: 100ms, exit: fail}
  - name: never
    workload: sleep
    params: {duration: 100ms}
YAML
status_of rc "$FLEETBURN" run --local 1 --db "$WORK/t.db" "$WORK/campaign.yaml" >"$WORK/run.out" 2>"$WORK/run.log"
[ $rc -eq 1 ] || fail "run exited $rc, expected 1"
"$FLEETBURN" report --db "$WORK/t.db" --format json >"$WORK/report.json"
[ "$(json_q "$WORK/report.json" 'd["stages"][0]["tasks"][0]["verdict"]')" = timeout ] || fail "hang verdict"
[ "$(json_q "$WORK/report.json" 'd["stages"][1]["tasks"][0]["verdict"]')" = error ] || fail "crash verdict"
json_q "$WORK/report.json" 'd["stages"][1]["tasks"][0]["error"]' | grep -q "died from signal" || fail "crash error does not name the signal"
[ "$(json_q "$WORK/report.json" 'd["stages"][2]["tasks"][0]["verdict"]')" = fail ] || fail "third stage did not run on the same agent"
[ "$(json_q "$WORK/report.json" 'd["stages"][3]["verdict"]')" = skipped ] || fail "on_fail: stop did not skip the last stage"
pass "timeout, crash, fail and on_fail: stop behave"
