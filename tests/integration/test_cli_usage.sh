#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# --version and per-command --help: every command prints its own usage and options on stdout and
# exits 0 (`fleetburn CMD --help`, `fleetburn help CMD`); an unknown option exits 2 naming the
# option, with that command's usage; an option without its value says which.
. "$(dirname "$0")/lib.sh"

version=$(sed -n 's/^project(fleetburn VERSION \([0-9.]*\).*/\1/p' "$FB_SRC/CMakeLists.txt")
[ -n "$version" ] || fail "no version in CMakeLists.txt"
"$FLEETBURN" --version >"$WORK/v" || fail "fleetburn --version exited $?"
grep -qx "fleetburn $version (protocol [0-9]*)" "$WORK/v" || fail "fleetburn --version: $(cat "$WORK/v")"
"$AGENT" --version >"$WORK/av" || fail "fleetburn-agent --version exited $?"
grep -qx "fleetburn-agent $version (protocol [0-9]*)" "$WORK/av" || fail "agent --version: $(cat "$WORK/av")"
pass "--version: $(cat "$WORK/v"); $(cat "$WORK/av")"

# Each command, with an option its usage must list.
check_help() { # command option-it-lists
    local cmd=$1 opt=$2
    "$FLEETBURN" "$cmd" --help >"$WORK/h-$cmd" 2>"$WORK/h-$cmd.err" || fail "fleetburn $cmd --help exited $?"
    [ -s "$WORK/h-$cmd.err" ] && fail "fleetburn $cmd --help wrote to stderr: $(cat "$WORK/h-$cmd.err")"
    head -1 "$WORK/h-$cmd" | grep -q "^usage: fleetburn $cmd\b" ||
        fail "fleetburn $cmd --help does not start with its usage: $(head -1 "$WORK/h-$cmd")"
    grep -q -- "$opt" "$WORK/h-$cmd" || fail "fleetburn $cmd --help does not list $opt"
    # Its own part only: no other command's usage line.
    for other in run serve follow cancel campaigns keygen report nodes; do
        [ "$other" = "$cmd" ] && continue
        grep -q "^  $other \|^usage: fleetburn $other" "$WORK/h-$cmd" &&
            fail "fleetburn $cmd --help shows $other's usage"
    done
    "$FLEETBURN" help "$cmd" >"$WORK/h2-$cmd" || fail "fleetburn help $cmd exited $?"
    cmp -s "$WORK/h-$cmd" "$WORK/h2-$cmd" || fail "fleetburn help $cmd differs from $cmd --help"
    return 0
}
check_help run --agent-config
check_help serve --max-connections
check_help follow "follow \[ID\]"
check_help cancel --reason
check_help campaigns --format
check_help keygen "keygen PATH"
check_help report --format
check_help workloads --markdown
check_help nodes --db
grep -q -- "--coordinator EP" "$WORK/h-run" || fail "run --help does not explain --coordinator"
pass "every command's --help: its usage and options on stdout, exit 0"

"$FLEETBURN" --help >"$WORK/all" || fail "fleetburn --help exited $?"
for cmd in run serve follow cancel campaigns keygen report nodes; do
    grep -q "^  $cmd" "$WORK/all" || fail "fleetburn --help does not list $cmd"
done
"$AGENT" --help >"$WORK/agent-help" || fail "fleetburn-agent --help exited $?"
grep -q -- "--coordinator EP" "$WORK/agent-help" && grep -q -- "--version" "$WORK/agent-help" ||
    fail "fleetburn-agent --help: $(cat "$WORK/agent-help")"
pass "fleetburn --help lists every command; fleetburn-agent --help"

expect_usage_error() { # message-pattern cmd...
    local pattern=$1; shift
    set +e; "$@" >"$WORK/out" 2>"$WORK/err"; local rc=$?; set -e
    [ $rc -eq 2 ] || fail "'$*' exited $rc, expected 2: $(cat "$WORK/err")"
    grep -q -- "$pattern" "$WORK/err" || fail "'$*' does not say '$pattern': $(head -3 "$WORK/err")"
    [ -s "$WORK/out" ] && fail "'$*' wrote to stdout: $(cat "$WORK/out")"
    return 0
}
expect_usage_error "fleetburn report: unknown option '--frobnicate'" "$FLEETBURN" report --frobnicate
grep -q "^usage: fleetburn report" "$WORK/err" || fail "no report usage after the error"
expect_usage_error "fleetburn serve: unknown option '-Z'" "$FLEETBURN" serve -Z
expect_usage_error "fleetburn run: --db needs a value" "$FLEETBURN" run --db
expect_usage_error "fleetburn: unknown command 'frobnicate'" "$FLEETBURN" frobnicate --help
expect_usage_error "fleetburn: unknown command 'frobnicate'" "$FLEETBURN" help frobnicate
expect_usage_error "fleetburn-agent: unknown option '--frobnicate'" "$AGENT" --frobnicate
expect_usage_error "fleetburn-agent: --name needs a value" "$AGENT" --name
pass "unknown options and missing values exit 2 and name the option"
