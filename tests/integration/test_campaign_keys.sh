#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# follow, cancel and campaigns on a keyed coordinator: an agent's key may not list, follow or
# cancel (exit 3, "not authorised", the campaign keeps running); an operator's key given on the
# command line or through the client configuration file may.
. "$(dirname "$0")/lib.sh"
K="$WORK/keys"
mkdir -p "$K/agents" "$K/operators" "$WORK/own"
"$FLEETBURN" keygen "$K/coordinator" >/dev/null
"$FLEETBURN" keygen "$WORK/own/n1" >/dev/null
"$FLEETBURN" keygen "$WORK/own/alice" >/dev/null
cp "$WORK/own/n1.pub" "$K/agents/n1.pub"
cp "$WORK/own/alice.pub" "$K/operators/alice.pub"
SK="--server-key $K/coordinator.pub"

start_coordinator --keys "$K"
start_agent n1 --key "$WORK/own/n1" $SK
wait_for_log "$WORK/coordinator.log" "agent n1 registered"
cat >"$WORK/long.yaml" <<'YAML'
name: keyed-nap
nodes: n1
stages:
  - {name: nap, workload: sleep, timeout: 1m, params: {duration: 1m}}
YAML
"$FLEETBURN" run --coordinator "$ENDPOINT" --key "$WORK/own/alice" $SK "$WORK/long.yaml" \
    >/dev/null 2>"$WORK/run.log" &
run_pid=$!
PIDS+=("$run_pid")
id=$(submitted_id "$WORK/run.log")
wait_for_log "$WORK/n1.log" "task $id/.*started sleep"

for cmd in campaigns "follow $id" "cancel $id"; do
    set +e
    # shellcheck disable=SC2086
    "$FLEETBURN" $cmd --coordinator "$ENDPOINT" --key "$WORK/own/n1" $SK >/dev/null 2>"$WORK/refused.log"; rc=$?
    set -e
    [ $rc -eq 3 ] || fail "'$cmd' with an agent's key exited $rc, expected 3: $(cat "$WORK/refused.log")"
    grep -q "not authorised" "$WORK/refused.log" || fail "'$cmd' refusal: $(cat "$WORK/refused.log")"
done
kill -0 "$run_pid" || fail "the campaign's client ended after refused requests"
pass "an agent's key may not list, follow or cancel (exit 3, not authorised)"

"$FLEETBURN" campaigns --coordinator "$ENDPOINT" --key "$WORK/own/alice" $SK >"$WORK/list.txt" \
    || fail "an operator could not list"
grep -qE "^$id +keyed-nap +running " "$WORK/list.txt" || fail "list: $(cat "$WORK/list.txt")"
printf 'coordinator = %s\nkey = %s\nserver_key = %s\n' "$ENDPOINT" "$WORK/own/alice" "$K/coordinator.pub" >"$WORK/client.conf"
chmod 600 "$WORK/client.conf"
"$FLEETBURN" cancel --config "$WORK/client.conf" --reason "keyed test" >"$WORK/cancel.out" 2>"$WORK/cancel.log" \
    || fail "an operator could not cancel through the client configuration: $(cat "$WORK/cancel.log")"
grep -q "campaign $id cancelled" "$WORK/cancel.out" || fail "cancel: $(cat "$WORK/cancel.out")"
status_of rc wait "$run_pid"
[ $rc -eq 3 ] || fail "the cancelled campaign's client exited $rc, expected 3"
pass "an operator lists (command-line keys) and cancels (client configuration file)"
