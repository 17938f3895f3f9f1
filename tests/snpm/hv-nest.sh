#!/usr/bin/env bash
# A host that nests #HV injections into VMPL0 (hostile review of the #HV
# change, finding 1). Restricted injection lets the host inject #HV at any
# instruction; with the handler's page unmapped in VMPL0's nested table
# each delivery pushes a 48-byte frame and exits again before the handler's
# first instruction, so RSP walks down with csvsm running nothing
# (snpm.hv_nest=ADDR, tests/snpm/hv/svm.c hv_nest_exit). The machine starts
# at VMPL0's first exit with its IDT loaded. csvsm unmaps the 16 KiB of
# guard pages under its boot stack before it loads the IDT, so the walk
# must end at the stack's lowest frame in a shutdown, with the .bss page
# under the stack (`platform`) untouched. Before that order, the same run
# walked 4096 frames through the guard and .bss (848 bytes of `platform`'s
# page changed) and the VM hung. Builds nothing: `make` first.
set -u
cd "$(dirname "$0")/../.."
. tests/qemu/lib.sh
PROBE=${PROBE:-build/probe.efi}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
snpm_need "$PROBE"
QEMU_TIMEOUT=${QEMU_TIMEOUT_HV_NEST:-120}
sym() { nm build/csvsm.elf | awk -v s="$1" '$3 == s {print $1}' | sed 's/^0*//'; }
plat=$(sym platform) stack=$(sym boot_stack)
tap_check "csvsm.elf has the symbols the run needs (platform 0x${plat:-?}, boot_stack 0x${stack:-?})" \
	test -n "$plat" -a -n "$stack"
# shellcheck disable=SC2046
snpm_qemu "$tmp/h.log" 2G 2 $(snpm_guest_args probe 2G 2 "$PROBE") -append "snpm.hv_nest=${plat:-8}"
log=$tmp/h.log
armed=$(grep -m1 '^snpm: hv-nest: VMPL0.s IDT is loaded' "$log")
line=$(grep -m1 '^snpm: hv-nest: [0-9]* #HV injected' "$log")
echo "# ${armed:-no 'IDT is loaded' line}"
echo "# ${line:-no hv-nest result line}"
tap_check "the host armed the attack at VMPL0's first exit with its IDT loaded (handler page unmapped, #HV injected)" test -n "$armed"
n=$(sed -n 's/^snpm: hv-nest: \([0-9]*\) #HV injected.*/\1/p' <<<"$line")
rsp=$(sed -n 's/.*RSP 0x[0-9a-f]* -> 0x\([0-9a-f]*\),.*/\1/p' <<<"$line")
tap_check "the attack ran: more than 1000 nested #HV frames pushed (${n:-none})" test "${n:-0}" -gt 1000
tap_check "the walk ended in a shutdown when a push faulted, not after the host's 4096" \
	grep -q '^snpm: hv-nest: .*then shutdown (a push faulted)' "$log"
tap_check "it ended at the boot stack's lowest frame (RSP 0x${rsp:-?} within 48 bytes above boot_stack 0x${stack:-?})" \
	test -n "$rsp" -a -n "$stack" -a $((0x${rsp:-0} - 0x${stack:-0})) -ge 0 -a $((0x${rsp:-0} - 0x${stack:-0})) -lt 48
tap_check "the .bss page under the stack (platform's) is unchanged" \
	grep -q '^snpm: hv-nest: .*: 0 bytes changed$' "$log"
tap_check "the VM stopped with failure status (QEMU exit $QEMU_RC, want 3), and csvsm ran nothing of the guest's" \
	bash -c "test '$QEMU_RC' -eq 3 && ! grep -qE '^[0-9]+ passed, [0-9]+ failed' '$log'"
[ "$TAP_FAILS" -eq 0 ]
