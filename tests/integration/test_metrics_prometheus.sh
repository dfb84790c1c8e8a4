#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `fleetburn serve --http` scraped by a real Prometheus (Debian's prometheus; deploy/install-deps.sh
# installs it): a campaign in which local-1 fails memtest is in the database, two agents are
# connected and run a short campaign; /metrics passes `promtool check metrics`; Prometheus, given
# the bearer token through credentials_file, has the target up, and queries return the connected
# agents, local-1's failed last result (from the earlier campaign) and a1's passing one; every
# query of deploy/grafana/fleetburn.json names exported metrics and evaluates in Prometheus. The
# live view answers / and /campaigns/ID with the HTML report under a Content-Security-Policy,
# and reloads while the campaign runs. Exposure: a request without the token, with a wrong one,
# or with another method is refused; a path that is not a campaign id is 404; a non-loopback
# --http without a token, a token file others may read and a short token are usage errors.
. "$(dirname "$0")/lib.sh"

for p in prometheus promtool curl; do
    if ! command -v $p >/dev/null; then
        echo "SKIP: $p is not installed (deploy/install-deps.sh installs prometheus and curl)"
        exit 77
    fi
done
if ! "$FLEETBURN" serve --help 2>&1 | grep -q -- "--http ADDR"; then
    fail "serve --help does not document --http"
fi
# A build without libmicrohttpd must say so, not fail obscurely (CI checks that it has it).
"$FLEETBURN" serve --db "$WORK/probe.db" --http "127.0.0.1:0" --http-token-file /nonexistent \
    >"$WORK/probe.out" 2>&1 && fail "serve with a missing token file started"
if grep -q "built without libmicrohttpd" "$WORK/probe.out"; then
    echo "SKIP: this fleetburn was built without libmicrohttpd, and says so"
    exit 77
fi

# --- usage errors ---------------------------------------------------------------------------------
expect_usage() { # what-must-appear args...
    local what=$1; shift
    set +e
    "$FLEETBURN" serve --db "$WORK/u.db" --bind "tcp://127.0.0.1:$(free_port)" "$@" >"$WORK/u.out" 2>&1
    local rc=$?
    set -e
    [ $rc -eq 2 ] || fail "serve $* exited $rc, expected 2"
    grep -q -- "$what" "$WORK/u.out" || fail "serve $*: no '$what' in: $(cat "$WORK/u.out")"
}
expect_usage "--http-token-file" --http "0.0.0.0:$(free_port)"
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$WORK/token"
chmod 644 "$WORK/token"
expect_usage "chmod 600" --http "127.0.0.1:$(free_port)" --http-token-file "$WORK/token"
chmod 600 "$WORK/token"
printf 'short\n' >"$WORK/short"
chmod 600 "$WORK/short"
expect_usage "at least 16" --http "127.0.0.1:$(free_port)" --http-token-file "$WORK/short"
expect_usage "not HOST:PORT" --http "127.0.0.1"
expect_usage "needs --http" --http-token-file "$WORK/token"
pass "usage errors: non-loopback without a token, a readable or short token file, a bad address"

# --- a finished campaign with a failing node, then a coordinator serving it -----------------------
cat >"$WORK/campaign.yaml" <<'YAML'
name: metrics-demo
stages:
  - name: dram
    workload: memtest
    timeout: 2m
    params: {size: 16MiB, passes: 1}
YAML
set +e
"$FLEETBURN" run --local 2 --db "$WORK/fb.db" --inject local-1:memtest.inject_bitflips=2 \
    "$WORK/campaign.yaml" >"$WORK/run.out" 2>"$WORK/run.log"
rc=$?
set -e
[ $rc -eq 1 ] || fail "run exited $rc, expected 1"
campaign=$("$FLEETBURN" report --db "$WORK/fb.db" --format json | python3 -c 'import json,sys; print(json.load(sys.stdin)["campaign"]["id"])')

HTTP_PORT=$(free_port)
start_coordinator --http "127.0.0.1:$HTTP_PORT" --http-token-file "$WORK/token"
wait_for_log "$WORK/coordinator.log" "http: /metrics and the live view on http://127.0.0.1:$HTTP_PORT/"
start_agent a1
start_agent a2
TOKEN=$(cat "$WORK/token")
get() { curl -s -H "Authorization: Bearer $TOKEN" "$@"; }
# Polls /metrics every 0.1 s until a line matches PATTERN (grep -E); fails with WHAT after TRIES.
wait_metric() { # pattern tries what
    local i
    for i in $(seq 1 "$2"); do
        get "http://127.0.0.1:$HTTP_PORT/metrics" | grep -qE "$1" && return 0
        sleep 0.1
    done
    fail "$3"
}
wait_metric '^fleetburn_agents_connected 2$' 100 "fleetburn_agents_connected never reached 2"
get "http://127.0.0.1:$HTTP_PORT/metrics" >"$WORK/metrics.txt"
promtool check metrics <"$WORK/metrics.txt" >"$WORK/promtool.out" 2>&1 || fail "promtool check metrics: $(cat "$WORK/promtool.out")"
grep -q "^fleetburn_node_last_failed{node=\"local-1\"} 1$" "$WORK/metrics.txt" || fail "local-1's last result failed"
grep -q "^fleetburn_node_last_failed{node=\"local-0\"} 0$" "$WORK/metrics.txt" || fail "local-0's last result passed"
grep -q "^fleetburn_node_last_verdict{node=\"local-1\",campaign=\"$campaign\",stage=\"dram\",workload=\"memtest\",verdict=\"fail\"} 1$" \
    "$WORK/metrics.txt" || fail "local-1's last verdict"
grep -q "^fleetburn_tasks{campaign=\"$campaign\",stage=\"dram\",workload=\"memtest\",verdict=\"fail\"} 1$" \
    "$WORK/metrics.txt" || fail "tasks by verdict"
grep -q '^fleetburn_node_metric{node="local-1",workload="memtest",metric="miscompares",unit=""} 2$' \
    "$WORK/metrics.txt" || fail "local-1's miscompares"
! grep -q 'metric="allreduce\.[0-9]' "$WORK/metrics.txt" || fail "per-size metrics exported"
pass "/metrics passes promtool check metrics, with agents, tasks by verdict and local-1's failure"

# --- exposure: token, methods, paths ---------------------------------------------------------------
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
[ "$(code "http://127.0.0.1:$HTTP_PORT/metrics")" = 401 ] || fail "no token: not 401"
[ "$(code -H "Authorization: Bearer ${TOKEN}x" "http://127.0.0.1:$HTTP_PORT/metrics")" = 401 ] || fail "wrong token: not 401"
[ "$(code -H "Authorization: Bearer ${TOKEN:0:20}" "http://127.0.0.1:$HTTP_PORT/metrics")" = 401 ] || fail "a prefix of the token: not 401"
[ "$(code -X POST -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$HTTP_PORT/metrics")" = 405 ] || fail "POST: not 405"
[ "$(code -H "Authorization: Bearer $TOKEN" --path-as-is "http://127.0.0.1:$HTTP_PORT/campaigns/../../etc/passwd")" = 404 ] \
    || fail "a path that is not a campaign id: not 404"
[ "$(code -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$HTTP_PORT/campaigns/no-such-campaign")" = 404 ] \
    || fail "an unknown campaign: not 404"
get -D "$WORK/headers" "http://127.0.0.1:$HTTP_PORT/campaigns/$campaign" >"$WORK/live.html"
grep -qi "^Content-Security-Policy: default-src 'none'" "$WORK/headers" || fail "no CSP header"
grep -q 'id="diagnosis"' "$WORK/live.html" || fail "the live view has no diagnosis"
grep -q '<td class="part">local-1</td>' "$WORK/live.html" || fail "the live view does not name local-1"
get "http://127.0.0.1:$HTTP_PORT/" | grep -q "href=\"campaigns/$campaign\"" || fail "the index does not link the campaign"
pass "401 without or with a wrong token, 405 for POST, 404 off the routes; the live view names local-1"

# --- the live view of a running campaign ------------------------------------------------------------
cat >"$WORK/nap.yaml" <<'YAML'
name: live-nap
stages:
  - name: nap
    workload: sleep
    timeout: 1m
    params: {duration: 12s}
YAML
"$FLEETBURN" run --coordinator "$ENDPOINT" "$WORK/nap.yaml" >"$WORK/nap.out" 2>"$WORK/nap.log" &
NAP_PID=$!
PIDS+=($NAP_PID)
wait_metric '^fleetburn_campaigns_running 1$' 100 "fleetburn_campaigns_running never reached 1"
running=$(get "http://127.0.0.1:$HTTP_PORT/metrics" | sed -n 's/^fleetburn_campaign_info{campaign="\([^"]*\)",name="live-nap",state="running".*/\1/p')
[ -n "$running" ] || fail "the running campaign is not in fleetburn_campaign_info"
get "http://127.0.0.1:$HTTP_PORT/" | grep -q "href=\"campaigns/$running\"" || fail "the index does not list the running campaign"
# Telemetry of the running campaign (the sleep workload's progress; 10 s buckets, so the first one
# is stored within the 12 s the nap lasts).
wait_metric '^fleetburn_telemetry\{node="a1",device="",quantity="sleep.elapsed_ms",unit="ms"\} [0-9.e+]+$' 150 \
    "no telemetry gauge of a1 while the campaign runs"
get "http://127.0.0.1:$HTTP_PORT/campaigns/$running" >"$WORK/running.html"
grep -q 'id="campaign-verdict">running<' "$WORK/running.html" || fail "the live view does not say running"
grep -q 'http-equiv="refresh"' "$WORK/running.html" || fail "the live view of a running campaign does not reload"
wait $NAP_PID || fail "the nap campaign exited $?"
get "http://127.0.0.1:$HTTP_PORT/campaigns/$running" >"$WORK/ran.html"
! grep -q 'http-equiv="refresh"' "$WORK/ran.html" || fail "the view of a finished campaign still reloads"
pass "live view: a running campaign is listed, shown running and reloads, its telemetry is a gauge; once finished it stops"

# --- a real Prometheus scraping it -----------------------------------------------------------------
PROM_PORT=$(free_port)
cat >"$WORK/prometheus.yml" <<YAML
global: {scrape_interval: 1s, evaluation_interval: 1s}
scrape_configs:
  - job_name: fleetburn
    authorization: {type: Bearer, credentials_file: $WORK/token}
    static_configs: [{targets: ["127.0.0.1:$HTTP_PORT"]}]
YAML
promtool check config "$WORK/prometheus.yml" >/dev/null || fail "promtool check config"
prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/prom" \
    --web.listen-address="127.0.0.1:$PROM_PORT" >>"$WORK/prometheus.log" 2>&1 &
PIDS+=($!)
PROM="http://127.0.0.1:$PROM_PORT"
query() { curl -s "$PROM/api/v1/query" --data-urlencode "query=$1"; }
for i in $(seq 1 300); do
    query 'fleetburn_node_last_failed{node="local-1"}' 2>/dev/null | grep -q '"value":\[[0-9.]*,"1"\]' && break
    [ $i -eq 300 ] && fail "Prometheus never had local-1's failed task: $(curl -s "$PROM/api/v1/targets")"
    sleep 0.1
done
curl -s "$PROM/api/v1/targets" | python3 -c '
import json, sys
t = json.load(sys.stdin)["data"]["activeTargets"]
assert len(t) == 1 and t[0]["health"] == "up", t
' || fail "the target is not up"
query 'fleetburn_agents_connected' | grep -q '"value":\[[0-9.]*,"2"\]' || fail "agents connected in Prometheus"
query 'fleetburn_node_last_verdict{node="a1",workload="sleep",verdict="pass"}' | grep -q '"value":\[[0-9.]*,"1"\]' \
    || fail "a1's last verdict (the nap) in Prometheus"
query "sum(fleetburn_tasks{campaign=\"$running\",verdict=\"pass\"})" | grep -q '"value":\[[0-9.]*,"2"\]' \
    || fail "the latest campaign's passed tasks in Prometheus"
query 'fleetburn_store_up' | grep -q '"value":\[[0-9.]*,"1"\]' || fail "store up in Prometheus"
pass "Prometheus scrapes with the token: target up, agents, last verdicts, tasks by verdict, store health"

python3 "$FB_SRC/tests/integration/grafana_check.py" "$FB_SRC/deploy/grafana/fleetburn.json" \
    "$WORK/metrics.txt" "$PROM" || fail "deploy/grafana/fleetburn.json"
pass "the Grafana dashboard uses exported metrics only and every query evaluates"

# Stopping serve stops the listener with it.
kill -TERM "$COORD_PID"
wait "$COORD_PID" 2>/dev/null || true
[ "$(code "http://127.0.0.1:$HTTP_PORT/metrics")" = 000 ] || fail "the listener outlived serve"
pass "the listener stops with serve"
