#!/usr/bin/env bash
# Pre-acceptance on csvsm's snp platform, audited by the SNP machine's RMP
# model (which csvsm itself cannot read). The machine stops the VM when
# csvsm first runs the guest VMPL (snpm.stop_at_launch=1) after printing
# `snpm: accept-audit:`: every page of the guest's RAM must then be
# validated and readable and writable at the guest VMPL. Checks, per boot:
# csvsm's own accept line, one accept-vcpu line per vCPU with a fair share,
# the audit clean, and the machine's success status. Both backings a KVM
# host gives: 4K pages (guest_memfd, the machine's default), where every 2M
# PVALIDATE fails with FAIL_SIZEMISMATCH and csvsm validates 512 x 4K, and
# 2 MiB pages (snpm.backing=2m, a hugepage-backed host), where csvsm's 2M
# PVALIDATEs succeed; there, a range the host backs with 4K pages only
# (snpm.4k_only=) falls back to 4K. Bad options are refused.
set -u
cd "$(dirname "$0")/../.."
. tests/qemu/lib.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
snpm_need
QEMU_TIMEOUT=400 # a hang guard: 4K backing takes ~30 s of acceptance per 4 GiB here; slower CI hosts more

check_boot() { # name smp log
	local name=$1 smp=$2 log=$3 acc aud total n=0 ok=1 b left
	tap_check "$name: the machine ended with success status (QEMU exit 1, got $QEMU_RC)" test "$QEMU_RC" -eq 1
	acc=$(grep -m1 '^csvsm: accept: ' "$log")
	aud=$(grep -m1 '^snpm: accept-audit: ' "$log")
	echo "# $acc"
	echo "# $aud"
	tap_check "$name: csvsm's snp platform tried 2M PVALIDATEs first ($(field pvalidate_2m "$acc"))" \
		test "$(field pvalidate_2m "$acc")" -gt 0
	tap_check "$name: RMP audit: every guest RAM page validated and guest-accessible but the firmware's own ($(fw_host_pages))" \
		test "$(field unvalidated_ranges "$aud")" = "$(fw_host_pages)" \
		-a "$(field no_guest_access "$aud")" = 0 -a "$(field pages "$aud")" -gt 0
	# What csvsm left out, as its dashboard says: the firmware's pages, the
	# same list an independent reading of the OVMF image gives (and the RMP
	# audit above finds unvalidated), and the legacy window of QEMU's map.
	left=$(grep -o 'not pre-accepted 0x[0-9a-f]*-0x[0-9a-f]*: left to the host' "$log" | awk '{print $3}' | tr -d : | paste -sd, -)
	tap_check "$name: the dashboard names the pages left to the host (${left:-none}) and why" \
		test "${left:-none}" = "$(fw_host_pages)"
	tap_check "$name: the dashboard names the legacy window of QEMU's map as not pre-accepted" \
		grep -q 'not pre-accepted 0xa0000-0x100000: the host calls it RAM; it is the legacy VGA/SMRAM/PAM window' "$log"
	total=$(field bytes "$acc")
	tap_check "$name: vcpus=$smp in the accept line" test "$(field vcpus "$acc")" = "$smp"
	while read -r line; do
		n=$((n + 1))
		b=$(field bytes "$line")
		if [ "$smp" -gt 1 ] && [ $((b * 4)) -lt "$total" ]; then ok=0; fi
	done < <(grep '^csvsm: accept-vcpu: ' "$log")
	tap_check "$name: one accept-vcpu line per vCPU ($n), each >= 1/4 of $total bytes" test "$n" -eq "$smp" -a "$ok" -eq 1
	# Absence counts only once the run is shown to have reached its end: the
	# audit, then the machine's last line.
	if [ -n "$aud" ] && [ "$(tail -n1 "$log")" = "snpm: end: success" ] && ! grep -q 'FAULT\|PANIC\|panic' "$log"; then
		tap_ok "$name: no fault or panic (the run reached its end: the audit, then 'snpm: end: success')"
	else
		tap_fail "$name: no fault or panic (audit: ${aud:+yes}; last line: '$(tail -n1 "$log" | cut -c1-60)'; FAULT/PANIC lines: $(grep -c 'FAULT\|PANIC\|panic' "$log"))"
	fi
	[ "$QEMU_RC" -eq 1 ] || tail -n 20 "$log" | sed 's/^/# /'
}

# The default: 4K backing. Every 2M PVALIDATE is a size mismatch, every
# 2 MiB block is validated as 512 4K pages, and no 2M RMP entry exists.
snpm_qemu "$tmp/k.log" 4G 2 -append "snpm.stop_at_launch=1"
check_boot "4G smp2 4K backing" 2 "$tmp/k.log"
k=$(grep -m1 '^csvsm: accept: ' "$tmp/k.log")
ka=$(grep -m1 '^snpm: accept-audit: ' "$tmp/k.log")
tap_check "4K backing: the machine says so (backing=$(field backing "$ka"))" test "$(field backing "$ka")" = 4k
tap_check "4K backing: every 2M PVALIDATE fell back ($(field pvalidate_2m "$k") tried, dashboard: $(grep -o '[0-9]* 2M->4K fallbacks' "$tmp/k.log"))" \
	grep -q "PVALIDATE, $(field pvalidate_2m "$k") 2M->4K fallbacks" "$tmp/k.log"
tap_check "4K backing: 512 4K PVALIDATEs per 2M tried, at least ($(field pvalidate_2m "$k") x 512 <= $(field pvalidate_4k "$k"))" \
	test "$(($(field pvalidate_2m "$k") * 512))" -le "$(field pvalidate_4k "$k")"
tap_check "4K backing: no 2M RMP entry in the guest's RAM (rmp_2m=$(field rmp_2m "$ka"))" test "$(field rmp_2m "$ka")" = 0

# 2 MiB backing (a hugepage host): 2M PVALIDATEs succeed.
snpm_qemu "$tmp/a.log" 4G 2 -append "snpm.stop_at_launch=1 snpm.backing=2m"
check_boot "4G smp2 2M backing" 2 "$tmp/a.log"
a=$(grep -m1 '^csvsm: accept: ' "$tmp/a.log")
aa=$(grep -m1 '^snpm: accept-audit: ' "$tmp/a.log")
tap_check "2M backing: no 2M->4K fallback" grep -q 'PVALIDATE, 0 2M->4K fallbacks' "$tmp/a.log"
tap_check "2M backing: 2M RMP entries ($(field rmp_2m "$aa"))" test "$(field rmp_2m "$aa")" -gt 0
tap_check "2M backing: ~512x fewer 4K PVALIDATEs than 4K backing ($(field pvalidate_4k "$a") vs $(field pvalidate_4k "$k"))" \
	test "$(($(field pvalidate_4k "$a") * 100))" -lt "$(field pvalidate_4k "$k")"

snpm_qemu "$tmp/b.log" 4G 2 -append "snpm.stop_at_launch=1 snpm.backing=2m snpm.4k_only=10000000-10400000"
check_boot "4G smp2 2M backing, a 4K-only range" 2 "$tmp/b.log"
b=$(grep -m1 '^csvsm: accept: ' "$tmp/b.log")
tap_check "4K-only range: 2 x 512 more 4K PVALIDATEs after the 2M size mismatch ($(field pvalidate_4k "$a") -> $(field pvalidate_4k "$b"))" \
	test "$(($(field pvalidate_4k "$b") - $(field pvalidate_4k "$a")))" -eq 1024
tap_check "4K-only range: the dashboard counts 2 fallbacks" grep -q 'PVALIDATE, 2 2M->4K fallbacks' "$tmp/b.log"
ra=$(field rmp_2m "$aa")
rb=$(field rmp_2m "$(grep -m1 '^snpm: accept-audit: ' "$tmp/b.log")")
tap_check "4K-only range: 2 fewer 2M RMP entries ($ra -> $rb)" test "$((ra - rb))" -eq 2

snpm_qemu "$tmp/c.log" 2G 1 -append "snpm.stop_at_launch=1"
check_boot "2G smp1" 1 "$tmp/c.log"

snpm_qemu "$tmp/d.log" 2G 1 -append "snpm.4k_only=10000000"
tap_check "snpm.4k_only=10000000 refused with failure status (QEMU exit $QEMU_RC)" test "$QEMU_RC" -eq 3
tap_check "snpm.4k_only=10000000: the machine says why" grep -q 'bad snpm.4k_only= value' "$tmp/d.log"
snpm_qemu "$tmp/e.log" 2G 1 -append "snpm.backing=1g"
tap_check "snpm.backing=1g refused with failure status (QEMU exit $QEMU_RC)" test "$QEMU_RC" -eq 3
tap_check "snpm.backing=1g: the machine says why" grep -q 'bad snpm.backing= value' "$tmp/e.log"
[ "$TAP_FAILS" -eq 0 ]
