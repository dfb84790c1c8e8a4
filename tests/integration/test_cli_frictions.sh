#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The small frictions a new user meets, each fixed and held:
#  1. run --local --inject with a misspelt key, an unknown node or workload, or a bad value exits
#     2 before any agent starts (it used to run, inject nothing and report PASS); a good one still
#     injects (the bit flips are found);
#  2. a workload in a scope it cannot run in (netbw with scope: node) is refused when the campaign
#     loads, naming the stage, the workload and its scopes; nothing is run or recorded;
#  3. `fleetburn report | head` ends quietly with status 0 when the reader goes (it printed an
#     I/O error and exited 3);
#  4. --coordinator HOST:PORT (and --bind HOST:PORT, coordinator = HOST:PORT in the agent's
#     configuration) means tcp://HOST:PORT; a malformed one says what is expected.
. "$(dirname "$0")/lib.sh"

expect_exit() { # expected-status logfile cmd...
    local want=$1 log=$2; shift 2
    set +e; "$@" >"$log" 2>&1; local rc=$?; set -e
    [ $rc -eq "$want" ] || fail "'$*' exited $rc, expected $want: $(cat "$log")"
}

cat >"$WORK/mem.yaml" <<'YAML'
name: inject
stages:
  - name: dram
    workload: memtest
    params: {size: 8MiB, passes: 1}
YAML

# 1. --inject
expect_exit 2 "$WORK/i1" "$FLEETBURN" run --local 2 --db "$WORK/t.db" \
    --inject local-1:memtest.inject_bitflip=4 "$WORK/mem.yaml"
grep -q "memtest has no parameter 'inject_bitflip'; expected one of .*inject_bitflips" "$WORK/i1" ||
    fail "misspelt key: $(cat "$WORK/i1")"
expect_exit 2 "$WORK/i2" "$FLEETBURN" run --local 2 --db "$WORK/t.db" \
    --inject local-7:memtest.inject_bitflips=4 "$WORK/mem.yaml"
grep -q "'local-7' is not one of the local agents; expected local-0 to local-1 (--local 2)" "$WORK/i2" ||
    fail "unknown node: $(cat "$WORK/i2")"
expect_exit 2 "$WORK/i3" "$FLEETBURN" run --local 2 --db "$WORK/t.db" \
    --inject local-1:netbw.inject_rate_mbit=200 "$WORK/mem.yaml"
grep -q "no stage of the campaign runs netbw" "$WORK/i3" || fail "workload not run: $(cat "$WORK/i3")"
expect_exit 2 "$WORK/i4" "$FLEETBURN" run --local 2 --db "$WORK/t.db" \
    --inject local-1:memtest.inject_bitflips=many "$WORK/mem.yaml"
grep -q "memtest.inject_bitflips: 'many' is not a non-negative integer" "$WORK/i4" ||
    fail "bad value: $(cat "$WORK/i4")"
expect_exit 2 "$WORK/i5" "$AGENT" --allow-fault-injection --inject memtest.inject_bitflip=4 \
    --coordinator 127.0.0.1:1
grep -q "fleetburn-agent: --inject: memtest has no parameter 'inject_bitflip'" "$WORK/i5" ||
    fail "agent's misspelt key: $(cat "$WORK/i5")"
[ ! -e "$WORK/t.db" ] || fail "a refused --inject created the database"
grep -q "starting" "$WORK/i1" && fail "agents started despite a bad --inject"
expect_exit 1 "$WORK/i6" "$FLEETBURN" run --local 2 --db "$WORK/t.db" \
    --inject local-1:memtest.inject_bitflips=4 "$WORK/mem.yaml"
grep -q "local-1 .*fail" "$WORK/i6" || fail "a good --inject no longer injects: $(cat "$WORK/i6")"
pass "--inject: misspelt key, unknown node and workload, bad value exit 2; a good one injects"

# 2. scope errors at load time
cat >"$WORK/net.yaml" <<'YAML'
name: scope
stages:
  - name: dram
    workload: memtest
    params: {size: 8MiB}
  - name: net
    workload: netbw
    params: {duration: 1s}
YAML
expect_exit 2 "$WORK/s1" "$FLEETBURN" run --local 2 --db "$WORK/scope.db" "$WORK/net.yaml"
grep -q "net.yaml:6: stages\[1\].scope: stage 'net': netbw runs only with scope: pairs .* and this stage has scope: node (the default); expected scope: pairs" "$WORK/s1" ||
    fail "scope error: $(cat "$WORK/s1")"
[ ! -e "$WORK/scope.db" ] || fail "a refused campaign created a database"
pass "netbw with scope: node refused at load: $(cat "$WORK/s1")"

# 3. a reader that goes away
python3 - "$FLEETBURN" "$WORK/t.db" <<'PY' || fail "report to a closed pipe"
import os, subprocess, sys
fb, db = sys.argv[1], sys.argv[2]
for cmd in (["report"], ["report", "--format", "json"], ["nodes"]):
    r, w = os.pipe()
    os.close(r)  # the reader has gone before the first byte: every write is EPIPE
    p = subprocess.run([fb] + cmd + ["--db", db], stdout=w, stderr=subprocess.PIPE)
    os.close(w)
    if p.returncode != 0 or p.stderr:
        sys.exit("fleetburn %s to a closed pipe: exit %d, %r" % (" ".join(cmd), p.returncode, p.stderr))
PY
set -o pipefail
"$FLEETBURN" report --db "$WORK/t.db" 2>"$WORK/pipe.err" | head -1 >/dev/null || fail "report | head exited $?"
[ -s "$WORK/pipe.err" ] && fail "report | head: $(cat "$WORK/pipe.err")"
set +o pipefail
# A full disk is still an error.
if [ -w /dev/full ]; then
    expect_exit 3 "$WORK/full" sh -c "'$FLEETBURN' report --db '$WORK/t.db' >/dev/full"
    grep -q "cannot report" "$WORK/full" || fail "/dev/full: $(cat "$WORK/full")"
fi
pass "report and nodes end quietly (exit 0) when the reader goes; a full disk is still exit 3"

# 4. HOST:PORT
port=$(free_port)
"$FLEETBURN" serve --bind "127.0.0.1:$port" --db "$WORK/coord.db" --heartbeat-ms 200 \
    >>"$WORK/coordinator.log" 2>&1 &
PIDS+=($!)
wait_for_log "$WORK/coordinator.log" "coordinator on tcp://127.0.0.1:$port"
ENDPOINT="tcp://127.0.0.1:$port"
printf 'coordinator = 127.0.0.1:%s\nname = hp1\n' "$port" >"$WORK/agent.conf"
chmod 600 "$WORK/agent.conf"
"$AGENT" --config "$WORK/agent.conf" --spool "$WORK/spool-hp1" >>"$WORK/hp1.log" 2>&1 &
PIDS+=($!)
wait_for_log "$WORK/hp1.log" "registered with tcp://127.0.0.1:$port as hp1"
cat >"$WORK/sleep.yaml" <<'YAML'
name: hostport
nodes: hp1
stages:
  - {name: s, workload: sleep, params: {duration: 100ms}}
YAML
"$FLEETBURN" run "$WORK/sleep.yaml" --coordinator "127.0.0.1:$port" >"$WORK/run.out" 2>&1 ||
    fail "run --coordinator 127.0.0.1:$port: $(cat "$WORK/run.out")"
grep -q "to tcp://127.0.0.1:$port" "$WORK/run.out" || fail "run did not say where: $(cat "$WORK/run.out")"
"$FLEETBURN" campaigns --coordinator "127.0.0.1:$port" >"$WORK/list" || fail "campaigns HOST:PORT"
grep -q "hostport" "$WORK/list" || fail "campaigns: $(cat "$WORK/list")"
expect_exit 2 "$WORK/h1" "$FLEETBURN" campaigns --coordinator "coord:77x"
grep -q "fleetburn campaigns: --coordinator: 'coord:77x': '77x' is not a port from 1 to 65535; expected tcp://HOST:PORT, HOST:PORT or HOST" "$WORK/h1" ||
    fail "bad port: $(cat "$WORK/h1")"
expect_exit 2 "$WORK/h2" "$AGENT" --coordinator "udp://coord:7755"
grep -q "fleetburn-agent: --coordinator: 'udp://coord:7755': unknown transport" "$WORK/h2" ||
    fail "agent, bad transport: $(cat "$WORK/h2")"
expect_exit 2 "$WORK/h3" "$FLEETBURN" serve --bind "::1:7755" --db "$WORK/x.db"
grep -q "an IPv6 address goes in brackets" "$WORK/h3" || fail "serve --bind: $(cat "$WORK/h3")"
pass "HOST:PORT for serve --bind, the agent's configuration, run and campaigns --coordinator"
