#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What `fleetburn run` shows while a campaign runs, local and through a coordinator: elapsed time
# that ticks every second, the nodes' phases from their workers' progress events ("local-0 40%
# sleeping"), tasks running, an ETA (the sleep workload knows its length); one line rewritten in
# place on a terminal (a pseudo-terminal from script(1)), plain lines without carriage returns
# or escape codes through a pipe; a stage that cannot run says why; the summary shows the
# workloads' headline figures (memtest GiB tested and errors) and wraps what is too wide instead
# of cutting it with '~'.
. "$(dirname "$0")/lib.sh"

long=network-bandwidth-between-the-two-local-agents
cat >"$WORK/campaign.yaml" <<YAML
name: progress-demo
nodes: all
stages:
  - name: nap
    workload: sleep
    params: {duration: 6s}
  - name: $long
    workload: netbw
    scope: pairs
    nodes: local-0
  - name: dram
    workload: memtest
    params: {size: 64MiB, passes: 2} # about 10 s here: a plain line repeats every 5 s
YAML

# distinct "N.Ns elapsed" values in a file
ticks() { grep -aoE '[0-9]+\.[0-9]s elapsed' "$1" | sort -u | wc -l; }

# --- on a terminal -------------------------------------------------------------------------------
rc=0
script -q -e -c "'$FLEETBURN' run --local 2 --db '$WORK/tty.db' '$WORK/campaign.yaml'" /dev/null \
    >"$WORK/tty.out" 2>&1 </dev/null || rc=$?
[ $rc -eq 1 ] || fail "run on a terminal exited $rc (expected 1: the netbw stage cannot run)"
grep -aq $'\r\033\[K\[stage 1/3 nap\]' "$WORK/tty.out" || fail "no line rewritten in place on the terminal"
n=$(ticks "$WORK/tty.out")
[ "$n" -ge 4 ] || fail "elapsed did not tick on the terminal ($n distinct values in a 6 s stage)"
grep -aqE 'slowest: local-[01] [0-9]+% sleeping' "$WORK/tty.out" || fail "no node phase on the terminal"
grep -aqE ', 2 running, .*ETA [0-9.]+s' "$WORK/tty.out" || fail "no running count and ETA on the terminal"
pass "terminal: one line rewritten, elapsed ticking ($n values), phases, ETA"

grep -aq "stage $long (netbw) cannot run: 1 node(s) selected, too few for a pair" "$WORK/tty.out" \
    || fail "the stage that cannot run does not say why"
pass "a stage that cannot run says why"

# A plain line of the memtest stage with a node's phase and an ETA: the 5 s repeat while both
# nodes run, or the line after the first node's result while the other one runs (how long the
# stage takes depends on the machine).
# A duration as fleetburn prints it (6.0s, 1m02s, 1h05m09s): under the sanitizers the stage
# takes minutes.
dur='([0-9]+\.[0-9]s|[0-9]+m[0-9]{2}s|[0-9]+h[0-9]{2}m[0-9]{2}s)'
dram_line="\\[stage 3/3 dram\\] (0/2 done, 0 failed, 2|1/2 done, 0 failed, 1) running, $dur elapsed, ETA $dur; slowest: local-[01] [0-9]+% pass [12]/2 [a-z_]+"

# --- through a pipe ------------------------------------------------------------------------------
rc=0
"$FLEETBURN" run --local 2 --db "$WORK/pipe.db" "$WORK/campaign.yaml" 2>&1 | cat >"$WORK/pipe.out" \
    || true
! grep -aq $'\r' "$WORK/pipe.out" || fail "carriage return in the output through a pipe"
! grep -aq $'\033' "$WORK/pipe.out" || fail "escape code in the output through a pipe"
grep -aqE "^$dram_line \\($dur\\)" \
    "$WORK/pipe.out" || fail "no plain progress line with memtest's phase and an ETA"
n=$(ticks "$WORK/pipe.out")
[ "$n" -ge 2 ] || fail "elapsed did not move in the plain lines ($n values)"
grep -aq "^stage $long (netbw) cannot run: " "$WORK/pipe.out" || fail "no reason through a pipe"
pass "pipe: plain lines, no carriage return or escape code, elapsed moving, phases"

# --- the summary ---------------------------------------------------------------------------------
out="$WORK/pipe.out"
grep -aqE '^dram +memtest +local-0 +pass +tested 0.0625 GiB, errors 0, [0-9.]+ MB/s' "$out" \
    || fail "memtest row lacks its headline figures"
grep -aqE '^nap +sleep +local-1 +pass +slept 6000 ms' "$out" || fail "sleep row lacks its figure"
grep -aqE "cannot run: 1 node\(s\) selected, too few for a pair" "$out" || fail "summary lacks the reason"
! grep -aq '~' "$out" || fail "text cut with ~ in the summary"
# the 46-character stage name wraps in its 24-character column, nothing lost
grep -aqE '^network-bandwidth-betwee +netbw +- +error' "$out" || fail "long stage name not wrapped"
grep -aqE '^n-the-two-local-agents *$' "$out" || fail "the wrapped stage name's second line is missing"
pass "summary: headline figures, the reason, long text wrapped"

# --- through a coordinator -----------------------------------------------------------------------
start_coordinator
start_agent local-0
start_agent local-1
for i in $(seq 1 100); do
    "$FLEETBURN" nodes --db "$WORK/fb.db" 2>/dev/null | grep -c alive | grep -q 2 && break
    sleep 0.1
done
"$FLEETBURN" run --coordinator "$ENDPOINT" "$WORK/campaign.yaml" 2>&1 | cat >"$WORK/remote.out" || true
grep -aqE "^$dram_line" \
    "$WORK/remote.out" || { cat "$WORK/remote.out" >&2; fail "no progress with phases through the coordinator"; }
grep -aq "^stage $long (netbw) cannot run: " "$WORK/remote.out" || fail "no reason through the coordinator"
pass "run --coordinator: the same progress, phases and reason"
