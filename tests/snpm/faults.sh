#!/usr/bin/env bash
# Faults as a KVM host sees them (docs/snp-machine.md, issue 17 item 6): the
# probe variants build/guest/probe-fault{1,2,3}.efi each make one access a
# guest cannot go on from, at VMPL2 in the SNP machine, and the machine must
# answer it as SEV-SNP hardware, KVM and QEMU do, never with the #GP(0) it
# used to inject:
#  1. a shared (C=0) read of csvsm's memory (OVMF maps it without the
#     C-bit): KVM_EXIT_MEMORY_FAULT, QEMU converts the page to shared, and
#     since csvsm has lost its page the machine stops (exit status 5);
#  2. a private write to a VMSA page the guest may only read: an RMP
#     violation KVM re-enters on forever; the machine sees the fault come
#     back unchanged and stops (exit status 5);
#  3. a private read of a page the host made private without a PVALIDATE:
#     #VC 0x404 (PAGE_NOT_VALIDATED) to the guest, whose handler (OVMF's)
#     decides; the run goes on to its end.
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
QEMU_TIMEOUT=${QEMU_TIMEOUT_FAULTS:-200}
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
grep -E '^snpm: host|^# fault' "$log" | sed 's/^/# 1: /'
tap_check "C=0 read of csvsm memory: KVM_EXIT_MEMORY_FAULT, QEMU converts the page to shared" \
	grep -qE '^snpm: host: KVM_EXIT_MEMORY_FAULT: guest VMPL2 read with C=0 at gpa 0xfc000000 .*converts it to shared \(kvm_convert_memory\)' "$log"
tap_check "csvsm lost its page: the machine stops (its next access is one the machine cannot see)" \
	grep -q "^snpm: host: gpa 0xfc000000 is csvsm's own memory: .*; stopping" "$log"
tap_check "the read did not return to the probe, and the VM ended with status 5 (QEMU exit $QEMU_RC)" \
	eval '! grep -q "^# fault: the read returned" "$log" && [ "$QEMU_RC" -eq 5 ] && [ "$(tail -n1 "$log")" = "snpm: end: failure" ]'
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
