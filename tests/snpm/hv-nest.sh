#!/usr/bin/env bash
# A host that nests #HV injections into VMPL0 (hostile review of the #HV
# change, finding 1). Restricted injection lets the host inject #HV at any
# instruction; with the handler's page unmapped in VMPL0's nested table
# each delivery pushes a frame and exits again before the handler's first
# instruction (snpm.hv_nest=ADDR, tests/snpm/hv/svm.c hv_nest_exit). The
# machine starts at VMPL0's first exit with its IDT loaded.
#
# csvsm's #HV gate uses an IST stack (issue 34 item 1, src/exception.S):
# every delivery writes its frame at the same IST top, so RSP cannot walk;
# after the host's 4096 injections it lets the handler run, which finds
# itself interrupted on its own IST stack (the first frame is gone) and
# terminates with reason set 1, code 0xC0 | 28. Without the IST stack the
# same run walks RSP down 48 bytes a frame (1360 frames) until a push
# faults in the guard pages under the boot stack; before csvsm unmapped
# that guard, the walk went through the .bss below (848 bytes of
# `platform`'s page changed). Builds nothing: `make` first.
set -u
cd "$(dirname "$0")/../.."
. tests/qemu/lib.sh
PROBE=${PROBE:-build/probe.efi}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
snpm_need "$PROBE"
QEMU_TIMEOUT=${QEMU_TIMEOUT_HV_NEST:-120}
ELF=${CSVSM_ELF:-build/csvsm.elf}
sym() { nm -S "$ELF" | awk -v s="$1" '$NF == s {print $1; exit}' | sed 's/^0*//'; }
symsize() { nm -S "$ELF" | awk -v s="$1" '$NF == s && NF == 4 {print $2; exit}'; }
plat=$(sym platform) stack=$(sym boot_stack) ist=$(sym boot_ist) istsize=$(symsize boot_ist)
tap_check "csvsm.elf has the symbols the run needs (platform 0x${plat:-?}, boot_stack 0x${stack:-?}, boot_ist 0x${ist:-?})" \
	test -n "$plat" -a -n "$stack" -a -n "$ist" -a -n "$istsize"
# shellcheck disable=SC2046
snpm_qemu "$tmp/h.log" 2G 2 $(snpm_guest_args probe 2G 2 "$PROBE") -append "snpm.hv_nest=${plat:-8}"
log=$tmp/h.log
armed=$(grep -m1 '^snpm: hv-nest: VMPL0.s IDT is loaded' "$log")
line=$(grep -m1 '^snpm: hv-nest: [0-9]* #HV injected' "$log")
term=$(grep -m1 'guest requested termination' "$log")
echo "# ${armed:-no 'IDT is loaded' line}"
echo "# ${line:-no hv-nest result line}"
echo "# ${term:-no termination line}"
tap_check "the host armed the attack at VMPL0's first exit with its IDT loaded (handler page unmapped, #HV injected)" test -n "$armed"
n=$(sed -n 's/^snpm: hv-nest: \([0-9]*\) #HV injected.*/\1/p' <<<"$line")
rsp=$(sed -n 's/.*RSP 0x[0-9a-f]* -> 0x\([0-9a-f]*\) .*/\1/p' <<<"$line")
low=$(sed -n 's/.*(lowest 0x\([0-9a-f]*\),.*/\1/p' <<<"$line")
high=$(sed -n 's/.*, highest 0x\([0-9a-f]*\)).*/\1/p' <<<"$line")
tap_check "the attack ran: the host's 4096 nested #HV frames pushed (${n:-none})" test "${n:-0}" -eq 4096
tap_check "RSP never walked: every frame at the same place (lowest 0x${low:-?}, highest 0x${high:-?}, last 0x${rsp:-?})" \
	test -n "$rsp" -a "${rsp:-x}" = "${low:-y}" -a "${rsp:-x}" = "${high:-z}"
on_ist() { [ -n "$rsp" ] && [ $((0x$rsp)) -ge $((0x$ist)) ] && [ $((0x$rsp)) -lt $((0x$ist + 0x$istsize)) ]; }
tap_check "the frames landed on the boot vCPU's IST stacks (boot_ist 0x${ist:-?}, +0x${istsize:-?}), not on its boot stack" on_ist
tap_check "csvsm found the #HV interrupted on its own IST stack and terminated (reason set 1, code 0xdc)" \
	grep -q '^snpm: guest requested termination (reason set 1 code 220)' "$log"
tap_check "the .bss page under the boot stack (platform's) is unchanged" \
	grep -q '^snpm: hv-nest: .*: 0 bytes changed$' "$log"
tap_check "the VM stopped with failure status (QEMU exit $QEMU_RC, want 3), and csvsm ran nothing of the guest's" \
	bash -c "test '$QEMU_RC' -eq 3 && ! grep -qE '^[0-9]+ passed, [0-9]+ failed' '$log'"
[ "$TAP_FAILS" -eq 0 ]
