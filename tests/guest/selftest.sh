#!/usr/bin/env bash
# Self-test of the guest-side probe under plain OVMF (no csvsm), as TAP:
# 1. build/probe.efi must find the SEV metadata and the secrets page in the
#    real flash, hash the flash exactly as `sha256sum OVMF.fd` does, report
#    "# no SVSM found", fail that one check and power the VM off by itself.
# 2. build/guest/probe-fake.efi (the probe with a fake SVSM built in) must
#    pass every check except the four isolation checks, which the fake
#    cannot provide: this runs the probe's call plumbing end to end.
# The probe's own lines are echoed with a "# " prefix so that the test
# runner counts only this script's results.
set -u
cd "$(dirname "$0")/../.."
OVMF=${OVMF:-/usr/share/ovmf/OVMF.fd}
TIMEOUT=${PROBE_TIMEOUT:-180}
n=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
nok() { n=$((n + 1)); echo "not ok $n - $*"; }
check() { local d=$1; shift; if "$@"; then ok "$d"; else nok "$d"; fi; }

run_probe() { # run_probe EFI LOG -> QEMU status in $rc
	timeout --foreground -k 5 "$TIMEOUT" qemu-system-x86_64 -machine q35 -accel tcg -cpu EPYC -m 512M \
		-nodefaults -net none -display none -no-reboot -serial stdio -bios "$OVMF" -kernel "$1" \
		2>/dev/null | tr -d '\r' | sed 's/\x1b\[[0-9;=]*[A-Za-z]//g' >"$2"
	rc=${PIPESTATUS[0]}
	sed 's/^/# | /' "$2"
}

for f in build/probe.efi build/guest/probe-fake.efi "$OVMF"; do
	if [ ! -f "$f" ]; then nok "$f exists (build it with make)"; echo "$n passed, 1 failed"; exit 1; fi
done
log=$(mktemp); trap 'rm -f "$log"' EXIT

run_probe build/probe.efi "$log"
check "plain OVMF: QEMU powered off by itself (status $rc)" test "$rc" -eq 0
check "plain OVMF: SNP secrets page found in the SEV metadata" grep -q '^ok .*SNP secrets page at gPA 0x' "$log"
want=$(sha256sum "$OVMF" | cut -d' ' -f1)
check "plain OVMF: probe's SHA-256 of the flash below 4 GiB == sha256sum OVMF.fd" grep -q "^# flash sha256 $want\$" "$log"
check "plain OVMF: '# no SVSM found' and no SVSM call made" grep -q '^# no SVSM found' "$log"
check "plain OVMF: ends with 'N passed, 1 failed'" bash -c "tail -n1 '$log' | grep -qE '^[0-9]+ passed, 1 failed\$'"

run_probe build/guest/probe-fake.efi "$log"
check "fake SVSM: QEMU powered off by itself (status $rc)" test "$rc" -eq 0
# The fake cannot block memory, track validated pages, run a new vCPU or
# host a real TPM: exactly those checks fail, and nothing else.
beyond='(read|write|execute) at csvsm|REMAP_CA to the rescinded page|CREATE_VCPU of a valid VMSA|TPM2_Startup|TPM2_CreatePrimary'
fails=$(grep -c '^not ok ' "$log")
iso=$(grep -cE '^not ok .*(read|write|execute) at csvsm' "$log")
other=$(grep '^not ok ' "$log" | grep -cvE "$beyond")
check "fake SVSM: only checks beyond a fake fail ($fails failed: $iso isolation, $other other)" \
	test "$iso" -eq 4 -a "$other" -eq 0
check "fake SVSM: vTPM PCR0 check passes" grep -q '^ok .*vTPM PCR0' "$log"
check "fake SVSM: ends with 'N passed, $fails failed'" bash -c "tail -n1 '$log' | grep -qE '^[0-9]+ passed, $fails failed\$'"
