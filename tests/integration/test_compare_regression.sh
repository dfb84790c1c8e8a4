#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Regressions against a baseline (docs/regressions.md), with real local agents running a netbw
# pair stage on loopback, round-robin over 4 nodes (6 pairs, 12 measured directions):
#   - a first `run --baseline latest` has nothing to compare and exits with its verdict (0);
#   - the same campaign again reports no regression (exit 0);
#   - one node sending 20% slower: the campaign passes, the comparison names that node's pairs,
#     and `run --baseline NAME` exits 1 (a PASS with a regression);
#   - the same node throttled to 10%: `compare` names exactly its three pairs and the node;
#   - every node 50% slower after a "driver upgrade" (the agents read a fixture tree whose NVIDIA
#     driver version changed): one fleet-wide regression with the driver change beside it;
#   - bad arguments and malformed regress: entries exit 2 with a message that names them;
#   - a webhook listening for `regression` (actions.webhook.on) gets nothing for the unchanged
#     run and, for the slower one, an alert naming the regressed pairs (the coordinator compares
#     with the previous campaign of the same name).
# Every node is paced (netbw's test-only inject_rate_mbit) at 200 Mbit/s, as the links of a real
# fleet have a rate: unpaced, what loopback measures on this 2-core machine is the CPU share the
# other processes leave, which moves the whole fleet by up to 30% between two runs (a fleet-wide
# shift, rightly reported; bench/results/compare-noise-unpaced-2026-11-24-*.txt).
. "$(dirname "$0")/lib.sh"

DB="$WORK/fb.db"
cat >"$WORK/net-base.yaml" <<'EOF'
name: net-regress
stages:
  - name: network
    workload: netbw
    timeout: 1m
    scope: pairs
    rounds: 3
    params: {duration: 1s, streams: 2, lat_iters: 200}
EOF
# The regressions here are of throughput. Loopback round trips are left out of the comparison:
# between unchanged runs under the sanitizers on a busy 2-core machine one pair's median moved
# from 33 to 128 us, beyond any tolerance an operator would want on a real network.
printf 'regress:\n  netbw.rtt_p50_us: off\n' | cat "$WORK/net-base.yaml" - >"$WORK/net.yaml"

# run_net LOG [NODE RATE] [fleetburn run options...]: every node paced at 200 Mbit/s, NODE at RATE.
run_net() {
    local log=$1 slow=${2:-} rate=${3:-}
    shift 3 || shift $#
    local inject=()
    for i in 0 1 2 3; do
        local r=200
        [ "local-$i" = "$slow" ] && r=$rate
        inject+=(--inject "local-$i:netbw.inject_rate_mbit=$r")
    done
    set +e
    "$FLEETBURN" run --local 4 --db "$DB" "${inject[@]}" "$@" "${NET_YAML:-$WORK/net.yaml}" \
        >"$WORK/$log.out" 2>"$WORK/$log.log"
    RC=$?
    set -e
}
sql() { python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchone()[0])' "$DB" "$1"; }
latest_id() { sql "SELECT id FROM campaigns ORDER BY started_ms DESC LIMIT 1"; }
expect_rc() { [ "$RC" = "$1" ] || { cat "$WORK/$2.out" "$WORK/$2.log" >&2; fail "$3: exit $RC, expected $1"; }; }
out_has() { grep -qF -- "$2" "$WORK/$1.out" || { cat "$WORK/$1.out" >&2; fail "$1: no '$2'"; }; }
err_has() { grep -qF -- "$2" "$WORK/$1.log" || { cat "$WORK/$1.log" >&2; fail "$1: no '$2' on stderr"; }; }

# --- a first run: nothing to compare with ---
run_net first "" "" --baseline latest
expect_rc 0 first "first run"
err_has first "is new; nothing to compare with this time"
FIRST=$(latest_id)
pass "first run --baseline latest: nothing to compare, exit 0"

# --- the same campaign again: no regression, and no alert for a webhook listening for one ---
python3 "$FB_SRC/tests/integration/webhook_receiver.py" --port-file "$WORK/hook.port" \
    --record "$WORK/hook.jsonl" >>"$WORK/receiver.log" 2>&1 &
PIDS+=("$!")
for _ in $(seq 100); do [ -s "$WORK/hook.port" ] && break; sleep 0.05; done
[ -s "$WORK/hook.port" ] || fail "the webhook receiver did not start"
: >>"$WORK/hook.jsonl"
{ cat "$WORK/net.yaml"; printf 'actions:\n  webhook: {url: "http://127.0.0.1:%s/hook", on: [regression]}\n' \
    "$(cat "$WORK/hook.port")"; } >"$WORK/net-hook.yaml"
NET_YAML="$WORK/net-hook.yaml" run_net same "" "" --baseline latest
expect_rc 0 same "unchanged run"
SAME=$(latest_id)
out_has same "comparison with the baseline (latest = $FIRST)"
out_has same "summary: no regression: 0 regression(s) of parts, 0 fleet-wide"
set +e
"$FLEETBURN" compare "$FIRST" "$SAME" --db "$DB" --format json >"$WORK/same.json"
RC=$?
set -e
[ $RC = 0 ] || fail "compare of two unchanged runs: exit $RC"
json_q "$WORK/same.json" "d['verdict']" | grep -qx "no regression" || fail "unchanged: $(cat "$WORK/same.json")"
[ "$(json_q "$WORK/same.json" "d['counts']['parts']")" = 6 ] || fail "unchanged: not 6 pairs compared"
[ "$(wc -l <"$WORK/hook.jsonl")" = 0 ] || fail "unchanged run: the webhook got $(cat "$WORK/hook.jsonl")"
[ "$(sql "SELECT COUNT(*) FROM events WHERE campaign_id = '$SAME' AND kind = 'webhook' AND message LIKE '%not sent%meets none of its triggers (on: regression)'")" = 1 ] ||
    fail "unchanged run: no 'not sent' webhook event on its timeline"
pass "unchanged run: no regression, exit 0 ($(json_q "$WORK/same.json" "d['counts']['values']") values compared), no alert"

# --- a named baseline, and one node 20% slower: the campaign passes, the comparison does not ---
"$FLEETBURN" baseline set good "$SAME" --db "$DB" >"$WORK/set.out" || fail "baseline set"
grep -qx "baseline good: campaign $SAME" "$WORK/set.out" || fail "baseline set: $(cat "$WORK/set.out")"
"$FLEETBURN" baseline list --db "$DB" | grep -qE "^good +$SAME +net-regress" || fail "baseline list"
NET_YAML="$WORK/net-hook.yaml" run_net slower local-1 160 --baseline good
expect_rc 1 slower "PASS with a regression"
[ "$(wc -l <"$WORK/hook.jsonl")" = 1 ] || fail "slower run: $(wc -l <"$WORK/hook.jsonl") alerts, expected 1"
python3 - "$WORK/hook.jsonl" <<'PY' || fail "slower run's alert: $(cat "$WORK/hook.jsonl")"
import json, sys
post = json.loads(open(sys.argv[1]).readline())
d = post["body"] if "body" in post else post
d = json.loads(d) if isinstance(d, str) else d
assert d["triggers"] == ["regression"], d["triggers"]
assert d["campaign"]["verdict"] == "pass", d["campaign"]
parts = {r["part"] for r in d["regressions"]}
assert parts == {"local-0,local-1", "local-1,local-2", "local-1,local-3"}, parts
assert all(r["change"] < 0 for r in d["regressions"]), d["regressions"]
PY
out_has slower "verdict   PASS"
out_has slower "comparison with the baseline (good = $SAME)"
out_has slower "summary: REGRESSION"
out_has slower "local-1 is in 3 of the 3 regressed parts of stage network"
regressed=$(sed -n '/^REGRESSIONS:/,/^$/p' "$WORK/slower.out" | awk '$1 == "network" {print $2}' | sort -u | tr '\n' ' ')
[ "$regressed" = "local-0,local-1 local-1,local-2 local-1,local-3 " ] ||
    fail "20% slower: regressed parts '$regressed'"
pass "local-1 20% slower: campaign PASS, its 3 pairs regressed, run --baseline good exits 1"

# --- throttled to 10%: compare names exactly its pairs ---
run_net throttled local-1 20
expect_rc 1 throttled "throttled run (local-1 is slow: the pair stage fails)"
THROTTLED=$(latest_id)
set +e
"$FLEETBURN" compare good "$THROTTLED" --db "$DB" --format json >"$WORK/throttled.json"
RC=$?
set -e
[ $RC = 1 ] || fail "compare with a throttled node: exit $RC"
python3 - "$WORK/throttled.json" <<'PY' || fail "throttled: $(cat "$WORK/throttled.json")"
import json, sys
d = json.load(open(sys.argv[1]))
regs = d["regressions"]
assert d["verdict"] == "regression"
assert {r["part"] for r in regs} == {"local-0,local-1", "local-1,local-2", "local-1,local-3"}, regs
assert not any(r["fleet_wide"] for r in regs), regs
tx = [r for r in regs if r["metric"] == "netbw.tx_gbps@local-1"]
assert len(tx) == 3 and all(r["change"] < -0.8 and r["judged_by"] == "fleet" for r in tx), tx
assert all(abs(r["fleet_change"]) < 0.05 and r["fleet_values"] == 12 for r in tx), tx
assert all(r["metric"].startswith(("netbw.tx_gbps@local-1", "netbw.rx_gbps@")) for r in regs), regs
assert [s["node"] for s in d["suspects"]] == ["local-1"], d["suspects"]
assert d["improvements"] == [], d["improvements"]
PY
pass "local-1 throttled to 10%: compare names its 3 pairs and local-1, exit 1"

# --- a driver upgrade that slows every node: one fleet-wide regression, the change beside it ---
ROOT="$WORK/root"
cp -a "$FB_SRC/tests/fixtures/sysfs/gpu-node" "$ROOT"
export FLEETBURN_SYSFS_ROOT="$ROOT"
run_net before-upgrade "" ""
expect_rc 0 before-upgrade "before the upgrade"
BEFORE=$(latest_id)
sed -i 's/580\.65\.06/580.95.05/' "$ROOT/proc/driver/nvidia/version"
set +e
"$FLEETBURN" run --local 4 --db "$DB" --baseline "$BEFORE" \
    --inject local-0:netbw.inject_rate_mbit=100 --inject local-1:netbw.inject_rate_mbit=100 \
    --inject local-2:netbw.inject_rate_mbit=100 --inject local-3:netbw.inject_rate_mbit=100 \
    "$WORK/net.yaml" >"$WORK/upgrade.out" 2>"$WORK/upgrade.log"
RC=$?
set -e
unset FLEETBURN_SYSFS_ROOT
expect_rc 1 upgrade "after the upgrade"
out_has upgrade "FLEET-WIDE SHIFTS:"
grep -qE "stage network: netbw.tx_gbps -(49|50)\.[0-9]% \(median" "$WORK/upgrade.out" ||
    fail "upgrade: no fleet-wide tx shift of -50%: $(cat "$WORK/upgrade.out")"
out_has upgrade "since the base: nvidia_driver 580.65.06 -> 580.95.05 on local-[0-3]"
out_has upgrade "REGRESSIONS: 0 "
UPGRADED=$(latest_id)
"$FLEETBURN" compare "$BEFORE" "$UPGRADED" --db "$DB" --format json >"$WORK/upgrade.json" || true
python3 - "$WORK/upgrade.json" <<'PY' || fail "upgrade: $(cat "$WORK/upgrade.json")"
import json, sys
d = json.load(open(sys.argv[1]))
fleet = d["regressions"]
assert all(r["part"] == "fleet" and r["fleet_wide"] for r in fleet), fleet
assert {"netbw.tx_gbps", "netbw.rx_gbps"} <= {r["metric"] for r in fleet}, fleet
assert all(r["values_beyond_tolerance"] == 12 for r in fleet if r["metric"].endswith("_gbps")), fleet
want = [{"component": "nvidia_driver", "base": "580.65.06", "now": "580.95.05", "nodes": "local-[0-3]"}]
assert all(r["fingerprint_changes"] == want for r in fleet), fleet
assert d["fingerprint_changes"] == want, d["fingerprint_changes"]
PY
pass "every node 50% slower after a driver change: one fleet-wide regression per metric, the driver change beside it"

# --- run --coordinator --baseline: the client compares in the coordinator's database ---
start_coordinator
for i in 0 1 2 3; do
    start_agent "local-$i" --allow-fault-injection --inject netbw.inject_rate_mbit=200
done
for i in $(seq 100); do
    [ "$(sql "SELECT COUNT(*) FROM agents WHERE state = 'alive' AND last_seen_ms > $(date +%s)000 - 60000")" -ge 4 ] && break
    sleep 0.1
done
set +e
(cd "$WORK" && "$FLEETBURN" run --coordinator "$ENDPOINT" --baseline good "$WORK/net.yaml") \
    >"$WORK/remote-nodb.out" 2>"$WORK/remote-nodb.log"
RC=$?
set -e
expect_rc 2 remote-nodb "run --coordinator --baseline without the database"
err_has remote-nodb "--baseline with --coordinator compares in the coordinator's database: give its path with --db"
set +e
"$FLEETBURN" run --coordinator "$ENDPOINT" --db "$DB" --baseline good "$WORK/net.yaml" \
    >"$WORK/remote.out" 2>"$WORK/remote.log"
RC=$?
set -e
expect_rc 0 remote "run --coordinator --baseline good, nothing changed"
out_has remote "comparison with the baseline (good = $SAME)"
out_has remote "summary: no regression"
pass "run --coordinator --db --baseline: compared in the coordinator's database, exit 0"

# --- bad arguments and regress: entries: exit 2, naming what is wrong ---
bad() { # bad NAME EXPECTED-TEXT fleetburn-args...
    local name=$1 want=$2
    shift 2
    set +e
    "$FLEETBURN" "$@" >"$WORK/$name.out" 2>"$WORK/$name.log"
    RC=$?
    set -e
    [ $RC = 2 ] || { cat "$WORK/$name.log" >&2; fail "$name: exit $RC, expected 2"; }
    err_has "$name" "$want"
}
before=$(sql "SELECT COUNT(*) FROM campaigns")
bad unknown-id "'20261124-000000-beef' is neither a campaign id nor a baseline name in $DB" \
    compare 20261124-000000-beef "$SAME" --db "$DB"
bad unknown-campaign "no campaign 'nope' in $DB" compare good nope --db "$DB"
bad unknown-name "--baseline: 'no-such-baseline' is neither a campaign id nor a baseline name" \
    run --local 4 --db "$DB" --baseline no-such-baseline "$WORK/net.yaml"
bad set-latest "'latest' is not a baseline name" baseline set latest "$SAME" --db "$DB"
bad set-unknown "no campaign 'nope'" baseline set other nope --db "$DB"
bad set-id "is a campaign id; a baseline name must be another word" baseline set "$SAME" "$SAME" --db "$DB"
bad delete-unknown "no baseline 'other'" baseline delete other --db "$DB"
bad no-args "expected BASE [CAMPAIGN]" compare --db "$DB"
bad bad-sub "expected \`baseline set NAME CAMPAIGN_ID\`" baseline show --db "$DB"
printf 'regress:\n  "[abc": 5%%\n' | cat "$WORK/net-base.yaml" - >"$WORK/glob.yaml"
bad bad-glob "glob.yaml:10: regress.[abc: the metric glob '[abc' has a bracket expression that is not closed" \
    run --local 4 --db "$DB" "$WORK/glob.yaml"
printf 'regress:\n  netbw.tx_gbps: 5\n' | cat "$WORK/net-base.yaml" - >"$WORK/pct.yaml"
bad bad-percent "pct.yaml:10: regress.netbw.tx_gbps: '5' is not a tolerance; expected a tolerance from 0% to 1000% such as 5%" \
    run --local 4 --db "$DB" "$WORK/pct.yaml"
[ "$(sql "SELECT COUNT(*) FROM campaigns")" = "$before" ] || fail "a refused run started a campaign"
"$FLEETBURN" baseline delete good --db "$DB" || fail "baseline delete"
"$FLEETBURN" baseline list --db "$DB" | grep -q "^good " && fail "baseline good still listed"
pass "unknown ids and names, malformed globs and tolerances: exit 2 with the reason; nothing ran"
