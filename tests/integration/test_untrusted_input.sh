#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Nothing from the network becomes a program, a path or an environment variable, and hostile
# input is refused at once (docs/security.md):
#   1. a campaign that still sets allreduce's mpirun is refused (exit 2) naming the parameter;
#   2. a megabyte of nested YAML is refused within a second, not after minutes;
#   3. `topology: /etc/shadow` through `fleetburn serve` + `run --coordinator`: the client reads
#      the file (when it may: it is the client's own file, read with its rights) and checks it as
#      the coordinator would, the coordinator opens nothing, and no message quotes a line of the
#      file; the coordinator lives on (its side, a Submit naming /etc/shadow without attaching
#      it, is tests/unit/test_submit.c);
#   4. a topology that is a FIFO or /dev/zero is a clear error, not a hang or an endless read;
#   5. the agent's site configuration: values from the file, options winning, and its errors
#      (a bad line, an unknown key, a group-writable file, a missing --config file); run --local
#      --agent-config gives the local agents the site's settings but never its keys.
. "$(dirname "$0")/lib.sh"

expect_exit() { # expected-status logfile cmd...
    local want=$1 log=$2; shift 2
    set +e; timeout 60 "$@" >"$log" 2>&1; local rc=$?; set -e
    [ $rc -eq "$want" ] || fail "'$*' exited $rc, expected $want: $(head -c 2000 "$log")"
}

# ---- 1. mpirun is not a campaign parameter --------------------------------------------------
printf 'name: x\nstages:\n  - {name: a, workload: sleep}\n  - name: ar\n    workload: allreduce\n    params: {max_size: 4KiB, mpirun: /tmp/evil}\n' >"$WORK/mpirun.yaml"
expect_exit 2 "$WORK/mpirun.out" "$FLEETBURN" run --local 1 --db "$WORK/t.db" "$WORK/mpirun.yaml"
grep -qF "mpirun.yaml:6: stages[1].params.mpirun: not a campaign parameter any more: the mpirun program is a site setting (mpirun = ... in /etc/fleetburn/agent.conf)" \
    "$WORK/mpirun.out" || fail "mpirun refusal: $(cat "$WORK/mpirun.out")"
for p in mpirun_args rsh_agent; do
    printf 'name: x\nstages:\n  - name: ar\n    workload: allreduce\n    params: {%s: x}\n' "$p" >"$WORK/$p.yaml"
    expect_exit 2 "$WORK/$p.out" "$FLEETBURN" run --local 1 --db "$WORK/t.db" "$WORK/$p.yaml"
    grep -qF "stages[0].params.$p: not a campaign parameter any more" "$WORK/$p.out" \
        || fail "$p refusal: $(cat "$WORK/$p.out")"
done
pass "mpirun, mpirun_args, rsh_agent in a campaign: exit 2, $(head -1 "$WORK/mpirun.out")"

# ---- 2. a megabyte of nesting ---------------------------------------------------------------
python3 -c "print('a: ' + '[' * 500000 + ']' * 500000)" >"$WORK/nested.yaml"
t0=$(date +%s%N)
expect_exit 2 "$WORK/nested.out" "$FLEETBURN" run --local 1 --db "$WORK/t.db" "$WORK/nested.yaml"
ms=$((($(date +%s%N) - t0) / 1000000))
grep -qF "nested.yaml:1: YAML nesting: mappings and lists nested more than 32 levels deep" \
    "$WORK/nested.out" || fail "nesting: $(cat "$WORK/nested.out")"
[ "$ms" -lt 10000 ] || fail "1 MB of nesting took $ms ms to refuse"
pass "1 MB of nested lists refused in $ms ms: $(head -1 "$WORK/nested.out")"

# ---- 3. topology: /etc/shadow through a coordinator --------------------------------------------
start_coordinator
cat >"$WORK/shadow.yaml" <<'YAML'
name: leak
stages:
  - name: net
    workload: netbw
    scope: pairs
    pairing: topology
    topology: /etc/shadow
YAML
expect_exit 2 "$WORK/shadow.out" "$FLEETBURN" run --coordinator "$ENDPOINT" "$WORK/shadow.yaml"
kill -0 "$COORD_PID" 2>/dev/null || fail "the coordinator died"
if [ -r /etc/shadow ]; then
    # The client could read it, so it did, and checked it as a topology before sending it: the
    # error names a line and at most a token (the user name), never a password field or a line.
    grep -q "shadow.yaml:7: stages\[0\].topology: cannot load '/etc/shadow': line 1: " \
        "$WORK/shadow.out" || fail "shadow error: $(cat "$WORK/shadow.out")"
    while IFS= read -r line; do
        rest=${line#*:}
        [ -n "$rest" ] || continue
        if grep -qF -- "$rest" "$WORK/shadow.out" "$WORK/coordinator.log"; then
            fail "a line of /etc/shadow came back: $(cat "$WORK/shadow.out")"
        fi
        hash=$(printf '%s' "$rest" | cut -d: -f1)
        if [ ${#hash} -gt 2 ] && grep -qF -- "$hash" "$WORK/shadow.out" "$WORK/coordinator.log"; then
            fail "a password field of /etc/shadow came back"
        fi
    done </etc/shadow
    how="read by the client (it may), refused as a topology quoting no line of it"
else
    grep -q "cannot load /etc/shadow: /etc/shadow: cannot read: Permission denied" "$WORK/shadow.out" \
        || fail "shadow error: $(cat "$WORK/shadow.out")"
    how="unreadable to the client, never sent"
fi
pass "topology: /etc/shadow via run --coordinator: $how; $(head -1 "$WORK/shadow.out" | cut -c1-160)"

# The coordinator still runs campaigns.
start_agents a1
printf 'name: ok\nstages:\n  - {name: a, workload: sleep, params: {duration: 100ms}}\n' >"$WORK/ok.yaml"
expect_exit 0 "$WORK/ok.out" "$FLEETBURN" run --coordinator "$ENDPOINT" "$WORK/ok.yaml"
pass "the coordinator runs the next campaign"

# ---- 4. a FIFO and /dev/zero as the topology ------------------------------------------------
mkfifo "$WORK/fabric.fifo"
for topo in fabric.fifo /dev/zero; do
    sed "s|/etc/shadow|$topo|" "$WORK/shadow.yaml" >"$WORK/topo.yaml"
    t0=$SECONDS
    expect_exit 2 "$WORK/topo.out" "$FLEETBURN" run --local 1 --db "$WORK/t.db" "$WORK/topo.yaml"
    [ $((SECONDS - t0)) -lt 10 ] || fail "$topo took $((SECONDS - t0)) s"
    grep -qE "topo.yaml:7: stages\[0\].topology: cannot load $topo: .*: not a regular file \((a FIFO|a character device)\); expected a topology file" \
        "$WORK/topo.out" || fail "$topo: $(cat "$WORK/topo.out")"
    expect_exit 2 "$WORK/topo-remote.out" "$FLEETBURN" run --coordinator "$ENDPOINT" "$WORK/topo.yaml"
    grep -q "not a regular file" "$WORK/topo-remote.out" || fail "$topo (remote): $(cat "$WORK/topo-remote.out")"
    pass "topology $topo: $(head -1 "$WORK/topo.out" | cut -c1-150)"
done

# ---- 5. the agent's site configuration --------------------------------------------------------
# Values from the file; the command line wins.
cat >"$WORK/agent.conf" <<CONF
# site settings
coordinator = $ENDPOINT
name = from-file
spool = $WORK/spool-from-file
mpirun = /usr/bin/mpirun   # the site's
CONF
chmod 600 "$WORK/agent.conf"
"$AGENT" --config "$WORK/agent.conf" >>"$WORK/from-file.log" 2>&1 &
PIDS+=($!)
wait_for_log "$WORK/coordinator.log" "agent from-file registered"
"$AGENT" --config "$WORK/agent.conf" --name from-cli --spool "$WORK/spool-cli" >>"$WORK/from-cli.log" 2>&1 &
PIDS+=($!)
wait_for_log "$WORK/coordinator.log" "agent from-cli registered"
grep -q "site configuration $WORK/agent.conf" "$WORK/from-file.log" || fail "the agent did not say which file it read"
pass "agent settings from --config, options winning"

printf 'name = a\nmpirun /usr/bin/mpirun\n' >"$WORK/bad-line.conf"
printf 'name = a\nmpirum = /usr/bin/mpirun\n' >"$WORK/unknown.conf"
printf 'coordinator = %s\nmpirun = /tmp/evil\n' "$ENDPOINT" >"$WORK/writable.conf"
chmod 600 "$WORK/bad-line.conf" "$WORK/unknown.conf"
chmod 664 "$WORK/writable.conf"
expect_exit 2 "$WORK/c1" "$AGENT" --config "$WORK/bad-line.conf" --coordinator "$ENDPOINT"
grep -qF "bad-line.conf:2: no '=' after 'mpirun'; expected a setting as key = value" "$WORK/c1" \
    || fail "bad line: $(cat "$WORK/c1")"
expect_exit 2 "$WORK/c2" "$AGENT" --config "$WORK/unknown.conf" --coordinator "$ENDPOINT"
grep -qF "unknown.conf:2: mpirum: unknown key; expected one of coordinator, name, spool, address, worker, key, server_key, mpirun, mpirun_args, rsh_agent, mpirun_allow_run_as_root" \
    "$WORK/c2" || fail "unknown key: $(cat "$WORK/c2")"
expect_exit 2 "$WORK/c3" "$AGENT" --config "$WORK/writable.conf"
grep -qF "writable.conf: writable by its group (mode 0664); expected a file only its owner can change" \
    "$WORK/c3" || fail "group-writable: $(cat "$WORK/c3")"
expect_exit 2 "$WORK/c4" "$AGENT" --config "$WORK/missing.conf" --coordinator "$ENDPOINT"
grep -qF "missing.conf: cannot read: No such file or directory" "$WORK/c4" || fail "missing: $(cat "$WORK/c4")"
expect_exit 2 "$WORK/c5" "$AGENT" --config "$WORK/fabric.fifo" --coordinator "$ENDPOINT"
grep -qF "not a regular file (a FIFO)" "$WORK/c5" || fail "FIFO config: $(cat "$WORK/c5")"
printf 'mpirun_allow_run_as_root = maybe\n' >"$WORK/bool.conf"
chmod 600 "$WORK/bool.conf"
expect_exit 2 "$WORK/c6" "$AGENT" --config "$WORK/bool.conf" --coordinator "$ENDPOINT"
grep -qF "bool.conf:1: mpirun_allow_run_as_root: 'maybe' is not yes or no" "$WORK/c6" \
    || fail "bool: $(cat "$WORK/c6")"
pass "config errors: $(head -1 "$WORK/c1"); $(head -1 "$WORK/c3" | cut -c1-120)"

# run --local's agents read a site configuration too (--agent-config), but its connection
# settings are run --local's own: a key in the file does not stop them from registering with the
# embedded loopback coordinator, which has none.
cat >"$WORK/site-keys.conf" <<CONF
coordinator = tcp://192.0.2.1:7755
key = $WORK/no-such.key
server_key = $WORK/no-such.pub
mpirun = /nonexistent/site-mpirun
CONF
chmod 600 "$WORK/site-keys.conf"
expect_exit 0 "$WORK/local-site.out" "$FLEETBURN" run --local 1 --agent-config "$WORK/site-keys.conf" \
    --db "$WORK/local.db" "$WORK/ok.yaml"
expect_exit 2 "$WORK/local-site2.out" "$FLEETBURN" run --coordinator "$ENDPOINT" \
    --agent-config "$WORK/site-keys.conf" "$WORK/ok.yaml"
grep -q -- "--agent-config applies to the agents of run --local" "$WORK/local-site2.out" \
    || fail "--agent-config with --coordinator: $(cat "$WORK/local-site2.out")"
pass "run --local --agent-config: the site's settings, the embedded coordinator without keys"
