#!/usr/bin/env bash
# A hostile host's launch parameters on csvsm's snp platform, in the SNP
# machine: the IGVM memory map (snpm.memmap=), the vCPU count
# (snpm.vp_count=) and the MADT's APIC IDs (snpm.madt=) as the host fills
# them. csvsm must refuse what it can see is wrong, terminate cleanly when
# the host's page-state changes then fail, never fault or hang, and leave no
# VMPCK in VMPL0-only memory on any of these early termination paths (the
# machine's key scan). The machine's default map for -m 2G is QEMU's, feffc:4:1,0:70000; the SeaBIOS-style one is 0:a0,100:6ff00 (pages; the
# machine keeps 0x70000000 up). Also a host that issues IGVM pages without
# data as the PSP ZERO page type (snpm.zero_pages=zero): the launch digest
# changes to csvsm-measure --zero-pages zero's (docs/igvm.md section 4).
set -u
cd "$(dirname "$0")/../.."
. tests/qemu/lib.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
MEASURE=${MEASURE:-build/csvsm-measure}
snpm_need "$MEASURE" build/probe.efi
QEMU_TIMEOUT=240 # a hang guard: with 4K backing a 2 GiB boot spends ~20-30 s in pre-acceptance here

refuse() { # name machine-options expected-line
	snpm_qemu "$tmp/m.log" 2G 2 -append "$2 snpm.stop_at_launch=1"
	tap_check "$1: refused ($(grep -m1 -E "$3" "$tmp/m.log" | cut -c1-120))" grep -qE "$3" "$tmp/m.log"
	tap_check "$1: failure status, not a fault or hang (QEMU exit $QEMU_RC)" test "$QEMU_RC" -eq 3
	# Absence counts only once the run is shown to have ended: the machine's
	# last line after a termination.
	if [ "$(tail -n1 "$tmp/m.log")" = "snpm: end: failure" ] && ! grep -q 'FAULT' "$tmp/m.log"; then
		tap_ok "$1: no fault dump (the run reached its end: 'snpm: end: failure')"
	else
		tap_fail "$1: no fault dump (last line: '$(tail -n1 "$tmp/m.log" | cut -c1-60)'; FAULT lines: $(grep -c 'FAULT' "$tmp/m.log"))"
	fi
	local ks
	ks=$(grep -m1 '^snpm: key-scan: VMPL0 terminated' "$tmp/m.log")
	tap_check "$1: csvsm asked to terminate and left no VMPCK in VMPL0-only memory ($(field pages "$ks") pages)" \
		test -n "$ks" -a "$(field vmpck0 "$ks")" = 0 -a "$(field vmpck1 "$ks")" = 0 \
		-a "$(field vmpck2 "$ks")" = 0 -a "$(field vmpck3 "$ks")" = 0
}

refuse "overlapping RAM" "snpm.memmap=0:a0,100:6ff00,20000:1000" "memmap: refused: overlapping"
refuse "RAM over csvsm's region" "snpm.memmap=0:a0,100:6ff00,fc000:100" "memmap: refused: overlapping"
refuse "RAM over csvsm's launch area (boot block, parameters)" "snpm.memmap=0:a0,100:6ff00,fe000:7" "memmap: refused: RAM \\[0xfe000000, 0xfe007000\\) covers csvsm's launch area"
refuse "an entry beyond the address space" "snpm.memmap=0:a0,100:6ff00,10000000000:1" "memmap: refused: entry beyond"
# RAM the host does not back: a host that answers the page-state change
# with an error (snpm.psc_nonram=error, KVM's answer to an entry it refuses)
# has made a map error. csvsm says so, leaves that RAM unvalidated (the
# guest finds it so) and goes on with the rest (mm/accept.c) ...
map_error() { # name machine-options refused-range
	local aud
	snpm_qemu "$tmp/h.log" 2G 2 -append "$2 snpm.psc_nonram=error snpm.stop_at_launch=1"
	aud=$(grep -m1 '^snpm: accept-audit: ' "$tmp/h.log")
	tap_check "$1: the host refused the page-state change of $3 (the machine says so)" \
		grep -q 'snp-view: page-state change entry .* refused' "$tmp/h.log"
	tap_check "$1: csvsm names it a host map error and leaves $3 unvalidated" \
		grep -q "accept: host map error: the host refuses to make $3 private" "$tmp/h.log"
	tap_check "$1: the dashboard counts it" grep -q 'accept .*host map error: [0-9]* KiB' "$tmp/h.log"
	tap_check "$1: csvsm went on to the guest's launch, and the audit of the VM's RAM is clean (QEMU exit $QEMU_RC)" \
		test "$QEMU_RC" -eq 1 -a -n "$aud" -a "$(field unvalidated_ranges "$aud")" = "$(fw_host_pages)" \
		-a "$(field no_guest_access "$aud")" = 0
}
map_error "RAM the host does not have (its own memory)" "snpm.memmap=0:a0,100:7ff00" 0x70000000-0x80000000
map_error "RAM above the VM's memory" "snpm.memmap=0:a0,100:6ff00,100000:40000" 0x100000000-0x140000000
# RAM the host backs but refuses to make private for csvsm (snpm.psc_refuse=,
# issue 34 item 2): csvsm reports the map error and records the range as not
# validated, and the guest then validates it itself as any RAM (OVMF's PEI
# makes a page-state change to private and an SVSM PVALIDATE of all RAM below
# 4 GiB): a first validation csvsm serves, not a frame the host swapped (the
# record said "validated" before, and csvsm ended the VM with a false "host
# tampering"). The probe runs to its end on it. 2M backing keeps it short.
# shellcheck disable=SC2046
snpm_qemu "$tmp/r.log" 2G 2 $(snpm_guest_args probe 2G 2 build/probe.efi) \
	-append "snpm.psc_refuse=40000000-40200000 snpm.backing=2m"
pr=$(grep -m1 '^snpm: psc-refuse: ' "$tmp/r.log")
tap_check "a host refusing csvsm's page-state change of RAM it backs: csvsm leaves 0x40000000-0x40200000 unvalidated (refused $(field refused "$pr") times)" \
	eval 'grep -q "accept: host map error: the host refuses to make 0x40000000-0x40200000 private" "$tmp/r.log" && [ "$(field refused "$pr")" -ge 1 ]'
tap_check "the guest validated that range through csvsm ($(field validated "$pr") pages validated at the end), no false host tampering" \
	eval '[ "$(field validated "$pr")" = 512/512 ] && ! grep -q "host tampering" "$tmp/r.log"'
tap_check "the probe ran to its end, 0 failed (QEMU exit $QEMU_RC; $(grep -E '^[0-9]+ passed, [0-9]+ failed' "$tmp/r.log" | tail -n1))" \
	eval '[ "$QEMU_RC" -eq 1 ] && [ "$(tail -n1 "$tmp/r.log")" = "snpm: end: success" ] && grep -qE "^[0-9]+ passed, 0 failed" "$tmp/r.log"'
[ "$QEMU_RC" -eq 1 ] || tail -n 20 "$tmp/r.log" | sed 's/^/# r: /'
# ... unless the host refuses range after range: that is no map error.
refuse "a host refusing 9 ranges of RAM apart" "snpm.memmap=0:a0,100:6ff00,100000:200,100400:200,100800:200,100c00:200,101000:200,101400:200,101800:200,101c00:200,102000:200 snpm.psc_nonram=error" "accept: stopped: the hypervisor's page-state change"
# ... and QEMU stops the VM itself (kvm_convert_memory fails; the machine's default).
snpm_qemu "$tmp/q.log" 2G 2 -append "snpm.memmap=0:a0,100:7ff00 snpm.stop_at_launch=1"
tap_check "RAM the host does not have, QEMU's way: the host stops the VM at the page-state change (QEMU exit $QEMU_RC)" \
	grep -q "^snpm: host: page-state change of GPA 0x70000000 .*not guest memory: the VM stops here" "$tmp/q.log"
# QEMU's own map covers the legacy window [0xa0000, 0x100000), which no host
# backs: csvsm leaves it alone, so the default boot never stops there.
snpm_qemu "$tmp/w.log" 2G 1 -append "snpm.memmap=0:70000 snpm.stop_at_launch=1"
tap_check "QEMU's map, RAM from 0 (snpm.memmap=0:70000): csvsm skips the legacy window and the audit is clean (QEMU exit $QEMU_RC)" \
	test "$QEMU_RC" -eq 1 -a "$(field unvalidated_ranges "$(grep -m1 '^snpm: accept-audit: ' "$tmp/w.log")")" = "$(fw_host_pages)"

refuse "a CPUID page hiding AES-NI and PCLMULQDQ" "snpm.cpuid_hide_aes=1" "cpuid: refused: the CPUID page hides AES-NI and PCLMULQDQ"
refuse "a vCPU count of 0" "snpm.vp_count=0" "vcpus: refused: the host says 0 vCPUs"
refuse "more vCPUs than csvsm runs on (65)" "snpm.vp_count=41" "vcpus: refused: the host says 65 vCPUs"
refuse "the boot processor's APIC ID listed twice" "snpm.madt=0,0" "madt: refused: APIC ID 0 listed twice"
refuse "an AP's APIC ID listed twice" "snpm.madt=0,1,1" "madt: refused: APIC ID 1 listed twice"

# A MADT naming an APIC ID no vCPU has: the host refuses that AP's creation
# and csvsm goes on with the vCPUs that came online.
snpm_qemu "$tmp/a.log" 2G 2 -append "snpm.madt=0,7 snpm.stop_at_launch=1"
aud=$(grep -m1 '^snpm: accept-audit: ' "$tmp/a.log")
tap_check "an APIC ID no vCPU has: csvsm runs on 1 of 2 vCPUs and accepts everything (QEMU exit $QEMU_RC)" \
	test "$QEMU_RC" -eq 1 -a "$(field unvalidated_ranges "$aud")" = "$(fw_host_pages)" -a "$(field vcpus "$(grep -m1 '^csvsm: accept: ' "$tmp/a.log")")" = 1

# The true map, given explicitly, is accepted and every page accepted.
snpm_qemu "$tmp/g.log" 2G 1 -append "snpm.memmap=0:a0,100:6ff00 snpm.stop_at_launch=1"
aud=$(grep -m1 '^snpm: accept-audit: ' "$tmp/g.log")
tap_check "the true map given explicitly: accepted, RMP audit clean (QEMU exit $QEMU_RC)" \
	test "$QEMU_RC" -eq 1 -a "$(field unvalidated_ranges "$aud")" = "$(fw_host_pages)" -a "$(field no_guest_access "$aud")" = 0

# Pages without data as the PSP ZERO type (a VMM such as Vanadium), not
# QEMU + KVM's NORMAL pages of zeros: the other digest, and only that one.
snpm_qemu "$tmp/z.log" 2G 1 -append "snpm.zero_pages=zero snpm.stop_at_launch=1"
got=$(sed -n 's/^snpm: launch: measurement=\([0-9a-f]*\) .*/\1/p' "$tmp/z.log")
tap_check "snpm.zero_pages=zero: the launch digest is csvsm-measure --zero-pages zero's, not the default's (QEMU exit $QEMU_RC)" \
	test "$QEMU_RC" -eq 1 -a -n "$got" -a "$got" = "$("$MEASURE" --igvm "$CSVSM_IGVM" --zero-pages zero)" \
	-a "$got" != "$("$MEASURE" --igvm "$CSVSM_IGVM")"
snpm_qemu "$tmp/y.log" 2G 1 -append "snpm.zero_pages=native"
tap_check "a malformed snpm.zero_pages= is the machine's own error (QEMU exit $QEMU_RC)" \
	grep -q 'bad snpm.zero_pages= value' "$tmp/y.log"

snpm_qemu "$tmp/b.log" 2G 1 -append "snpm.memmap=0:a0,zz"
tap_check "a malformed snpm.memmap= is the machine's own error (QEMU exit $QEMU_RC)" \
	grep -q 'bad snpm.memmap= value' "$tmp/b.log"
[ "$TAP_FAILS" -eq 0 ]
