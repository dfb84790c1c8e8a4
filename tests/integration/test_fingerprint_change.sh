#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Environment fingerprints with real agents and a real coordinator: three agents read their own
# copy of a fixture tree (FLEETBURN_SYSFS_ROOT) and name their GPUs through the stand-in NVML
# library (build/fake-nvml). After a first campaign, two nodes get a new NVIDIA driver and one a
# new BIOS, and the agents start again (as after the reboot an upgrade takes). The second
# campaign's report says what changed on which nodes, folded into hostlist lines; a third with
# nothing changed says so; the first had nothing to compare with.
. "$(dirname "$0")/lib.sh"

FIX="$FB_SRC/tests/fixtures"
export FLEETBURN_KMSG="$FIX/kmsg/clean.txt"
export LD_LIBRARY_PATH="$FB_BIN/fake-nvml${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
[ -e "$FB_BIN/fake-nvml/libnvidia-ml.so.1" ] || fail "build/fake-nvml/libnvidia-ml.so.1 not built"

declare -A PID
start_node() {
    FLEETBURN_SYSFS_ROOT="$WORK/root-$1" FLEETBURN_FAKE_NVML="$WORK/nvml-$1.txt" start_agent "$1"
    PID[$1]=$AGENT_PID
}
stop_node() {
    kill -TERM "${PID[$1]}"
    wait_for_log "$WORK/coordinator.log" "agent $1 gone" 10
}
# Runs campaign file $1 and prints its id; the run must pass.
run_campaign() {
    "$FLEETBURN" run --coordinator "$ENDPOINT" "$1" >"$WORK/run.out" 2>"$WORK/run.log" ||
        { cat "$WORK/run.log" >&2; fail "$1 did not pass"; }
    sed -nE 's/^submitted .* as ([^ ]+) to .*/\1/p' "$WORK/run.log"
}

cat >"$WORK/campaign.yaml" <<'YAML'
name: nightly
nodes: "n[1-3]"
stages:
  - {name: health, workload: health}
  - {name: settle, workload: sleep, params: {duration: 200ms}}
YAML

start_coordinator
for n in n1 n2 n3; do
    cp -a "$FIX/sysfs/expect-node" "$WORK/root-$n"
    cp "$FIX/nvml/expect-node.txt" "$WORK/nvml-$n.txt"
    start_node $n
done
for n in n1 n2 n3; do wait_for_log "$WORK/coordinator.log" "agent $n registered"; done

first=$(run_campaign "$WORK/campaign.yaml")
"$FLEETBURN" report "$first" --db "$WORK/fb.db" >"$WORK/first.txt"
grep -q "^environment: recorded for 3 nodes; none ran an earlier campaign$" "$WORK/first.txt" ||
    { cat "$WORK/first.txt" >&2; fail "the first campaign's report says otherwise"; }
rows=$(sqlite3 -readonly "$WORK/fb.db" "SELECT COUNT(DISTINCT node) FROM fingerprints WHERE campaign_id = '$first'")
[ "$rows" = 3 ] || fail "fingerprints of $rows nodes recorded, expected 3"
pass "first campaign: fingerprints of 3 nodes recorded, nothing to compare with"

# The upgrade: n1 and n2 get driver 580.95.05, n3 a new BIOS; the agents start again.
for n in n1 n2 n3; do stop_node $n; done
for n in n1 n2; do
    sed -i 's/580\.65\.06/580.95.05/' "$WORK/root-$n/proc/driver/nvidia/version" "$WORK/nvml-$n.txt"
done
echo R14 >"$WORK/root-n3/sys/class/dmi/id/bios_version"
for n in n1 n2 n3; do start_node $n; done
for n in n1 n2 n3; do
    for i in $(seq 100); do
        [ "$(grep -c "agent $n registered" "$WORK/coordinator.log")" -ge 2 ] && break
        [ "$i" = 100 ] && fail "$n did not register again"
        sleep 0.1
    done
done

second=$(run_campaign "$WORK/campaign.yaml")
"$FLEETBURN" report "$second" --db "$WORK/fb.db" >"$WORK/second.txt"
"$FLEETBURN" report "$second" --db "$WORK/fb.db" --format json >"$WORK/second.json"
grep -q "^changes since previous campaign (3 of 3 nodes ran one)$" "$WORK/second.txt" &&
    grep -qF "  bios R13 → R14 on n3" "$WORK/second.txt" &&
    grep -qF "  nvidia_driver 580.65.06 → 580.95.05 on n[1-2]" "$WORK/second.txt" ||
    { sed -n '/changes since/,$p' "$WORK/second.txt" >&2; fail "the second report does not name the changes"; }
pass "second campaign: $(grep -F "nvidia_driver 580" "$WORK/second.txt" | sed 's/^ *//'); $(grep -F "bios R13" "$WORK/second.txt" | sed 's/^ *//')"

python3 - "$WORK/second.json" "$first" <<'PY' || fail "the JSON report's environment is wrong"
import json, sys
env = json.load(open(sys.argv[1]))["environment"]
assert env["nodes"] == 3 and env["compared"] == 3, env
ch = {c["component"]: c for c in env["changes"]}
assert set(ch) == {"bios", "nvidia_driver"}, ch
d = ch["nvidia_driver"]
assert (d["before"], d["after"], d["nodes"], d["node_list"]) == ("580.65.06", "580.95.05", "n[1-2]", ["n1", "n2"]), d
assert (ch["bios"]["before"], ch["bios"]["after"], ch["bios"]["node_list"]) == ("R13", "R14", ["n3"])
assert env["previous_campaigns"] == [{"campaign": sys.argv[2], "nodes": "n[1-3]"}], env["previous_campaigns"]
fps = {f["nodes"]: f["versions"] for f in env["fingerprints"]}
assert fps["n[1-2]"]["nvidia_driver"] == "580.95.05" and fps["n3"]["bios"] == "R14", fps
for v in fps.values():
    for k in ("fleetburn", "kernel", "os", "bios", "bios_date", "nvidia_driver", "cuda_driver",
              "gpu_vbios", "gpu_inforom", "hca_fw"):
        assert k in v, (k, v)
PY
pass "the JSON report: changes with their nodes, the previous campaign, grouped fingerprints"

third=$(run_campaign "$WORK/campaign.yaml")
"$FLEETBURN" report "$third" --db "$WORK/fb.db" >"$WORK/third.txt"
grep -q "^environment: unchanged since the previous campaign of 3 of 3 nodes$" "$WORK/third.txt" ||
    { tail -5 "$WORK/third.txt" >&2; fail "the third report does not say nothing changed"; }
pass "third campaign: nothing changed, and the report says so"
