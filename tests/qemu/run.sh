#!/usr/bin/env bash
# `make run`: boot csvsm under QEMU TCG with the console on this terminal;
# csvsm pre-accepts memory, then runs OVMF at VMPL2 with a guest:
#   GUEST=probe (default)  the probe (or PROBE=) as OVMF's kernel; Debian's
#                          OVMF (OVMF_FD=) unless told otherwise
#   GUEST=linux            trixie's SVSM-aware OVMF and trixie-backports'
#                          Linux with the test initramfs (tests/linux), all
#                          vCPUs, as an SEV-SNP guest
# Usage: tests/qemu/run.sh [MEM=4G] [SMP=2] [GUEST=probe|linux] [PROBE=file.efi|none]
#                [APPEND="csvsm.x=y"] [KAPPEND="linux args"] [extra qemu args]
set -u
cd "$(dirname "$0")/../.."
MEM=4G SMP=2 APPEND="" KAPPEND="" PROBE=build/probe.efi GUEST=probe
args=()
for a in "$@"; do
	case "$a" in
	MEM=*) MEM=${a#MEM=} ;;
	SMP=*) SMP=${a#SMP=} ;;
	APPEND=*) APPEND=${a#APPEND=} ;;
	KAPPEND=*) KAPPEND=${a#KAPPEND=} ;;
	PROBE=*) PROBE=${a#PROBE=} ;;
	GUEST=*) GUEST=${a#GUEST=} ;;
	*) args+=("$a") ;;
	esac
done
if [ "$GUEST" = linux ]; then
	OVMF_FD=${OVMF_FD:-build/guests/OVMF.fd}
fi
[ -n "${QEMU_ACCEL:-}" ] && QEMU_ACCEL_SET=1
. tests/qemu/lib.sh
[ -n "$APPEND" ] && args+=(-append "$APPEND")
case "$GUEST" in
probe)
	[ "$PROBE" = none ] && PROBE=""
	if [ -n "$PROBE" ] && [ ! -f "$PROBE" ]; then echo "csvsm: no such probe: $PROBE" >&2; exit 2; fi
	# shellcheck disable=SC2207
	args+=($(guest_args "$PROBE"))
	;;
linux)
	[ -n "${QEMU_ACCEL_SET:-}" ] || QEMU_ACCEL=$(linux_accel "$SMP")
	if ! lx=$(linux_guest_args "$MEM" "$SMP" "$KAPPEND"); then exit 2; fi
	# shellcheck disable=SC2206
	args+=($(guest_args) $lx)
	args+=(-fw_cfg "name=opt/csvsm/linux/cmdline,string=$(linux_cmdline "$MEM" "$SMP" "$KAPPEND")")
	;;
*) echo "csvsm: GUEST=$GUEST: use probe or linux" >&2; exit 2 ;;
esac
secrets=$(mktemp)
trap 'rm -f "$secrets"' EXIT
# shellcheck disable=SC2046
timeout --foreground -k 5 "${RUN_TIMEOUT:-600}" "$QEMU" -machine "$QEMU_MACHINE" -accel "$QEMU_ACCEL" -cpu "$QEMU_CPU" \
	-m "$MEM" -smp "$SMP" -nodefaults -net none -display none -no-reboot -serial stdio \
	-device isa-debug-exit,iobase=0xf4,iosize=0x04 -kernel "$CSVSM_ELF" $(launch_args "$secrets") \
	"${args[@]}" 2> >(grep -v "TCG doesn't support requested feature" >&2)
rc=$?
case $rc in
1) echo "csvsm: VM ended with success status" ;;
124) echo "csvsm: stopped after ${RUN_TIMEOUT:-600}s: the VM did not end by itself (guest hung?)"; exit 1 ;;
*) echo "csvsm: VM ended with status $rc (failure)"; exit 1 ;;
esac
