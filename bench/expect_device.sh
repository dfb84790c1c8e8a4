#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Expected hardware and fingerprints on a real GPU node: a coordinator and one agent with the
# real sysfs and NVML, then
#   - what the machine reports (nvidia-smi, MemTotal, DMI, os-release) and what the GPU probe says;
#   - the agent's stored inventory, and `fleetburn expect --from NODE`;
#   - a campaign whose expect section is that output: health passes (the round trip on real data);
#   - a campaign expecting another machine (8 H200, 2 TiB, an HCA): health fails naming each field;
#   - a campaign stating the nominal sizes (80GiB per H100, the memory the machine was sold with,
#     $NOMINAL_MEMORY, default 128GiB): passes within the tolerance.
#   bench/expect_device.sh BUNDLE_DIR OUT_DIR
set -uo pipefail
bundle=${1:?usage: expect_device.sh BUNDLE_DIR OUT_DIR}
out=${2:?usage: expect_device.sh BUNDLE_DIR OUT_DIR}
# shellcheck disable=SC1091
. "$bundle/env.sh"
mkdir -p "$out"
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
node=gpu-node
{
    echo "# nvidia-smi"
    nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,memory.total,vbios_version,inforom.img --format=csv
    echo "# /proc/meminfo"; grep MemTotal /proc/meminfo
    echo "# DMI"; for f in bios_version bios_date sys_vendor product_name; do
        echo "$f: $(cat /sys/class/dmi/id/$f 2>/dev/null)"; done
    echo "# os-release"; grep PRETTY_NAME /etc/os-release
    echo "# fleetburn-worker --probe"; fleetburn-worker --probe
} >"$out/machine.txt" 2>&1

fleetburn serve --bind tcp://127.0.0.1:${PORT:-7755} --db "$work/fb.db" >"$work/coordinator.log" 2>&1 &
sleep 1
fleetburn-agent --coordinator tcp://127.0.0.1:${PORT:-7755} --name "$node" --spool "$work/spool" \
    >"$work/agent.log" 2>&1 &
for _ in $(seq 100); do grep -q "registered" "$work/agent.log" && break; sleep 0.2; done
{
    cat "$work/agent.log"
    echo "# fleetburn nodes"; fleetburn nodes --db "$work/fb.db"
    echo "# inventory"; sqlite3 "$work/fb.db" "SELECT inventory_json FROM agents" 2>/dev/null ||
        python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT inventory_json FROM agents').fetchone()[0])" "$work/fb.db"
} >"$out/inventory.txt" 2>&1
fleetburn expect --from "$node" --db "$work/fb.db" >"$out/expect-from.yaml" 2>&1

run() { # name, expect section text
    { echo "name: expect-$1"; echo "$2"; echo "stages:"; echo "  - {name: health, workload: health}"; } >"$work/$1.yaml"
    fleetburn run --coordinator tcp://127.0.0.1:${PORT:-7755} "$work/$1.yaml" >/dev/null 2>"$work/$1.log"
    echo "## $1: exit $? ($(cat "$work/$1.yaml" | tr '\n' ' '))"
    fleetburn report --db "$work/fb.db"
}
{
    run from-node "$(grep -v '^#' "$out/expect-from.yaml")"
    run other-machine "expect: {gpus: 8, gpu_model: H200, gpu_memory: 141GiB, memory: 2TiB, ib_ports: 8, ib_rate: 400, pcie: gen5x16}"
    run nominal "expect: {gpus: $(nvidia-smi -L | wc -l), gpu_model: H100, gpu_memory: 80GiB, memory: ${NOMINAL_MEMORY:-128GiB}}"
} >"$out/campaigns.txt" 2>&1
fleetburn report --db "$work/fb.db" --format json >"$out/last-report.json"
echo "machine.txt expect-from.yaml inventory.txt campaigns.txt last-report.json in $out"
