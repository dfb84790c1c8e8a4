#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The DIMM of a miscompare, through the real programs: `fleetburn run --local` with one agent whose
# memtest gets one stuck bit and one one-time bit flip injected. The machine is a fixture root
# (FLEETBURN_SYSFS_ROOT) with skx_edac's decoder file and a kernel-log file, and a stand-in kernel
# (a shell loop) answers each address written to the decoder with the driver's EDAC line. The
# report must call one page stuck and the other transient, and, where the worker can read
# physical addresses (root with CAP_SYS_ADMIN), name the DIMM the decoder gave, as a `dimm`
# finding; otherwise say the address is unknown. The same run with dimm_decode=passive must not
# touch the decoder.
. "$(dirname "$0")/lib.sh"

root=$WORK/root
addr=$root/sys/kernel/debug/edac/skx_test/addr
kmsg=$root/dev/kmsg
mkdir -p "$(dirname "$addr")" "$(dirname "$kmsg")"
: >"$addr"
: >"$kmsg"
echo 0 >"$WORK/answered"

# The stand-in kernel: what skx_edac logs for an address written to its test file.
(
    while true; do
        if [ -s "$addr" ]; then
            phys=$(head -n 1 "$addr")
            : >"$addr"
            printf 'EDAC MC0: 1 CE memory read error on CPU_SrcID#0_MC#0_Chan#1_DIMM#0 (channel:1 slot:0 page:0x%x offset:0x%x grain:32 syndrome:0x0 - err_code:0x0000:0x0090 ProcessorSocketId:0x0 MemoryControllerId:0x0 PhysicalRankId:0x1 Row:0x442a Column:0x440 Bank:0x1 BankGroup:0x1)\n' \
                $((phys >> 12)) $((phys & 4095)) >>"$kmsg"
            echo $(($(cat "$WORK/answered") + 1)) >"$WORK/answered"
        fi
        sleep 0.01
    done
) &
PIDS+=($!)

run_campaign() { # name dimm_decode
    cat >"$WORK/$1.yaml" <<YAML
name: $1
stages:
  - name: dram
    workload: memtest
    timeout: 5m
    params: {size: 32MiB, passes: 1, patterns: [random], retests: 4, dimm_decode: $2}
YAML
    set +e
    FLEETBURN_SYSFS_ROOT=$root "$FLEETBURN" run --local 1 --db "$WORK/$1.db" \
        --inject local-0:memtest.inject_stuck_bits=1 --inject local-0:memtest.inject_bitflips=1 \
        "$WORK/$1.yaml" >"$WORK/$1.out" 2>"$WORK/$1.log"
    local rc=$?
    set -e
    [ $rc -eq 1 ] || fail "$1: run exited $rc, expected 1 (memtest fails)"
    "$FLEETBURN" report --db "$WORK/$1.db" --format json >"$WORK/$1.json"
    json_q "$WORK/$1.json" '"\n".join(f["kind"] + " | " + f["part"] + " | " + f["what"] for t in d["stages"][0]["tasks"] for f in t["findings"])' >"$WORK/$1.findings"
}

metric() { json_q "$WORK/$1.json" "d['stages'][0]['tasks'][0]['metrics']['$2']"; }

run_campaign auto auto
[ "$(metric auto stuck_pages)" = 1 ] || fail "stuck_pages $(metric auto stuck_pages): $(cat "$WORK/auto.findings")"
[ "$(metric auto transient_pages)" = 1 ] || fail "transient_pages $(metric auto transient_pages)"
grep -q "stuck (failed again in 4 of 4 retests)" "$WORK/auto.findings" || fail "no stuck finding"
grep -q "transient (failed again in 0 of 4 retests)" "$WORK/auto.findings" || fail "no transient finding"
if grep -q "pagemap needs CAP_SYS_ADMIN" "$WORK/auto.findings"; then
    [ "$(cat "$WORK/answered")" = 0 ] || fail "the decoder was asked without a physical address"
    pass "stuck and transient told apart; the physical address is unknown here (no CAP_SYS_ADMIN)"
else
    [ "$(metric auto dimms_named)" = 2 ] || fail "dimms_named $(metric auto dimms_named)"
    grep -q "^dimm | local-0/CPU_SrcID#0_MC#0_Chan#1_DIMM#0 | memtest miscompares in page phys 0x" \
        "$WORK/auto.findings" || fail "no dimm finding: $(cat "$WORK/auto.findings")"
    grep -q "named by skx_edac decoder: skx_edac decoded 0x[0-9a-f]* to EDAC MC0: socket 0, memory controller 0, channel 1, DIMM 0, rank 1" \
        "$WORK/auto.findings" || fail "the decode's details are missing"
    [ "$(cat "$WORK/answered")" = 2 ] || fail "the decoder answered $(cat "$WORK/answered") times, expected 2 (one per page)"
    bad=$(json_q "$WORK/auto.json" 'sorted(b["part"] for b in d["diagnosis"]["bad"])')
    [ "$bad" = "['local-0', 'local-0/CPU_SrcID#0_MC#0_Chan#1_DIMM#0']" ] || fail "the diagnosis named $bad"
    pass "stuck and transient told apart; both pages named local-0/CPU_SrcID#0_MC#0_Chan#1_DIMM#0 through the EDAC decoder, and the diagnosis names it"
fi

echo 0 >"$WORK/answered"
run_campaign passive passive
[ "$(cat "$WORK/answered")" = 0 ] || fail "dimm_decode=passive wrote to the decoder"
grep -q "EDAC address decoder: not asked (dimm_decode=passive)" "$WORK/passive.findings" \
    || grep -q "pagemap needs CAP_SYS_ADMIN" "$WORK/passive.findings" \
    || fail "passive run does not say why: $(cat "$WORK/passive.findings")"
grep -q "not decodable here" "$WORK/passive.findings" || fail "passive run names a DIMM"
pass "dimm_decode=passive leaves the decoder alone and says the DIMM is not decodable here"
