#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# allreduce, launcher mpirun, host path, on one node: `fleetburn run --local 1` runs the real
# mpirun with two fleetburn-mpirank ranks on localhost; the task passes with busbw metrics for
# every size. A group of two local agents (scope: group) passes as one task. A corrupted element
# (test-only inject_corrupt, which needs the agent's switch) fails the task with a finding naming
# rank 0's node; without the switch it is refused. launcher native on a node without GPUs is
# skipped with the reason, a missing mpirun is a clear error, and an mpirun that never starts a
# rank is stopped. Which mpirun runs, and whether as root, are site settings: the local agents
# get them from an agent configuration file (run --agent-config), and as root mpirun is not run
# without mpirun_allow_run_as_root = yes.
. "$(dirname "$0")/lib.sh"

if [ ! -x "$FB_BIN/bin/fleetburn-mpirank" ]; then
    # Built without MPI: the workload must say so instead of failing obscurely.
    cat >"$WORK/nompi.yaml" <<'YAML'
name: allreduce-nompi
stages:
  - name: ar
    workload: allreduce
    params: {max_size: 4KiB}
YAML
    set +e
    "$FLEETBURN" run --local 1 --db "$WORK/n.db" "$WORK/nompi.yaml" >"$WORK/n.out" 2>"$WORK/n.log"
    set -e
    "$FLEETBURN" report --db "$WORK/n.db" --format json >"$WORK/n.json"
    json_q "$WORK/n.json" 'd["stages"][0]["tasks"][0]["error"]' | grep -q "without MPI" \
        || fail "no 'built without MPI' error"
    pass "built without MPI: the task says so"
    exit 0
fi
command -v mpirun >/dev/null || { echo "skip: mpirun is not installed"; exit 77; }

# The local agents' site configuration (fleetburn-agent --config): as root, mpirun may start the
# ranks as root only because this file says so.
site_config() { # FILE [extra lines]
    local file=$1; shift
    { [ "$(id -u)" -ne 0 ] || echo "mpirun_allow_run_as_root = yes"; printf '%s\n' "$@"; } >"$file"
    chmod 600 "$file"
}
site_config "$WORK/agent.conf"

cat >"$WORK/campaign.yaml" <<'YAML'
name: allreduce-host
stages:
  - name: ar
    workload: allreduce
    timeout: 3m
    params: {launcher: mpirun, ranks_per_node: 2, min_size: 16, max_size: 1MiB, factor: 4,
             iters: 5, warmup: 1}
YAML

"$FLEETBURN" run --local 1 --agent-config "$WORK/agent.conf" --db "$WORK/t.db" "$WORK/campaign.yaml" \
    >"$WORK/run.out" 2>"$WORK/run.log" || fail "run exited $? (expected 0)"
"$FLEETBURN" report --db "$WORK/t.db" --format json >"$WORK/report.json"
task='d["stages"][0]["tasks"][0]'
[ "$(json_q "$WORK/report.json" "$task[\"verdict\"]")" = pass ] || fail "verdict not pass"
[ "$(json_q "$WORK/report.json" "int($task[\"metrics\"][\"allreduce.ranks\"])")" = 2 ] \
    || fail "expected 2 ranks"
for m in allreduce.busbw_gbs allreduce.peak_busbw_gbs allreduce.lat_us allreduce.1048576.busbw_gbs \
    allreduce.16.avg_us allreduce.4096.algbw_gbs; do
    [ "$(json_q "$WORK/report.json" "$task[\"metrics\"][\"$m\"] > 0")" = True ] || fail "metric $m"
done
busbw=$(json_q "$WORK/report.json" "round($task[\"metrics\"][\"allreduce.busbw_gbs\"], 3)")
lat=$(json_q "$WORK/report.json" "round($task[\"metrics\"][\"allreduce.lat_us\"], 2)")
pass "2 host ranks through mpirun: busbw $busbw GB/s at 1 MiB, $lat us at 16 B"

# A group of two agents on loopback (scope: group): one task on both nodes, one rank each, the
# slots and the verdict through the coordinator's exchange.
cat >"$WORK/group.yaml" <<'YAML'
name: allreduce-group
stages:
  - name: ar
    workload: allreduce
    scope: group
    timeout: 3m
    params: {min_size: 16, max_size: 64KiB, factor: 16, iters: 3, warmup: 1}
YAML
"$FLEETBURN" run --local 2 --agent-config "$WORK/agent.conf" --db "$WORK/g.db" "$WORK/group.yaml" \
    >"$WORK/group.out" 2>"$WORK/group.log" || fail "group run exited $?"
"$FLEETBURN" report --db "$WORK/g.db" --format json >"$WORK/group.json"
python3 - "$WORK/group.json" <<'PY' || fail "group of two on loopback"
import json, sys
t = json.load(open(sys.argv[1]))["stages"][0]["tasks"]
assert len(t) == 1 and sorted(t[0]["nodes"]) == ["local-0", "local-1"], [x["nodes"] for x in t]
t = t[0]
assert t["verdict"] == "pass" and all(r["verdict"] == "pass" for r in t["results"]), t
assert [r["metrics"].get("allreduce.ranks") for r in t["results"]].count(2) == 1, t["results"]
PY
pass "scope: group of two agents on loopback: one task, two ranks, both members pass"

# An injected wrong element fails the task and names rank 0's node.
status_of rc "$FLEETBURN" run --local 1 --agent-config "$WORK/agent.conf" --db "$WORK/i.db" \
    --inject local-0:allreduce.inject_corrupt=true "$WORK/campaign.yaml" >"$WORK/inject.out" \
    2>"$WORK/inject.log"
[ $rc -eq 1 ] || fail "injected run exited $rc, expected 1"
"$FLEETBURN" report --db "$WORK/i.db" --format json >"$WORK/inject.json"
[ "$(json_q "$WORK/inject.json" "$task[\"verdict\"]")" = fail ] || fail "injected verdict not fail"
[ "$(json_q "$WORK/inject.json" "[f[\"part\"] for f in $task[\"findings\"]]")" = "['local-0']" ] \
    || fail "findings: $(json_q "$WORK/inject.json" "$task[\"findings\"]")"
json_q "$WORK/inject.json" "$task[\"findings\"][0][\"what\"]" | grep -q "rank 0 (local-0)" \
    || fail "finding does not name rank 0"
[ "$(json_q "$WORK/inject.json" "int($task[\"metrics\"][\"allreduce.errors\"])")" = 1 ] \
    || fail "expected exactly 1 wrong element"
pass "inject_corrupt: fail, finding names rank 0 (local-0)"

# Without the agent's switch the parameter is refused.
cat >"$WORK/refused.yaml" <<'YAML'
name: allreduce-refused
stages:
  - name: ar
    workload: allreduce
    params: {max_size: 4KiB, inject_corrupt: true}
YAML
set +e
"$FLEETBURN" run --local 1 --db "$WORK/r.db" "$WORK/refused.yaml" >"$WORK/r.out" 2>"$WORK/r.log"
set -e
"$FLEETBURN" report --db "$WORK/r.db" --format json >"$WORK/r.json"
[ "$(json_q "$WORK/r.json" "$task[\"verdict\"]")" = error ] || fail "refusal verdict"
json_q "$WORK/r.json" "$task[\"error\"]" | grep -q -- "--allow-fault-injection" \
    || fail "refusal does not name the switch"
pass "inject_corrupt without --allow-fault-injection is refused"

# launcher native needs GPUs; a missing mpirun (the site's setting) is named.
cat >"$WORK/other.yaml" <<'YAML'
name: allreduce-other
stages:
  - name: native
    workload: allreduce
    params: {launcher: native, max_size: 4KiB}
  - name: nompirun
    workload: allreduce
    params: {max_size: 4KiB}
YAML
site_config "$WORK/nompirun.conf" "mpirun = /nonexistent/mpirun"
set +e
"$FLEETBURN" run --local 1 --agent-config "$WORK/nompirun.conf" --db "$WORK/o.db" "$WORK/other.yaml" \
    >"$WORK/o.out" 2>"$WORK/o.log"
set -e
"$FLEETBURN" report --db "$WORK/o.db" --format json >"$WORK/o.json"
[ "$(json_q "$WORK/o.json" 'd["stages"][0]["tasks"][0]["verdict"]')" = skipped ] \
    || fail "native on a CPU node: $(json_q "$WORK/o.json" 'd["stages"][0]["tasks"][0]')"
json_q "$WORK/o.json" 'd["stages"][0]["tasks"][0]["error"]' | grep -q "needs GPUs" \
    || fail "native skip reason"
[ "$(json_q "$WORK/o.json" 'd["stages"][1]["tasks"][0]["verdict"]')" = error ] || fail "no mpirun verdict"
json_q "$WORK/o.json" 'd["stages"][1]["tasks"][0]["error"]' | grep -q "/nonexistent/mpirun" \
    || fail "missing mpirun not named: $(json_q "$WORK/o.json" 'd["stages"][1]["tasks"][0]["error"]')"
pass "launcher native skipped without GPUs; a missing mpirun is named"

# The campaign cannot choose the program any more: mpirun is refused at parse time, naming the
# parameter and where the setting lives now.
printf 'name: x\nstages:\n  - name: ar\n    workload: allreduce\n    params: {mpirun: /tmp/evil}\n' \
    >"$WORK/evil.yaml"
status_of rc "$FLEETBURN" run --local 1 --db "$WORK/e.db" "$WORK/evil.yaml" >"$WORK/evil.out" 2>&1
[ $rc -eq 2 ] || fail "a campaign with mpirun: exited $rc, expected 2"
grep -q "evil.yaml:5: stages\[0\].params.mpirun: not a campaign parameter any more: the mpirun program is a site setting (mpirun = ... in /etc/fleetburn/agent.conf)" \
    "$WORK/evil.out" || fail "mpirun refusal: $(cat "$WORK/evil.out")"
pass "a campaign's mpirun: is refused (exit 2): $(head -1 "$WORK/evil.out")"

# As root, without the site's consent, mpirun is not run.
if [ "$(id -u)" -eq 0 ]; then
    : >"$WORK/empty.conf"
    chmod 600 "$WORK/empty.conf"
    set +e
    "$FLEETBURN" run --local 1 --agent-config "$WORK/empty.conf" --db "$WORK/root.db" \
        "$WORK/campaign.yaml" >"$WORK/root.out" 2>"$WORK/root.log"
    set -e
    "$FLEETBURN" report --db "$WORK/root.db" --format json >"$WORK/root.json"
    [ "$(json_q "$WORK/root.json" "$task[\"verdict\"]")" = error ] || fail "root without consent"
    json_q "$WORK/root.json" "$task[\"error\"]" | grep -q "mpirun_allow_run_as_root = yes" \
        || fail "root refusal: $(json_q "$WORK/root.json" "$task[\"error\"]")"
    pass "as root, mpirun runs only with mpirun_allow_run_as_root = yes in the site configuration"
fi

# mpirun that never starts a rank (a daemon that died without a word) is stopped, not waited for
# until the stage deadline.
printf '#!/bin/sh\nexec sleep 617.25\n' >"$WORK/silent-mpirun"
chmod +x "$WORK/silent-mpirun"
cat >"$WORK/silent.yaml" <<YAML
name: allreduce-silent
stages:
  - name: ar
    workload: allreduce
    timeout: 2m
    params: {max_size: 4KiB}
YAML
site_config "$WORK/silent.conf" "mpirun = $WORK/silent-mpirun"
t0=$SECONDS
set +e
FLEETBURN_AR_START_TIMEOUT_MS=2000 "$FLEETBURN" run --local 1 --agent-config "$WORK/silent.conf" \
    --db "$WORK/s.db" "$WORK/silent.yaml" >"$WORK/s.out" 2>"$WORK/s.log"
set -e
[ $((SECONDS - t0)) -lt 60 ] || fail "a silent mpirun was waited for $((SECONDS - t0)) s"
"$FLEETBURN" report --db "$WORK/s.db" --format json >"$WORK/s.json"
[ "$(json_q "$WORK/s.json" "$task[\"verdict\"]")" = error ] || fail "silent mpirun verdict"
json_q "$WORK/s.json" "$task[\"error\"]" | grep -q "no rank started within 2 s" \
    || fail "silent mpirun error: $(json_q "$WORK/s.json" "$task[\"error\"]")"
! pgrep -f "sleep 617.25" >/dev/null || fail "the silent mpirun was left running"
pass "an mpirun that starts no rank is stopped after the start timeout"
