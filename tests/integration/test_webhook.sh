#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Webhook alerts, end to end: `fleetburn serve` with real agents and a real HTTP receiver on
# loopback (webhook_receiver.py).
#   1. A failing campaign (bit flips injected into n2's memtest, test-only) posts its alert; the
#      receiver refuses the first two posts with 503, and the third, after the campaign's waits
#      of 1s and 2s, is delivered. The body names the campaign, its verdict and the bad part; the
#      timeline has every attempt; the URL's secret path is in no log and no event.
#   2. A passing campaign whose webhook is `on: [bad]` posts nothing, and says so on its timeline;
#      a cancelled one with `on: [error]` posts its alert.
#   3. The queue survives kill -9 of `fleetburn serve` between two attempts: started again on the
#      same database, the coordinator makes the next attempt when it is due, and it is delivered.
#   4. A receiver answering 404 is not retried; a port nobody listens on is tried again on the
#      schedule, then given up.
#   5. A webhook to a host not in --webhook-allow is refused when the campaign is submitted.
#   6. https: the receiver's certificate is verified (a self-signed one is refused), against the
#      site's CA given with --webhook-ca (here through `run --local`, which posts to any host).
. "$(dirname "$0")/lib.sh"

RECEIVER="$FB_SRC/tests/integration/webhook_receiver.py"
SECRET=s3cr3t-token-in-the-path

# Starts a receiver NAME with the receiver's options; sets PORT. Posts go to $WORK/NAME.jsonl.
start_receiver() {
    local name=$1; shift
    python3 "$RECEIVER" --port-file "$WORK/$name.port" --record "$WORK/$name.jsonl" "$@" \
        >>"$WORK/receiver-$name.log" 2>&1 &
    PIDS+=("$!")
    for _ in $(seq 100); do [ -s "$WORK/$name.port" ] && break; sleep 0.05; done
    PORT=$(cat "$WORK/$name.port") || fail "receiver $name did not start"
    : >>"$WORK/$name.jsonl"
}

posts() { wc -l <"$WORK/$1.jsonl"; }

# Waits until receiver NAME has had N posts, up to $3 seconds.
wait_posts() {
    local name=$1 n=$2 limit=${3:-20} i=0
    while [ "$(posts "$name")" -lt "$n" ]; do
        i=$((i + 1))
        [ $i -gt $((limit * 10)) ] && fail "receiver $name had $(posts "$name") posts, expected $n"
        sleep 0.1
    done
}

# A campaign NAME on n1 and n2 whose webhook posts to the receiver on PORT with the extra lines
# given (on:, retry:, ...); WORKLOAD memtest fails on n2 (injected bit flips), sleep passes.
campaign() {
    local name=$1 workload=$2; shift 2
    {
        echo "name: $name"
        echo "nodes: n[1-2]"
        echo "actions:"
        echo "  webhook:"
        echo "    url: http://127.0.0.1:$PORT/hooks/$SECRET"
        for line in "$@"; do echo "    $line"; done
        echo "stages:"
        echo "  - name: dram"
        echo "    workload: $workload"
        if [ "$workload" = memtest ]; then
            echo "    params: {size: 8MiB, passes: 1, patterns: [own_address, random]}"
        else
            echo "    params: {duration: 200ms}"
        fi
    } >"$WORK/$name.yaml"
}

# Runs campaign NAME through the coordinator; RC is run's exit status.
run_campaign() {
    set +e
    "$FLEETBURN" run --coordinator "$ENDPOINT" "$WORK/$1.yaml" >"$WORK/$1.out" 2>"$WORK/$1.err"
    RC=$?
    set -e
}

# Python with the database as db and campaign NAME's id as cid, then the statements given.
db_check() {
    python3 - "$WORK/fb.db" "$1" <<PY || fail "$3"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
cid, = db.execute("select id from campaigns where name = ?", (sys.argv[2],)).fetchone()
events = [m for (m,) in db.execute(
    "select message from events where campaign_id = ? and kind = 'webhook' order by id", (cid,))]
$2
PY
}

# --- a build without libcurl refuses webhooks, saying why --------------------------------------
# The port is picked before the probe starts: a background subshell still running free_port
# when the probe is killed would run lib.sh's exit trap, which removes $WORK.
probe_port=$(free_port)
set +e
"$FLEETBURN" serve --bind "tcp://127.0.0.1:$probe_port" --db "$WORK/probe.db" --webhook-allow \
    127.0.0.1 >"$WORK/probe.log" 2>&1 &
probe=$!
PIDS+=("$probe")
sleep 0.5
kill -0 "$probe" 2>/dev/null
probe_alive=$?
set -e
if [ $probe_alive -ne 0 ]; then
    grep -q "built without libcurl" "$WORK/probe.log" || fail "serve --webhook-allow failed: $(cat "$WORK/probe.log")"
    start_coordinator
    PORT=9
    campaign nocurl sleep
    run_campaign nocurl
    [ $RC -eq 2 ] || fail "a webhook campaign on a coordinator without libcurl exited $RC, expected 2"
    grep -q "actions.webhook.url: this coordinator cannot post webhooks" "$WORK/nocurl.err" \
        || fail "refusal does not say why: $(cat "$WORK/nocurl.err")"
    echo "skip: this fleetburn was built without libcurl; a webhook campaign is refused, saying why"
    exit 77
fi
kill "$probe"

start_coordinator --webhook-allow 127.0.0.1
start_agent n1
start_agent n2 --allow-fault-injection --inject memtest.inject_bitflips=4
wait_registered n1 n2

# --- 1. refused twice, then delivered ----------------------------------------------------------
start_receiver refuse --answers 503,503
campaign bitflips memtest "on: [bad, error]" "retry: [1s, 2s]"
run_campaign bitflips
[ $RC -eq 1 ] || fail "the failing campaign exited $RC, expected 1: $(cat "$WORK/bitflips.err")"
wait_posts refuse 3 20
python3 - "$WORK/refuse.jsonl" "$SECRET" <<'PY' || fail "the posts to the refusing receiver are wrong"
import json, sys
posts = [json.loads(l) for l in open(sys.argv[1])]
assert [p["status"] for p in posts] == [503, 503, 200], [p["status"] for p in posts]
assert [p["headers"]["X-Fleetburn-Attempt"] for p in posts] == ["1", "2", "3"], posts
assert all(p["path"] == "/hooks/" + sys.argv[2] for p in posts)
assert all(p["headers"]["Content-Type"] == "application/json" for p in posts)
# the campaign's waits: 1s after the first refusal, 2s after the second
gaps = [b["time"] - a["time"] for a, b in zip(posts, posts[1:])]
assert 0.9 <= gaps[0] < 4 and 1.9 <= gaps[1] < 5, gaps
d = posts[-1]["body"]
assert d["format"] == "fleetburn-alert", d
assert all(p["body"] == d for p in posts), "the document changed between attempts"
assert d["campaign"]["name"] == "bitflips" and d["campaign"]["verdict"] == "fail", d["campaign"]
assert d["campaign"]["id"] == posts[-1]["headers"]["X-Fleetburn-Campaign"]
assert d["triggers"] == ["bad"], d["triggers"]
bad = [b["part"] for b in d["bad"]]
assert bad and all(p.startswith("n2") for p in bad), bad
assert "miscompare" in d["bad"][0]["evidence"], d["bad"][0]
assert "\n" not in d["bad"][0]["evidence"]
assert d["stages"][0]["verdict"] == "fail" and d["stages"][0]["tasks_failed"] == 1, d["stages"]
assert "n2" in d["text"] and "bitflips" in d["text"], d["text"]
assert d["regressions"] == [] and d["regressions_total"] == 0
PY
db_check bitflips '
assert events[0].startswith("webhook to http://127.0.0.1:") and events[0].endswith("queued: the campaign met bad"), events
assert events[1].endswith("attempt 1 of 3 failed: HTTP 503; next attempt in 1.0s"), events
assert events[2].endswith("attempt 2 of 3 failed: HTTP 503; next attempt in 2.0s"), events
assert events[3].endswith("delivered on attempt 3 (HTTP 200)"), events
(state, attempts), = db.execute("select state, attempts from webhook_deliveries where campaign_id = ?", (cid,))
assert (state, attempts) == ("delivered", 3), (state, attempts)
' "the timeline of the delivered alert is wrong"
if grep -q "$SECRET" "$WORK/coordinator.log"; then fail "the URL's secret path is in the coordinator's log"; fi
python3 - "$WORK/fb.db" "$SECRET" <<'PY' || fail "the URL's secret path is in an event"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
assert not db.execute("select count(*) from events where message like ?", ("%" + sys.argv[2] + "%",)).fetchone()[0]
PY
pass "a failing campaign's alert was refused twice (503) and delivered on attempt 3, after 1s and 2s"

# --- 2. a passing campaign with on: [bad] posts nothing --------------------------------------------
start_receiver quiet
campaign passing sleep "on: [bad]" "retry: [1s]"
run_campaign passing
[ $RC -eq 0 ] || fail "the passing campaign exited $RC: $(cat "$WORK/passing.err")"
db_check passing '
assert len(events) == 1 and "not sent: the campaign ended finished, verdict pass, which meets none of its triggers (on: bad)" in events[0], events
assert not db.execute("select count(*) from webhook_deliveries where campaign_id = ?", (cid,)).fetchone()[0]
' "a passing campaign with on: [bad] queued an alert"
sleep 1.5
[ "$(posts quiet)" -eq 0 ] || fail "a passing campaign with on: [bad] posted $(posts quiet) time(s)"
pass "a passing campaign with on: [bad] posted nothing, and its timeline says why"

# --- 2b. a cancelled campaign meets `error` ------------------------------------------------------
start_receiver cancel
campaign cancelled sleep "on: [error]"
sed -i "s/duration: 200ms/duration: 60s/" "$WORK/cancelled.yaml"
started=$(grep -c "started sleep" "$WORK/n1.log" || true)
"$FLEETBURN" run --coordinator "$ENDPOINT" "$WORK/cancelled.yaml" >/dev/null 2>"$WORK/cancelled.err" &
PIDS+=("$!")
wait_for_log "$WORK/cancelled.err" "submitted .* as "
cid=$(sed -n 's/^submitted .* as \([^ ]*\) to .*/\1/p' "$WORK/cancelled.err")
wait_for_lines "$WORK/n1.log" "started sleep" $((started + 1)) 10 "the campaign to cancel did not start"
"$FLEETBURN" cancel "$cid" --coordinator "$ENDPOINT" --reason "webhook test" >/dev/null
wait_posts cancel 1 20
python3 - "$WORK/cancel.jsonl" "$cid" <<'PY' || fail "the alert of a cancelled campaign is wrong"
import json, sys
p, = [json.loads(l) for l in open(sys.argv[1])]
d = p["body"]
assert p["status"] == 200 and d["campaign"]["id"] == sys.argv[2], p
assert d["triggers"] == ["error"] and d["campaign"]["state"] == "cancelled", (d["triggers"], d["campaign"])
assert d["bad"] == [], d["bad"]
PY
pass "a cancelled campaign with on: [error] posts its alert, state cancelled"

# --- 3. the queue survives kill -9 between attempts ---------------------------------------------
start_receiver restart --answers 503
campaign survivor memtest "retry: [4s]"
run_campaign survivor
[ $RC -eq 1 ] || fail "the failing campaign exited $RC, expected 1"
wait_for_log "$WORK/coordinator.log" "attempt 1 of 2 failed: HTTP 503; next attempt in 4.0s" 10
kill_hard "$COORD_PID"
[ "$(posts restart)" -eq 1 ] || fail "the receiver had $(posts restart) posts before the kill, expected 1"
mv "$WORK/coordinator.log" "$WORK/coordinator-killed.log"
serve_in_background "$WORK/coordinator.log" --webhook-allow 127.0.0.1
wait_for_log "$WORK/coordinator.log" "coordinator on"
grep -q "1 webhook alert(s) wait in the database" "$WORK/coordinator.log" \
    || fail "the restarted coordinator does not see the pending alert"
wait_for_log "$WORK/coordinator.log" "delivered on attempt 2 \(HTTP 200\)" 15
python3 - "$WORK/restart.jsonl" <<'PY' || fail "the posts around the restart are wrong"
import json, sys
posts = [json.loads(l) for l in open(sys.argv[1])]
assert [p["status"] for p in posts] == [503, 200], [p["status"] for p in posts]
assert [p["headers"]["X-Fleetburn-Attempt"] for p in posts] == ["1", "2"], posts
assert posts[1]["time"] - posts[0]["time"] >= 3.9, "attempt 2 came before it was due"
assert posts[0]["body"] == posts[1]["body"]
PY
db_check survivor '
assert events[-1].endswith("delivered on attempt 2 (HTTP 200)"), events
(state, attempts), = db.execute("select state, attempts from webhook_deliveries where campaign_id = ?", (cid,))
assert (state, attempts) == ("delivered", 2), (state, attempts)
' "the timeline after the restart is wrong"
wait_for_log "$WORK/coordinator.log" "agent n2 registered" 30
pass "an alert pending when serve was killed -9 was delivered by the next serve on the same database, when due"

# --- 4. a 4xx answer is not retried -------------------------------------------------------------
start_receiver gone --default 404
campaign refused memtest "retry: [1s, 1s]"
run_campaign refused
[ $RC -eq 1 ] || fail "the failing campaign exited $RC, expected 1"
wait_for_log "$WORK/coordinator.log" "failed on attempt 1: HTTP 404; not retried: the receiver refuses the request itself" 10
sleep 2.5 # longer than both retries would have taken
[ "$(posts gone)" -eq 1 ] || fail "a 404 was retried: $(posts gone) posts"
db_check refused '
(state, attempts, error), = db.execute("select state, attempts, last_error from webhook_deliveries where campaign_id = ?", (cid,))
assert (state, attempts, error) == ("failed", 1, "HTTP 404"), (state, attempts, error)
' "the refused delivery is not recorded as failed"
pass "a 404 answer is a permanent failure: one post, not retried, and the timeline says so"

# --- 4b. nobody listening: retried, then given up --------------------------------------------
PORT=$(free_port) # nothing listens there: every connection is refused
campaign unheard memtest "retry: [1s]"
run_campaign unheard
[ $RC -eq 1 ] || fail "the failing campaign exited $RC, expected 1"
wait_for_log "$WORK/coordinator.log" "attempt 1 of 2 failed: .*Couldn't connect to server; next attempt in 1.0s" 10
wait_for_log "$WORK/coordinator.log" "given up after 2 attempts: .*Couldn't connect to server" 10
db_check unheard '
(state, attempts), = db.execute("select state, attempts from webhook_deliveries where campaign_id = ?", (cid,))
assert (state, attempts) == ("failed", 2), (state, attempts)
' "the delivery nobody answered is not recorded as given up"
pass "a refused connection is retried on the schedule, then given up"

# --- 5. a host the coordinator does not allow ---------------------------------------------------
PORT=80
campaign elsewhere sleep
sed -i "s|http://127.0.0.1:80/|http://169.254.169.254/|" "$WORK/elsewhere.yaml"
run_campaign elsewhere
[ $RC -eq 2 ] || fail "a webhook to a host not allowed exited $RC, expected 2"
grep -q "elsewhere.yaml:5: actions.webhook.url: this coordinator may not post to 169.254.169.254 port 80" \
    "$WORK/elsewhere.err" || fail "the refusal does not name the host: $(cat "$WORK/elsewhere.err")"
grep -q -- "--webhook-allow" "$WORK/elsewhere.err" || fail "the refusal does not name --webhook-allow"
python3 - "$WORK/fb.db" <<'PY' || fail "a refused campaign was stored"
import sqlite3, sys
assert not sqlite3.connect(sys.argv[1]).execute("select count(*) from campaigns where name = 'elsewhere'").fetchone()[0]
PY
pass "a webhook to a host not in --webhook-allow is refused at submission (exit 2), naming the host"

# --- 6. https: the receiver's certificate is verified, against the site's CA with --webhook-ca --
command -v openssl >/dev/null || { echo "skip: no openssl to make a certificate"; exit 0; }
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=127.0.0.1" \
    -addext "subjectAltName=IP:127.0.0.1" -keyout "$WORK/tls.key" -out "$WORK/tls.crt" \
    >"$WORK/openssl.log" 2>&1 || fail "openssl could not make a certificate"
cat "$WORK/tls.key" "$WORK/tls.crt" >"$WORK/tls.pem"
start_receiver tls --tls-cert "$WORK/tls.pem"
campaign tls memtest "retry: []"
sed -i "s|url: http://|url: https://|; s|nodes: n\[1-2\]|nodes: all|" "$WORK/tls.yaml"
status_of rc "$FLEETBURN" run --local 2 --db "$WORK/local.db" --inject local-1:memtest.inject_bitflips=4 \
    "$WORK/tls.yaml" >"$WORK/tls-untrusted.out" 2>"$WORK/tls-untrusted.log"
[ $rc -eq 1 ] || fail "run --local exited $rc, expected 1"
[ "$(posts tls)" -eq 0 ] || fail "a post went to a receiver whose certificate no CA vouches for"
python3 - "$WORK/local.db" <<'PY' || fail "the untrusted certificate is not the reason the alert failed"
import sqlite3, sys
m = [m for (m,) in sqlite3.connect(sys.argv[1]).execute("select message from events where kind = 'webhook'")]
assert "given up after 1 attempt: SSL certificate problem" in m[-1], m
PY
status_of rc "$FLEETBURN" run --local 2 --db "$WORK/local.db" --inject local-1:memtest.inject_bitflips=4 \
    --webhook-ca "$WORK/tls.crt" "$WORK/tls.yaml" >"$WORK/tls-trusted.out" 2>"$WORK/tls-trusted.log"
[ $rc -eq 1 ] || fail "run --local --webhook-ca exited $rc, expected 1"
[ "$(posts tls)" -eq 1 ] || fail "the receiver trusted through --webhook-ca had $(posts tls) posts, expected 1"
json_q "$WORK/tls.jsonl" 'd["status"]' | grep -qx 200 || fail "the https post was not answered 200"
pass "https: a certificate no CA vouches for is refused; the site's CA given with --webhook-ca is used"
