#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Docs that cannot drift: the workload parameter tables of docs/campaign-file.md are exactly what
# `fleetburn workloads --markdown` prints from the schema the campaign parser uses (regenerate with
# deploy/update-generated-docs.sh), every workload the parser knows has its table, and
# `fleetburn workloads [NAME]` shows the same schema on a terminal.
. "$(dirname "$0")/lib.sh"

page="$FB_SRC/docs/campaign-file.md"
"$FLEETBURN" workloads --markdown >"$WORK/generated.md" || fail "workloads --markdown exited $?"
python3 - "$page" "$WORK/generated.md" <<'PY' || fail "docs/campaign-file.md is out of date: run deploy/update-generated-docs.sh"
import difflib, sys
page, generated = open(sys.argv[1]).read(), open(sys.argv[2]).read()
lines = generated.splitlines()
begin, end = lines[0], lines[-1]
a, b = page.find(begin), page.find(end)
if a < 0 or b < a:
    sys.exit(f"no generated part in the page (line '{begin}' ... '{end}')")
committed = page[a:b + len(end)].splitlines()
if committed != lines:
    sys.stderr.writelines(l + "\n" for l in difflib.unified_diff(
        committed, lines, "docs/campaign-file.md", "fleetburn workloads --markdown", lineterm="", n=1))
    sys.exit(1)
PY
pass "docs/campaign-file.md holds what fleetburn workloads --markdown prints"

# Every workload the listing names has its own table with every one of its parameters.
"$FLEETBURN" workloads >"$WORK/list" || fail "fleetburn workloads exited $?"
names=$(awk 'NF && $1 !~ /`/ {print $1}' "$WORK/list")
[ "$(echo "$names" | wc -l)" -ge 9 ] || fail "fleetburn workloads lists too few: $(cat "$WORK/list")"
for w in $names; do
    grep -q "^### \`$w\` — " "$WORK/generated.md" || fail "no table for workload $w"
    "$FLEETBURN" workloads "$w" >"$WORK/w-$w" || fail "fleetburn workloads $w exited $?"
    head -1 "$WORK/w-$w" | grep -q "^$w: " || fail "workloads $w: $(head -1 "$WORK/w-$w")"
    # each parameter of the text view is a row of the table
    for p in $(sed -n 's/^  \([a-z_0-9]*\) (.*/\1/p' "$WORK/w-$w"); do
        awk -v w="$w" '/^### /{cur=$2} cur=="`" w "`"' "$WORK/generated.md" | grep -q "^| \`$p\` |" ||
            fail "parameter $w.$p is not in its table"
    done
    # test-only parameters stay out of the terminal view
    grep -q "^  inject_" "$WORK/w-$w" && fail "workloads $w shows a test-only parameter"
done
pass "every listed workload has a table with every parameter: $(echo $names)"

# A parameter the campaign parser accepts with its documented default.
grep -q '^| `passes` | integer 1 – 1000000 | `1` |' "$WORK/generated.md" || fail "memtest passes row changed"
cat >"$WORK/c.yaml" <<'Y'
name: doc-check
stages:
  - name: mem
    workload: memtest
    params: {passes: 1000001}
Y
set +e
"$FLEETBURN" run "$WORK/c.yaml" --local 1 --db "$WORK/db" >"$WORK/run.out" 2>&1
rc=$?
set -e
[ $rc -eq 2 ] || fail "passes above the documented bound: exit $rc, expected 2: $(cat "$WORK/run.out")"
grep -q "passes" "$WORK/run.out" || fail "the error does not name passes: $(cat "$WORK/run.out")"
pass "the documented bound is the one the parser enforces"

# Errors and pipes.
set +e
"$FLEETBURN" workloads nosuch >"$WORK/o" 2>"$WORK/e"; rc=$?
set -e
[ $rc -eq 2 ] && grep -q "no workload 'nosuch'; expected one of memtest" "$WORK/e" ||
    fail "unknown workload: exit $rc, $(cat "$WORK/e")"
"$FLEETBURN" workloads --markdown 2>"$WORK/pipe.err" | head -1 >/dev/null
[ -s "$WORK/pipe.err" ] && fail "a closed pipe printed: $(cat "$WORK/pipe.err")"
pass "unknown workload refused naming the known ones; a closed pipe is quiet"
