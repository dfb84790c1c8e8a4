#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Usage and campaign-file errors exit 2 with a message naming the file, line and key; nothing
# already recorded in the database is lost by a bad invocation.
. "$(dirname "$0")/lib.sh"


printf 'name: x\nstages:\n  - name: a\n    workload: memtest\n    params: {sise: 1MiB}\n' >"$WORK/bad.yaml"
expect_exit 2 "$WORK/e1" "$FLEETBURN" run --local 1 --db "$WORK/t.db" "$WORK/bad.yaml"
grep -q "bad.yaml:5" "$WORK/e1" || fail "error does not name file:line: $(cat "$WORK/e1")"
grep -q "sise" "$WORK/e1" || fail "error does not name the key"
pass "unknown parameter: $(head -1 "$WORK/e1")"

printf 'name: x\nstages:\n  - name: a\n    workload: gpuburnn\n' >"$WORK/bad2.yaml"
expect_exit 2 "$WORK/e2" "$FLEETBURN" run "$WORK/bad2.yaml" --db "$WORK/t.db"
grep -q "bad2.yaml:4" "$WORK/e2" && grep -q "gpuburnn" "$WORK/e2" || fail "unknown workload: $(cat "$WORK/e2")"
pass "unknown workload: $(head -1 "$WORK/e2")"

expect_exit 2 "$WORK/e3" "$FLEETBURN" run "$WORK/missing.yaml"
expect_exit 2 "$WORK/e4" "$FLEETBURN" frobnicate
expect_exit 2 "$WORK/e5" "$FLEETBURN" run "$WORK/bad.yaml" --local 0
expect_exit 2 "$WORK/e6" "$FLEETBURN" report --format xml --db "$WORK/t.db"
expect_exit 2 "$WORK/e7" "$AGENT" --name "bad name" --coordinator tcp://127.0.0.1:1
expect_exit 2 "$WORK/e8" "$AGENT"
pass "usage errors exit 2"

# The clients of a coordinator: bad arguments exit 2 before anything is sent.
printf 'name: ok\nstages:\n  - name: a\n    workload: sleep\n    params: {duration: 100ms}\n' >"$WORK/ok.yaml"
expect_exit 2 "$WORK/c1" "$FLEETBURN" follow one two
expect_exit 2 "$WORK/c2" "$FLEETBURN" cancel 'no such/id'
grep -q "is not a campaign id" "$WORK/c2" || fail "malformed id: $(cat "$WORK/c2")"
expect_exit 2 "$WORK/c3" "$FLEETBURN" follow --reason why
expect_exit 2 "$WORK/c4" "$FLEETBURN" campaigns extra
expect_exit 2 "$WORK/c5" "$FLEETBURN" campaigns --local 2
expect_exit 2 "$WORK/c6" "$FLEETBURN" follow --wait 0
grep -q -- "--wait: '0' is not a duration" "$WORK/c6" || fail "--wait 0: $(cat "$WORK/c6")"
expect_exit 2 "$WORK/c7" "$FLEETBURN" run --local 1 --queue "$WORK/ok.yaml"
grep -q -- "--queue and --wait apply to run --coordinator" "$WORK/c7" || fail "--queue with --local: $(cat "$WORK/c7")"
expect_exit 2 "$WORK/c8" "$FLEETBURN" campaigns --format xml
pass "client usage errors (follow, cancel, campaigns, --wait, --queue) exit 2"

# A good campaign, then bad invocations against the same database: the record survives.
"$FLEETBURN" run --local 1 --db "$WORK/t.db" "$WORK/ok.yaml" >/dev/null 2>&1 || fail "good campaign failed"
expect_exit 2 "$WORK/e9" "$FLEETBURN" run --local 1 --db "$WORK/t.db" "$WORK/bad.yaml"
expect_exit 2 "$WORK/e10" "$FLEETBURN" report no-such-campaign --db "$WORK/t.db"
"$FLEETBURN" report --db "$WORK/t.db" --format json >"$WORK/r.json"
[ "$(json_q "$WORK/r.json" 'd["campaign"]["name"]')" = ok ] || fail "earlier campaign lost"
pass "recorded campaign survives bad invocations"
