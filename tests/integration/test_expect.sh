#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Expected hardware with real agents and a real coordinator. Each agent reads a fixture tree
# (FLEETBURN_SYSFS_ROOT) and, through the stand-in NVML library (build/fake-nvml,
# tests/fakes/fake_nvml.c), the real GPU probe names its GPUs:
#   good   two H100 80GB, 2 TiB, one 400 Gb/s port: what expect says;
#   short  the same node after a GPU fell off the bus (it registered with two first);
#   cpu    no GPUs at all, but expect says it has two;
#   cpu2   no GPUs, and expect (a later entry) says it has none.
# The health stage passes on good and fails on short (naming the missing GPU's PCI address) and
# on cpu (every field); gpuburn on cpu is `fail`, not `skipped`, while on cpu2 it stays skipped.
# `fleetburn expect --from good` prints an expect section that good then meets in a campaign, and
# bad expect sections are refused before anything runs.
. "$(dirname "$0")/lib.sh"

FIX="$FB_SRC/tests/fixtures"
export FLEETBURN_KMSG="$FIX/kmsg/clean.txt"
export LD_LIBRARY_PATH="$FB_BIN/fake-nvml${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
[ -e "$FB_BIN/fake-nvml/libnvidia-ml.so.1" ] || fail "build/fake-nvml/libnvidia-ml.so.1 not built"

cp -a "$FIX/sysfs/expect-node" "$WORK/short-root"
grep -v c1:00.0 "$FIX/nvml/expect-node.txt" >"$WORK/short-nvml.txt"

start_coordinator
FLEETBURN_SYSFS_ROOT="$FIX/sysfs/expect-node" FLEETBURN_FAKE_NVML="$FIX/nvml/expect-node.txt" \
    start_agent good
FLEETBURN_SYSFS_ROOT="$WORK/short-root" FLEETBURN_FAKE_NVML="$FIX/nvml/expect-node.txt" \
    start_agent short
short_pid=$AGENT_PID
FLEETBURN_SYSFS_ROOT="$FIX/sysfs/cpu-node" start_agent cpu
FLEETBURN_SYSFS_ROOT="$FIX/sysfs/cpu-node" start_agent cpu2
for n in good short cpu cpu2; do wait_for_log "$WORK/coordinator.log" "agent $n registered"; done
grep -q "GPU probe described 2 of 2 GPUs" "$WORK/good.log" || fail "the GPU probe did not describe good's GPUs"

# short loses a GPU and its agent starts again (as after a reboot).
kill -TERM "$short_pid"
wait_for_log "$WORK/coordinator.log" "agent short gone" 10
rm "$WORK/short-root/sys/bus/pci/devices/0000:c1:00.0"
FLEETBURN_SYSFS_ROOT="$WORK/short-root" FLEETBURN_FAKE_NVML="$WORK/short-nvml.txt" \
    start_agent short
wait_for_log "$WORK/short.log" "GPU probe described 1 of 1 GPUs" 15
for i in $(seq 100); do
    "$FLEETBURN" nodes --db "$WORK/fb.db" | grep -E '^short +alive .*1 GPU' >/dev/null && break
    [ "$i" = 100 ] && fail "short did not register again with one GPU"
    sleep 0.1
done
pass "four agents: inventories from fixture trees, GPUs named through NVML"

cat >"$WORK/campaign.yaml" <<'YAML'
name: expect-check
nodes: good,short,cpu,cpu2
expect:
  - {nodes: "good,short,cpu", gpus: 2, gpu_model: H100, gpu_memory: 80GiB, memory: 2TiB,
     ib_ports: 1, ib_rate: 400, pcie: gen5x16}
  - {nodes: cpu2, gpus: 0}
stages:
  - {name: health, workload: health}
  - {name: burn, workload: gpuburn, nodes: "cpu,cpu2", params: {duration: 1s}}
YAML
set +e
"$FLEETBURN" run --coordinator "$ENDPOINT" "$WORK/campaign.yaml" >"$WORK/run.out" 2>"$WORK/run.log"
rc=$?
set -e
[ $rc = 1 ] || { cat "$WORK/run.log" >&2; fail "run exited $rc, expected 1 (tasks failed)"; }
id=$(sed -nE 's/^submitted .* as ([^ ]+) to .*/\1/p' "$WORK/run.log")
"$FLEETBURN" report "$id" --db "$WORK/fb.db" --format json >"$WORK/report.json"
"$FLEETBURN" report "$id" --db "$WORK/fb.db" >"$WORK/report.txt"

# verdict, error and findings of the task of stage $1 on node $2
task() {
    python3 - "$WORK/report.json" "$1" "$2" "$3" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
st = [s for s in d["stages"] if s["name"] == sys.argv[2]][0]
t = [t for t in st["tasks"] if t["nodes"] == [sys.argv[3]]][0]
what = sys.argv[4]
if what == "verdict": print(t["verdict"])
elif what == "error": print(t.get("error") or "")
else: print("\n".join("%s [%s] %s" % (f["part"], f["kind"], f["what"]) for f in t["findings"]))
PY
}
# whether `task $1 $2 $3` says $4 (fixed text); the output is taken whole first, so that grep -q
# leaving early cannot fail the pipeline
says() { local out; out=$(task "$1" "$2" "$3"); grep -qF -- "$4" <<<"$out"; }
[ "$(task health good verdict)" = pass ] || {
    task health good findings >&2; fail "health failed on good, which has what expect says"; }
pass "health passes on the node that has what expect says"

[ "$(task health short verdict)" = fail ] || fail "health on short: $(task health short verdict)"
says health short findings "short [node] gpus: expected 2, found 1 (missing 0000:c1:00.0, listed in an earlier inventory of this node)" ||
    { task health short findings >&2; fail "short's finding does not name the missing GPU"; }
says health short error "hardware differs from the campaign's expect: gpus: expected 2, found 1" ||
    fail "short's error: $(task health short error)"
pass "health fails on short: $(task health short findings | head -1)"

[ "$(task health cpu verdict)" = fail ] || fail "health on cpu: $(task health cpu verdict)"
for want in "gpus: expected 2, found 0" "memory: expected 2TiB (2048.0 GiB), found 7.7 GiB" \
    "ib_ports: expected 1 active, found 0"; do
    says health cpu findings "$want" || { task health cpu findings >&2; fail "cpu: no '$want'"; }
done
pass "health fails on cpu with every field that differs"

[ "$(task health cpu2 verdict)" = pass ] || fail "health on cpu2 (expected: no GPUs): $(task health cpu2 verdict)"
[ "$(task burn cpu verdict)" = fail ] || fail "gpuburn on cpu is '$(task burn cpu verdict)', expected fail"
says burn cpu error "gpuburn found no GPUs on a node the campaign's expect says has 2" ||
    fail "gpuburn on cpu: error '$(task burn cpu error)'"
says burn cpu findings "cpu [node] gpus: expected 2, found 0 (gpuburn found none: gpuburn skipped: no GPUs on this node)" ||
    { task burn cpu findings >&2; fail "gpuburn on cpu: no finding"; }
[ "$(task burn cpu2 verdict)" = skipped ] || fail "gpuburn on cpu2 is '$(task burn cpu2 verdict)', expected skipped"
pass "gpuburn: fail on a node expected to have GPUs that shows none, skipped where none are expected"

grep -q "short.*gpus: expected 2, found 1" "$WORK/report.txt" || { cat "$WORK/report.txt" >&2; fail "the text report does not name short's missing GPU"; }
events=$(sqlite3 -readonly "$WORK/fb.db" "SELECT message FROM events WHERE kind = 'expect' AND node = 'short'")
grep -q "gpus: expected 2, found 1" <<<"$events" || fail "no expect event on the timeline for short"
pass "the mismatches are in the text report and on the timeline"

# expect --from: what good has, pasted into a campaign, is met by good.
"$FLEETBURN" expect --from good --db "$WORK/fb.db" >"$WORK/expect.yaml" || fail "expect --from good failed"
grep -q '^  gpus: 2$' "$WORK/expect.yaml" && grep -q 'gpu_model: "NVIDIA H100 80GB HBM3"' "$WORK/expect.yaml" &&
    grep -q '^  gpu_memory: 79.6GiB$' "$WORK/expect.yaml" && grep -q '^  pcie: gen5x16$' "$WORK/expect.yaml" ||
    { cat "$WORK/expect.yaml" >&2; fail "expect --from good does not say what good has"; }
{ echo "name: from-good"; echo "nodes: good,short"; cat "$WORK/expect.yaml"
  echo "stages:"; echo "  - {name: health, workload: health}"; } >"$WORK/from-good.yaml"
set +e
"$FLEETBURN" run --coordinator "$ENDPOINT" "$WORK/from-good.yaml" >"$WORK/run2.out" 2>"$WORK/run2.log"
rc=$?
set -e
[ $rc = 1 ] || { cat "$WORK/run2.log" >&2; fail "from-good exited $rc, expected 1 (short still fails)"; }
id2=$(sed -nE 's/^submitted .* as ([^ ]+) to .*/\1/p' "$WORK/run2.log")
"$FLEETBURN" report "$id2" --db "$WORK/fb.db" --format json >"$WORK/report.json"
[ "$(task health good verdict)" = pass ] || { task health good findings >&2; fail "good does not meet its own expectation"; }
[ "$(task health short verdict)" = fail ] || fail "short meets good's expectation"
pass "expect --from good round-trips: good meets it, short does not"
"$FLEETBURN" expect --from nobody --db "$WORK/fb.db" 2>"$WORK/nobody.err" && fail "expect --from nobody succeeded"
grep -q "no inventory of node 'nobody'" "$WORK/nobody.err" || fail "expect --from nobody: $(cat "$WORK/nobody.err")"

# Bad expect sections: refused with the line and key, before anything runs.
cat >"$WORK/bad.yaml" <<'YAML'
name: bad
expect:
  gpus: 8
  gpu_mem: 80GiB
stages:
  - {name: health, workload: health}
YAML
set +e
"$FLEETBURN" run --coordinator "$ENDPOINT" "$WORK/bad.yaml" >"$WORK/bad.out" 2>"$WORK/bad.err"
rc=$?
set -e
[ $rc = 2 ] || fail "a bad expect section exited $rc, expected 2"
grep -qF "bad.yaml:4: expect.gpu_mem: unknown key; expected one of nodes, gpus, gpu_model" "$WORK/bad.err" ||
    fail "bad expect: $(cat "$WORK/bad.err")"
pass "a bad expect section is refused: $(head -1 "$WORK/bad.err")"
