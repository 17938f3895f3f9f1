#!/usr/bin/env bash
# Faults as a KVM host sees them (docs/snp-machine.md, issue 17 item 6): the
# probe variants build/guest/probe-fault{1,2,3}.efi each make one access a
# guest cannot go on from, at VMPL2 in the SNP machine, and the machine must
# answer it as SEV-SNP hardware, KVM and QEMU do, never with the #GP(0) it
# used to inject:
#  1. a shared (C=0) read of csvsm's first page (OVMF maps csvsm's region
#     without the C-bit): KVM_EXIT_MEMORY_FAULT, QEMU converts the page to
#     shared and csvsm's copy is lost (issue 34 item 6). The page holds
#     only csvsm's boot code (linker.ld), which it never runs again: csvsm
#     serves on, never touches the page and never validates it again, and
#     the run ends as usual;
#  2. a private write to a VMSA page the guest may only read: an RMP
#     violation KVM re-enters on forever; the machine sees the fault come
#     back unchanged and stops (exit status 5);
#  3. a private read of a page the host made private without a PVALIDATE:
#     #VC 0x404 (PAGE_NOT_VALIDATED) to the guest, whose handler (OVMF's)
#     decides; the run goes on to its end;
#  4. the same conversion of a page csvsm does use (the code page of
#     libtpms' ExecuteCommand, run for every vTPM command, from nm; the host converts it at the
#     guest's launch, snpm.convert_csvsm=, as it would on a guest's C=0
#     read of it): csvsm's next access is a private access to a shared page,
#     which KVM and QEMU convert back (assigned, not validated), and then
#     #VC 0x404 to csvsm's own handler, which ends the VM cleanly (its
#     "host tampering" report, the termination request, the key wipe)
#     without validating the page again.
# Builds nothing: `make` first.
set -u
cd "$(dirname "$0")/../.."
. tests/qemu/lib.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for n in 1 2 3; do
	f=build/guest/probe-fault$n.efi
	for g in "$SNPM_ELF" "$CSVSM_IGVM" "$f"; do
		if [ ! -f "$g" ]; then echo "not ok 1 - $g exists (build it with make)"; exit 1; fi
	done
done
QEMU_TIMEOUT=${QEMU_TIMEOUT_FAULTS:-400} # a hang guard: a whole probe run each
PSP_KEYS=build/test-chain/psp-keys.bin

run() { # run N: the probe variant N with one vCPU; log in $tmp/fN.log
	# shellcheck disable=SC2046
	snpm_qemu "$tmp/f$1.log" 2G 1 $(snpm_guest_args probe 2G 1 "build/guest/probe-fault$1.efi")
}
no_old_gp() { # the machine's old answer, and the probe's old "blocked: #GP" lines
	# Only in a run where the probe announced its access ("# fault: ...") and
	# that reached the machine's end line: an empty or cut-off log has no #GP.
	grep -q '^# fault: ' "$1" && tail -n1 "$1" | grep -q '^snpm: end: ' &&
		! grep -q '#GP(0) injected' "$1"
}

run 1
log=$tmp/f1.log
grep -E '^snpm: host|^# fault|^snpm: npf|^snpm: csvsm-pages' "$log" | sed 's/^/# 1: /'
tap_check "C=0 read of csvsm memory: KVM_EXIT_MEMORY_FAULT, QEMU converts the page to shared" \
	grep -qE '^snpm: host: KVM_EXIT_MEMORY_FAULT: guest VMPL2 read with C=0 at gpa 0xfc000000 .*converts it to shared \(kvm_convert_memory\)' "$log"
tap_check "csvsm's private page is lost, and the machine goes on (it sees csvsm's next access to it)" \
	grep -q "^snpm: host: gpa 0xfc000000 is csvsm's own memory: its private page is discarded" "$log"
tap_check "the read returned to the probe, csvsm answered its next call, and the run reached its end (QEMU exit $QEMU_RC)" \
	eval 'grep -q "^# fault: the read returned" "$log" && grep -q "^# fault: csvsm answers after the read: SUCCESS RCX 0x100000001" "$log" && [ "$QEMU_RC" -eq 1 ] && [ "$(tail -n1 "$log")" = "snpm: end: success" ]'
tap_check "csvsm never touched the page again (boot code only): no conversion back, no #VC 0x404 at VMPL0" \
	grep -q '^snpm: npf: .* vmpl0-vc-not-validated=0 vmpl0-to-private=0 csvsm-pages-lost=1$' "$log"
tap_check "csvsm never validated the page again" grep -q '^snpm: csvsm-pages: lost=1 revalidated=0$' "$log"
tap_check "no #GP injected for it (the probe made the access, the run ended)" no_old_gp "$log"

run 2
log=$tmp/f2.log
grep -E '^snpm: guest VMPL|^# fault' "$log" | sed 's/^/# 2: /'
tap_check "write to a read-only VMSA page: an RMP violation KVM re-enters on; the machine stops" \
	grep -qE '^snpm: guest VMPL2 write at gpa 0x[0-9a-f]+ .*RMP violation \(#NPF error 0x1580000007: RMP, ENC, VMPL; RMP: private validated VMSA, VMPL2 perms 0x1\) seen 3 times: KVM re-enters, the guest would hang; stopping' "$log"
tap_check "the write did not return to the probe, and the VM ended with status 5 (QEMU exit $QEMU_RC)" \
	eval '! grep -q "^# fault: the write returned" "$log" && [ "$QEMU_RC" -eq 5 ] && [ "$(tail -n1 "$log")" = "snpm: end: failure" ]'
tap_check "no #GP injected for it (the probe made the access, the run ended)" no_old_gp "$log"

run 3
log=$tmp/f3.log
grep -E '^snpm: guest VMPL|^# fault|^snpm: npf' "$log" | sed 's/^/# 3: /'
tap_check "C=1 read of a private page not validated: #VC 0x404 to the guest" \
	grep -qE '^snpm: guest VMPL2 read at gpa 0x[0-9a-f]+ .*private page not validated: #VC 0x404 \(PAGE_NOT_VALIDATED\)' "$log"
# OVMF's #VC handler forwards an exit code it does not know to the host
# (UnsupportedExit), which refuses it as KVM does, and raises #GP itself:
# the probe's handler sees vector 13 from OVMF, not from the machine.
tap_check "the guest's own #VC handler took it and the probe resumed (OVMF turns it into #GP)" \
	grep -q '^# fault: the read returned (fault vector 13)' "$log"
tap_check "counted once, and the run reached its end (QEMU exit $QEMU_RC)" \
	eval 'grep -q "^snpm: npf: vc-not-validated=1 " "$log" && [ "$QEMU_RC" -eq 1 ]'
tap_check "no #GP injected by the machine (the probe made the access, the run ended)" no_old_gp "$log"
# A run that did not end as it should leaves its last lines for the record.
[ "$QEMU_RC" -eq 1 ] || tail -n 30 "$log" | sed 's/^/# 3: tail: /'

# 4: a page of code csvsm runs for every vTPM command after the guest's
# launch and that holds none of csvsm's own code: libtpms' ExecuteCommand
# (ExecCommand.c). Not a page of csvsm's own objects: one that also held its
# #VC or termination path (the stubs, the GHCB helpers) could only end in a
# shutdown, on hardware as here (docs/snp-machine.md), and which of csvsm's
# functions share a page moves with every change.
elf=${CSVSM_IGVM%.igvm}.elf
req=$(nm "$elf" 2>/dev/null | sed -n 's/^\([0-9a-f]*\) T ExecuteCommand$/\1/p')
page=$(printf '0x%x' $((0x${req:-0} & ~0xfff)))
own=$(find build/image -name '*.o' ! -path 'build/image/tests/*' -print0 | xargs -0 nm --defined-only 2>/dev/null | awk 'NF == 3 { print $3 }' | sort -u)
inpage=$(nm -n "$elf" | awk -v lo="$(printf '%016x' "$page")" -v hi="$(printf '%016x' $((page + 0x1000)))" '$1 >= lo && $1 < hi { print $3 }' | sort -u)
mine=$(comm -12 <(echo "$inpage") <(echo "$own") | tr '\n' ' ')
tap_check "the page $page (ExecuteCommand 0x${req:-none}) holds $(echo "$inpage" | grep -c .) symbols, none of csvsm's own objects (${mine:-none})" \
	test -n "$req" -a -n "$inpage" -a -n "$own" -a -z "$mine"
log=$tmp/f4.log
# shellcheck disable=SC2046
snpm_qemu "$log" 2G 1 $(snpm_guest_args probe 2G 1 build/probe.efi) -append "snpm.convert_csvsm=$page"
grep -E '^snpm: (host|hostile|VMPL0|csvsm-pages|terminating|key-scan)|host tampering' "$log" | sed 's/^/# 4: /'
tap_check "the host converted csvsm's page $page (ExecuteCommand 0x${req:-none}) at the guest's launch" \
	grep -q "^snpm: hostile: the host converts csvsm's page $page to shared" "$log"
tap_check "csvsm's next access to it, private to a shared page: KVM and QEMU convert it back" \
	grep -qE "^snpm: host: KVM_EXIT_MEMORY_FAULT: guest VMPL0 execute with C=1 at gpa $page .*converts it to private" "$log"
tap_check "then #VC 0x404 to csvsm's own #VC handler" \
	grep -qE "^snpm: VMPL0 execute at gpa ${page%???}[0-9a-f]{3} .*private page not validated: #VC 0x404 \(PAGE_NOT_VALIDATED\) to csvsm" "$log"
tap_check "csvsm reports host tampering with its own page, at a rip in it" \
	grep -qE "host tampering: a page of csvsm's own is no longer validated: #VC 0x404 \(PAGE_NOT_VALIDATED\) at rip ${page%???}[0-9a-f]{3} " "$log"
ks=$(grep -m1 '^snpm: key-scan: VMPL0 terminated' "$log")
tap_check "csvsm terminated cleanly: its termination request, the wipe (no VMPCK left: $(field pages "$ks") pages searched), no fault dump (QEMU exit $QEMU_RC)" \
	eval '[ "$QEMU_RC" -eq 3 ] && [ "$(tail -n1 "$log")" = "snpm: end: failure" ] && grep -q "guest requested termination (reason set 1 code 255)" "$log" && [ -n "$ks" ] && [ "$(field vmpck0 "$ks")" = 0 ] && ! grep -qE "csvsm: FAULT|cannot be delivered|shut down" "$log"'
tap_check "csvsm never validated the page again" grep -q '^snpm: csvsm-pages: lost=1 revalidated=0$' "$log"
[ "$QEMU_RC" -eq 3 ] || tail -n 30 "$log" | sed 's/^/# 4: tail: /'
[ "$TAP_FAILS" -eq 0 ]
