#!/usr/bin/env bash
# `make run`: boot csvsm under QEMU TCG with the console on this terminal.
# Usage: tests/qemu/run.sh [MEM=4G] [SMP=2] [APPEND="csvsm.x=y"] [extra qemu args]
set -u
cd "$(dirname "$0")/../.."
MEM=4G SMP=2 APPEND=""
args=()
for a in "$@"; do
	case "$a" in
	MEM=*) MEM=${a#MEM=} ;;
	SMP=*) SMP=${a#SMP=} ;;
	APPEND=*) APPEND=${a#APPEND=} ;;
	*) args+=("$a") ;;
	esac
done
[ -n "$APPEND" ] && args+=(-append "$APPEND")
timeout --foreground -k 5 "${RUN_TIMEOUT:-600}" qemu-system-x86_64 -machine q35 -accel tcg -cpu EPYC \
	-m "$MEM" -smp "$SMP" -nodefaults -net none -display none -no-reboot -serial stdio \
	-device isa-debug-exit,iobase=0xf4,iosize=0x04 -kernel build/csvsm.elf "${args[@]}" \
	2> >(grep -v "TCG doesn't support requested feature" >&2)
rc=$?
case $rc in
1) echo "csvsm: VM ended with success status" ;;
124) echo "csvsm: stopped after ${RUN_TIMEOUT:-600}s: the VM did not end by itself" ; exit 1 ;;
*) echo "csvsm: VM ended with status $rc (failure)"; exit 1 ;;
esac
