#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# allreduce as a multi-node group on one GPU machine: two agents, each owning one GPU
# (CUDA_VISIBLE_DEVICES), registered with a `fleetburn serve` coordinator, run a `scope: group`
# stage with launcher native — every agent starts its own rank and NCCL's unique id travels
# through the coordinator's exchange, exactly as on two hosts. Then the same stage again while
# the second agent is killed mid-sweep: the group task must end lost, the surviving member must be
# cancelled at once (not wait for NCCL's watchdog), and the campaign must go on to its last stage.
#
#   bench/allreduce_group_device.sh BUNDLE OUT
#
# BUNDLE comes from deploy/make-bundle.sh over a build with CUDA. OUT gets summary.txt (verdicts,
# busbw per size, timings of the member loss), group-logs.txt (coordinator, agents, reports) and
# the two campaigns' JSON reports.
# Environment: MIN/MAX (1M, 8G), ITERS (20).
set -uo pipefail
bundle=${1:?usage: allreduce_group_device.sh BUNDLE OUT}
out=${2:?usage: allreduce_group_device.sh BUNDLE OUT}
min=${MIN:-1M} max=${MAX:-8G} iters=${ITERS:-20}
mkdir -p "$out"
bundle=$(cd "$bundle" && pwd)
out=$(cd "$out" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/fb-argroup-XXXXXX")
summary=$out/summary.txt logs=$out/group-logs.txt
: >"$summary"
: >"$logs"
say() { echo "$*" | tee -a "$summary"; }
export NCCL_NVLS_ENABLE=0
# shellcheck disable=SC1091
. "$bundle/env.sh"
for lib in libcudart.so.13 libcublasLt.so.13 libnccl.so.2; do
    p=$(ldconfig -p 2>/dev/null | awk -v n="$lib" 'index($1, n) == 1 {print $NF; exit}')
    [ -n "$p" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$(dirname "$p")"
done
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; }
trap cleanup EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
ep=tcp://127.0.0.1:$port
fleetburn serve --bind "$ep" --db "$work/fb.db" >"$work/coordinator.log" 2>&1 &
pids+=($!)
start_agent() { # name gpu
    CUDA_VISIBLE_DEVICES=$2 fleetburn-agent --coordinator "$ep" --name "$1" \
        --spool "$work/spool-$1" >"$work/agent-$1.log" 2>&1 &
    echo $!
}
a=$(start_agent gpu-a 0)
b=$(start_agent gpu-b 1)
pids+=("$a" "$b")
sleep 3

cat >"$work/group.yaml" <<YAML
name: allreduce-group
nodes: gpu-a,gpu-b
stages:
  - name: native-group
    workload: allreduce
    scope: group
    timeout: 10m
    params: {launcher: native, min_size: $min, max_size: $max, iters: $iters}
YAML
say "== 2 agents x 1 GPU, scope: group, launcher native, $min..$max, $(date -u +%FT%TZ)"
t0=$SECONDS
fleetburn run --coordinator "$ep" "$work/group.yaml" >"$work/run1.txt" 2>&1
say "group run: exit $? after $((SECONDS - t0)) s"
fleetburn report --db "$work/fb.db" --format json >"$work/report1.json" 2>>"$logs"

# The loss run: a long sweep, the second member's agent killed 8 s in; a short stage follows.
cat >"$work/loss.yaml" <<YAML
name: allreduce-group-loss
nodes: gpu-a,gpu-b
stages:
  - name: native-group-loss
    workload: allreduce
    scope: group
    timeout: 10m
    params: {launcher: native, min_size: 1M, max_size: 8G, iters: 200}
  - name: after
    workload: sleep
    timeout: 1m
    nodes: gpu-a
    params: {duration: 1s}
YAML
t0=$SECONDS
fleetburn run --coordinator "$ep" "$work/loss.yaml" >"$work/run2.txt" 2>&1 &
runpid=$!
sleep 8
kill -9 "$b"
killed=$SECONDS
say "killed agent gpu-b (pid $b) $((killed - t0)) s into the loss run"
wait "$runpid"
say "loss run: exit $? after $((SECONDS - t0)) s ($((SECONDS - killed)) s after the kill)"
fleetburn report --db "$work/fb.db" --format json >"$work/report2.json" 2>>"$logs"
pgrep -fa "$bundle/bin/fleetburn-worker" >>"$summary" && say "warning: workers still running after the campaign"

cp "$work/report1.json" "$out/group-report.json"
cp "$work/report2.json" "$out/loss-report.json"
python3 - "$work/report1.json" "$work/report2.json" >>"$summary" <<'PY'
import json, re, sys
r1 = json.load(open(sys.argv[1]))
for st in r1.get("stages", []):
    for t in st.get("tasks", []):
        print("%s: task %s nodes %s verdict %s %s" % (st["name"], t.get("id"), t.get("nodes"),
              t.get("verdict"), t.get("error") or ""))
        per = {}
        for k, v in (t.get("metrics") or {}).items():
            # a group task's metrics are per member: NAME@NODE
            m = re.fullmatch(r"allreduce\.(\d+)\.busbw_gbs(?:@(.*))?", k)
            if m:
                per.setdefault(int(m.group(1)), {})[m.group(2) or ""] = v
        for size in sorted(per):
            print("  %12d  busbw GB/s %s" % (size, "  ".join(
                "%s %.2f" % (node or "-", v) for node, v in sorted(per[size].items()))))
r2 = json.load(open(sys.argv[2]))
print("== loss run")
for st in r2.get("stages", []):
    print("stage %s: %s" % (st["name"], st.get("verdict")))
    for t in st.get("tasks", []):
        print("  task %s nodes %s verdict %s: %s" % (t.get("id"), t.get("nodes"), t.get("verdict"),
              (t.get("error") or "")[:300]))
PY
{
    echo "===== coordinator"; tail -n 150 "$work/coordinator.log"
    for f in "$work"/agent-*.log; do echo "===== $f"; tail -n 150 "$f"; done
    echo "===== runs"; cat "$work/run1.txt" "$work/run2.txt"
    echo "===== report (loss run)"; fleetburn report --db "$work/fb.db"
} >>"$logs" 2>&1
cat "$summary"
