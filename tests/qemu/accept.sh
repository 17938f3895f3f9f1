#!/usr/bin/env bash
# QEMU test: pre-acceptance of all guest memory (issue 2). Boots csvsm with no
# guest firmware (it ends after acceptance) and checks, from its console:
# missing=0 double=0, the counts equal what the planner predicts
# (build/csvsm-accept-plan over the memory map csvsm printed), each vCPU did
# at least a quarter of the bytes with -smp 2, the 4K-only host range makes
# the 2M -> 4K fallback run, and csvsm ends with a success status.
set -u
cd "$(dirname "$0")/../.."
. tests/qemu/lib.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

check_boot() { # name smp log [plan args...]
	local name=$1 smp=$2 log=$3
	shift 3
	tap_check "$name: csvsm ended with success status (QEMU exit 1, got $QEMU_RC)" test "$QEMU_RC" -eq 1
	local acc chk
	acc=$(grep -m1 '^csvsm: accept: ' "$log")
	chk=$(grep -m1 '^csvsm: accept-check: ' "$log")
	tap_check "$name: accept line printed" test -n "$acc"
	tap_check "$name: accept-check missing=0 double=0 ($chk)" \
		test "$(field missing "$chk")" = 0 -a "$(field double "$chk")" = 0 -a "$(field pages "$chk")" -gt 0
	local plan
	plan=$(build/csvsm-accept-plan --vcpus "$smp" "$@" <"$log")
	tap_check "$name: counts equal the planner's prediction ($plan)" grep -qF "csvsm: accept: $plan" "$log"
	local total
	total=$(field bytes "$acc")
	tap_check "$name: vcpus=$smp in the accept line" test "$(field vcpus "$acc")" = "$smp"
	local n=0 ok=1
	while read -r line; do
		n=$((n + 1))
		b=$(field bytes "$line")
		if [ "$smp" -gt 1 ] && [ $((b * 4)) -lt "$total" ]; then ok=0; fi
	done < <(grep '^csvsm: accept-vcpu: ' "$log")
	tap_check "$name: one accept-vcpu line per vCPU ($n), each >= 1/4 of $total bytes" test "$n" -eq "$smp" -a "$ok" -eq 1
	if grep -q 'FAULT\|PANIC' "$log"; then tap_fail "$name: no fault or panic"; else tap_ok "$name: no fault or panic"; fi
}

csvsm_qemu "$tmp/a.log" 4G 2
check_boot "4G smp2" 2 "$tmp/a.log"

# A 4 MiB range the simulated hypervisor backs with 4K pages only.
csvsm_qemu "$tmp/b.log" 4G 2 -append "csvsm.sim_4k_only=10000000-10400000"
check_boot "4G smp2 4K-only" 2 "$tmp/b.log" --4k-only 10000000-10400000
a4k=$(field pvalidate_4k "$(grep -m1 '^csvsm: accept: ' "$tmp/a.log")")
b4k=$(field pvalidate_4k "$(grep -m1 '^csvsm: accept: ' "$tmp/b.log")")
tap_check "4K-only range: 2 x 512 more 4K PVALIDATEs after the 2M size mismatch ($a4k -> $b4k)" \
	test "$((b4k - a4k))" -eq 1024

csvsm_qemu "$tmp/c.log" 2G 1
check_boot "2G smp1" 1 "$tmp/c.log"

# A hypervisor that handles at most 64 page-state entries per exit (KVM
# completes each request; a host may stop early): csvsm resumes the rest.
csvsm_qemu "$tmp/d.log" 4G 2 -append "csvsm.sim_psc_limit=64"
check_boot "4G smp2 PSC limit 64" 2 "$tmp/d.log" --psc-limit 64
a_psc=$(field psc_calls "$(grep -m1 '^csvsm: accept: ' "$tmp/a.log")")
d_psc=$(field psc_calls "$(grep -m1 '^csvsm: accept: ' "$tmp/d.log")")
tap_check "PSC limit 64: more page-state round trips than a host that completes each ($a_psc -> $d_psc)" \
	test "$d_psc" -gt "$a_psc"
csvsm_qemu "$tmp/e.log" 2G 1 -append "csvsm.sim_psc_limit=x"
tap_check "csvsm.sim_psc_limit=x refused with failure status (QEMU exit $QEMU_RC)" test "$QEMU_RC" -eq 3
