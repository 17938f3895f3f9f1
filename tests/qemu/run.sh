#!/usr/bin/env bash
# `make run`: boot csvsm under QEMU TCG with the console on this terminal;
# csvsm pre-accepts memory, then runs OVMF with the probe (or PROBE=) as its
# kernel. Usage: tests/qemu/run.sh [MEM=4G] [SMP=2] [PROBE=file.efi|none]
#                [APPEND="csvsm.x=y"] [extra qemu args]
set -u
cd "$(dirname "$0")/../.."
. tests/qemu/lib.sh
MEM=4G SMP=2 APPEND="" PROBE=build/probe.efi
args=()
for a in "$@"; do
	case "$a" in
	MEM=*) MEM=${a#MEM=} ;;
	SMP=*) SMP=${a#SMP=} ;;
	APPEND=*) APPEND=${a#APPEND=} ;;
	PROBE=*) PROBE=${a#PROBE=} ;;
	*) args+=("$a") ;;
	esac
done
[ -n "$APPEND" ] && args+=(-append "$APPEND")
[ "$PROBE" = none ] && PROBE=""
if [ -n "$PROBE" ] && [ ! -f "$PROBE" ]; then echo "csvsm: no such probe: $PROBE" >&2; exit 2; fi
secrets=$(mktemp)
trap 'rm -f "$secrets"' EXIT
# shellcheck disable=SC2046
timeout --foreground -k 5 "${RUN_TIMEOUT:-600}" "$QEMU" -machine "$QEMU_MACHINE" -accel tcg -cpu EPYC \
	-m "$MEM" -smp "$SMP" -nodefaults -net none -display none -no-reboot -serial stdio \
	-device isa-debug-exit,iobase=0xf4,iosize=0x04 -kernel "$CSVSM_ELF" $(launch_args "$secrets") $(guest_args "$PROBE") \
	"${args[@]}" 2> >(grep -v "TCG doesn't support requested feature" >&2)
rc=$?
case $rc in
1) echo "csvsm: VM ended with success status" ;;
124) echo "csvsm: stopped after ${RUN_TIMEOUT:-600}s: the VM did not end by itself (guest hung?)"; exit 1 ;;
*) echo "csvsm: VM ended with status $rc (failure)"; exit 1 ;;
esac
