#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The systemd units as `cmake --install` writes them (deploy/systemd/*.service.in, the programs'
# paths filled in for the prefix): `systemd-analyze verify` passes on both (a unit with a
# misspelt setting is shown to fail it), both are Type=notify with a watchdog, the coordinator's
# exposure (systemd-analyze security) stays low, and the agent keeps what its workloads need:
# no setting that closes the GPU and HCA devices or the kernel log. Skipped (77) without
# systemd-analyze.
. "$(dirname "$0")/lib.sh"

command -v systemd-analyze >/dev/null || { echo "skip: no systemd-analyze (Debian: systemd)"; exit 77; }

inst="$WORK/inst"
for comp in coordinator agent; do
    cmake --install "$FB_BIN" --prefix "$inst" --component "$comp" >"$WORK/install-$comp.log" ||
        fail "cmake --install --component $comp: $(cat "$WORK/install-$comp.log")"
done
units="$inst/lib/systemd/system"
for u in fleetburn-agent fleetburn-serve; do
    [ -f "$units/$u.service" ] || fail "$u.service not installed under $units"
    grep -q "^Type=notify$" "$units/$u.service" || fail "$u: not Type=notify"
    grep -q "^WatchdogSec=" "$units/$u.service" || fail "$u: no WatchdogSec"
    grep -q "@" "$units/$u.service" && grep -n "@[A-Z_]*@" "$units/$u.service" && fail "$u: unfilled @VAR@"
    true
done
grep -q "^ExecStart=$inst/bin/fleetburn-agent --config /etc/fleetburn/agent.conf$" "$units/fleetburn-agent.service" ||
    fail "agent ExecStart: $(grep ExecStart "$units/fleetburn-agent.service")"
grep -q "^ExecStart=$inst/bin/fleetburn serve --keys /etc/fleetburn/keys " "$units/fleetburn-serve.service" ||
    fail "serve ExecStart: $(grep ExecStart "$units/fleetburn-serve.service")"
pass "units installed for prefix $inst: Type=notify, WatchdogSec, programs of the prefix"

verify() { # unit-file: systemd-analyze verify's complaints about it, if any
    set +e
    systemd-analyze verify "$1" >"$WORK/verify.out" 2>&1
    local rc=$?
    set -e
    grep -F "$(basename "$1")" "$WORK/verify.out" || true
    return $rc
}
for u in fleetburn-agent fleetburn-serve; do
    complaints=$(verify "$units/$u.service") || fail "systemd-analyze verify $u: $(cat "$WORK/verify.out")"
    [ -z "$complaints" ] || fail "systemd-analyze verify $u: $complaints"
done
# The check can fail: a misspelt setting in a copy is reported.
sed 's/^ProtectSystem=/ProtectSystm=/' "$units/fleetburn-serve.service" >"$WORK/fleetburn-typo.service"
complaints=$(verify "$WORK/fleetburn-typo.service") || true
echo "$complaints" | grep -q "Unknown key 'ProtectSystm'" || fail "verify missed a misspelt key: $complaints"
pass "systemd-analyze verify passes on both units (and reports a misspelt key)"

# The agent runs GPU, HCA and kernel-log workloads: none of these may be switched on.
for setting in PrivateDevices=yes ProtectClock=yes ProtectKernelLogs=yes DevicePolicy=closed \
    DevicePolicy=strict MemoryDenyWriteExecute=yes PrivateNetwork=yes; do
    grep -q "^$setting" "$units/fleetburn-agent.service" &&
        fail "fleetburn-agent.service has $setting, which takes from the workloads what they need"
done
for setting in ProtectSystem=strict PrivateTmp=yes NoNewPrivileges=yes ProtectKernelTunables=yes; do
    grep -q "^$setting$" "$units/fleetburn-agent.service" || fail "fleetburn-agent.service lacks $setting"
done
pass "the agent's unit leaves devices and the kernel log open, and hardens the rest"

if systemd-analyze security --offline=true "$units/fleetburn-serve.service" >"$WORK/security.out" 2>&1; then
    exposure=$(sed -n 's/.*Overall exposure level for fleetburn-serve.service: \([0-9.]*\).*/\1/p' "$WORK/security.out")
    [ -n "$exposure" ] || fail "no exposure level: $(tail -3 "$WORK/security.out")"
    python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) <= 3.0 else 1)" "$exposure" ||
        fail "fleetburn-serve.service exposure $exposure, above 3.0"
    pass "fleetburn-serve.service exposure level $exposure (systemd-analyze security)"
else
    echo "note: this systemd-analyze has no security --offline; exposure not checked"
fi
