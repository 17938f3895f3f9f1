#!/usr/bin/env bash
# A VMRUN that fails its consistency checks, as the machine reports it
# (issue 17 item 5, docs/snp-machine.md "Multi-threaded TCG"). QEMU's
# helper_vmrun sets HF_GUEST_MASK before it checks the new CR0/CR3/CR4/
# DR6/DR7/EFER, and the #VMEXIT of a failed check (do_vmexit) writes the
# CPU's state, still the host's, into the VMCB's save area: the "VMCB
# holding the host's own state" once seen under multi-threaded TCG and
# taken for a TCG fault. snpm.vmrun_invalid=1 gives VMPL0's first VMRUN
# CR0.NW without CR0.CD (APM vol. 2 §15.5.1); the machine must name that
# check from what it gave VMRUN, not panic on the save area, and stop.
# Two vCPUs under multi-threaded TCG. Builds nothing: `make` first.
set -u
cd "$(dirname "$0")/../.."
. tests/qemu/lib.sh
PROBE=${PROBE:-build/probe.efi}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
snpm_need "$PROBE"
QEMU_TIMEOUT=${QEMU_TIMEOUT_VMRUN:-120}
QEMU_ACCEL=tcg
# shellcheck disable=SC2046
snpm_qemu "$tmp/v.log" 2G 2 $(snpm_guest_args probe 2G 2 "$PROBE") -append "snpm.vmrun_invalid=1"
log=$tmp/v.log
planted=$(grep -m1 'VMPL0: CR0.NW set without CR0.CD for one VMRUN' "$log")
line=$(grep -m1 'VMRUN failed its consistency checks (VMEXIT_INVALID)' "$log")
echo "# planted: ${planted:-none}"
echo "# reported: ${line:-none}"
tap_check "the machine planted CR0.NW without CR0.CD in VMPL0's first VMRUN" test -n "$planted"
tap_check "the machine reports VMEXIT_INVALID naming the failed check (CR0.NW is set and CR0.CD clear)" \
	grep -q 'VMPL0: VMRUN failed its consistency checks (VMEXIT_INVALID): CR0.NW is set and CR0.CD clear; cr0 0x[0-9a-f]*' "$log"
cr0=$(sed -n 's/.*(VMEXIT_INVALID): [^;]*; cr0 \(0x[0-9a-f]*\) .*/\1/p' "$log" | head -n1)
tap_check "the reported CR0 (${cr0:-none}) is what VMRUN was given: NW (bit 29) set, CD (bit 30) clear" \
	test -n "$cr0" -a $(((${cr0:-0} >> 29) & 3)) -eq 1
tap_check "QEMU left the host's state in the save area (save-area=host: its CR3 and CS), what was once taken for a TCG fault" \
	grep -q 'VMEXIT_INVALID.*; save-area=host$' "$log"
# The absences below mean something only in a log that reached the failed
# VMRUN and the machine's end line after it.
end=$(tail -n1 "$log")
tap_check "no panic on the save area QEMU wrote (the host's state), in a run that reported the failed VMRUN and ended ('${end:0:40}')" \
	bash -c "test -n \"\$1\" -a \"\$2\" = 'snpm: end: failure' && ! grep -q 'holds the machine.s own state\|holds csvsm.s own state' '$log'" _ "$line" "$end"
tap_check "the VM stopped with failure status (QEMU exit $QEMU_RC, want 3)" test "$QEMU_RC" -eq 3
tap_check "the guest never ran (no csvsm line, no probe summary before the machine's end line)" \
	bash -c "test \"\$1\" = 'snpm: end: failure' && ! grep -qE '^csvsm: |^[0-9]+ passed, [0-9]+ failed' '$log'" _ "$end"
[ "$TAP_FAILS" -eq 0 ]
