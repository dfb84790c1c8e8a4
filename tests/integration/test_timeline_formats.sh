#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What an operator reads after a campaign, from the store: `fleetburn timeline` in text, json and
# trace (Chrome/Perfetto trace-event JSON, checked field by field), with --node; the workers'
# telemetry stored as typed samples; `report --format junit` (XML that parses, a failing task a
# <failure> carrying its finding) and `--format csv` (RFC 4180; quoting is tested in
# tests/unit/test_report_formats.c); `report --list`. A real run --local 2 with the sleep workload.
. "$(dirname "$0")/lib.sh"

cat >"$WORK/campaign.yaml" <<'YAML'
name: timeline-demo
nodes: all
stages:
  - name: nap
    workload: sleep
    params: {duration: 3s}
  - name: naughty
    workload: sleep
    params: {duration: 300ms, exit: fail}
YAML

rc=0
"$FLEETBURN" run --local 2 --db "$WORK/t.db" "$WORK/campaign.yaml" >"$WORK/run.out" 2>"$WORK/run.log" || rc=$?
[ $rc -eq 1 ] || fail "run exited $rc (expected 1: the second stage fails)"
id=$("$FLEETBURN" report --list --db "$WORK/t.db" --format json | python3 -c \
    'import json,sys; d=json.load(sys.stdin); assert len(d["campaigns"]) == 1; print(d["campaigns"][0]["id"])')
"$FLEETBURN" report --list --db "$WORK/t.db" >"$WORK/list.txt"
grep -E "^$id +timeline-demo +finished +fail" "$WORK/list.txt" >/dev/null || fail "report --list: $(cat "$WORK/list.txt")"
pass "report --list names the campaign, its state and verdict"

# --- text -------------------------------------------------------------------------------------
"$FLEETBURN" timeline --db "$WORK/t.db" >"$WORK/tl.txt"
grep -qE "local-0 +task $id/0/local-0 started" "$WORK/tl.txt" || fail "no task start line"
grep -qE "local-1 +task $id/1/local-1: fail" "$WORK/tl.txt" || fail "no failing task line"
grep -qE "local-0 +progress [0-9]+% sleeping" "$WORK/tl.txt" || fail "no progress event"
grep -qE "^  local-1 +sleep.elapsed_ms +[0-9]+ samples" "$WORK/tl.txt" || fail "no telemetry summary"
"$FLEETBURN" timeline "$id" --node local-1 --db "$WORK/t.db" >"$WORK/tl1.txt"
! grep -q "local-0" "$WORK/tl1.txt" || fail "--node local-1 shows local-0"
grep -q "local-1" "$WORK/tl1.txt" || fail "--node local-1 shows nothing of local-1"
pass "timeline text: tasks, progress, telemetry; --node filters"

# --- json -------------------------------------------------------------------------------------
"$FLEETBURN" timeline --db "$WORK/t.db" --format json >"$WORK/tl.json"
python3 - "$WORK/tl.json" "$id" <<'PY' || fail "timeline json"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["campaign"] == sys.argv[2]
assert len(d["tasks"]) == 4, d["tasks"]
assert sorted(t["verdict"] for t in d["tasks"]) == ["fail", "fail", "pass", "pass"]
series = {(s["node"], s["device"], s["quantity"]): s for s in d["telemetry"]}
for node in ("local-0", "local-1"):
    s = series[(node, "", "sleep.elapsed_ms")]
    assert s["unit"] == "ms"
    n = sum(b[2] for b in s["buckets"])
    assert n >= 10, n          # a sample per tenth of the 3 s nap, at least
    assert max(b[4] for b in s["buckets"]) >= 2000  # max of elapsed_ms late in the nap
    assert all(b[1] == 10000 for b in s["buckets"])  # 10 s buckets while fresh
assert any(e["kind"] == "progress" for e in d["events"])
PY
pass "timeline json: tasks, events and typed telemetry buckets"

# --- trace ------------------------------------------------------------------------------------
"$FLEETBURN" timeline --db "$WORK/t.db" --format trace >"$WORK/tl.trace.json"
python3 - "$WORK/tl.trace.json" <<'PY' || fail "trace JSON is not a valid trace"
import json, sys, numbers
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
assert isinstance(ev, list) and ev
for e in ev:
    assert e["ph"] in ("X", "C", "i", "M"), e
    assert isinstance(e["name"], str) and e["name"], e
    assert isinstance(e["pid"], int) and isinstance(e["tid"], int), e
    assert isinstance(e["ts"], numbers.Number) and e["ts"] >= 0, e
    if e["ph"] == "X":
        assert isinstance(e["dur"], numbers.Number) and e["dur"] >= 0, e
    if e["ph"] == "C":
        assert e["args"] and all(isinstance(v, numbers.Number) for v in e["args"].values()), e
    if e["ph"] == "i":
        assert e["s"] in ("t", "p", "g"), e
procs = {e["pid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
assert sorted(v for k, v in procs.items() if k) == ["local-0", "local-1"], procs
slices = [e for e in ev if e["ph"] == "X" and e["cat"] == "sleep"]
assert len(slices) == 4, slices
by = {(procs[e["pid"]], e["args"]["verdict"]) for e in slices}
assert by == {("local-0", "pass"), ("local-0", "fail"), ("local-1", "pass"), ("local-1", "fail")}, by
nap = [e for e in slices if e["args"]["verdict"] == "pass"]
assert all(2.5e6 <= e["dur"] <= 10e6 for e in nap), nap   # the 3 s nap, in microseconds
counters = [e for e in ev if e["ph"] == "C"]
assert {procs[e["pid"]] for e in counters} == {"local-0", "local-1"}, counters
PY
pass "timeline trace: slices per node and stage, counters, process names"

# --- junit ------------------------------------------------------------------------------------
"$FLEETBURN" report "$id" --db "$WORK/t.db" --format junit >"$WORK/junit.xml"
python3 - "$WORK/junit.xml" <<'PY' || fail "junit XML"
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == "testsuites"
assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("4", "2", "0"), root.attrib
suites = root.findall("testsuite")
assert [s.get("name") for s in suites] == ["nap", "naughty"], [s.get("name") for s in suites]
cases = root.findall("./testsuite/testcase")
assert len(cases) == 4
for c in suites[0].findall("testcase"):
    assert c.find("failure") is None and c.find("error") is None
for c in suites[1].findall("testcase"):
    f = c.find("failure")
    assert f is not None, ET.tostring(c)
    assert "sleep asked to fail" in f.text and "sleep asked to fail" in f.get("message"), f.text
    assert float(c.get("time")) >= 0.2
PY
pass "junit: a testcase per task, the failing ones <failure> with their finding"

# --- csv --------------------------------------------------------------------------------------
"$FLEETBURN" report "$id" --db "$WORK/t.db" --format csv >"$WORK/metrics.csv"
grep -q $'\r$' "$WORK/metrics.csv" || fail "csv lines do not end in CRLF"
python3 - "$WORK/metrics.csv" <<'PY' || fail "csv"
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline="")))
assert rows[0] == ["campaign", "stage", "workload", "task", "node", "verdict", "metric", "value", "unit"], rows[0]
body = rows[1:]
assert len(body) == 4, body
assert {r[1] for r in body} == {"nap", "naughty"}, body
nap = [r for r in body if r[1] == "nap"]
assert all(r[6] == "slept_ms" and float(r[7]) == 3000 and r[8] == "ms" for r in nap), nap
PY
pass "csv: one row per metric"

# --- errors -----------------------------------------------------------------------------------
rc=0; "$FLEETBURN" timeline nosuch --db "$WORK/t.db" 2>"$WORK/err" || rc=$?
[ $rc -eq 2 ] && grep -q "no campaign 'nosuch'" "$WORK/err" || fail "unknown campaign: exit $rc"
rc=0; "$FLEETBURN" timeline --format junit --db "$WORK/t.db" 2>"$WORK/err" || rc=$?
[ $rc -eq 2 ] && grep -q "'junit' is not one of text|json|trace" "$WORK/err" || fail "bad format: exit $rc"
"$FLEETBURN" timeline --db "$WORK/t.db" --format trace | head -c 10 >/dev/null || fail "timeline | head"
pass "unknown campaign and format refused with exit 2"
