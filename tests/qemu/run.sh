#!/usr/bin/env bash
# `make run`: boot csvsm's launch image build/csvsm.igvm in the SNP machine
# (build/snpm.elf: SEV-SNP hardware, PSP and KVM host models;
# docs/snp-machine.md) under QEMU TCG with the console on this terminal;
# csvsm pre-accepts memory, then runs the trixie OVMF the image carries at
# VMPL2 as an SEV-SNP guest, with:
#   GUEST=probe (default)  the probe (or PROBE=) as OVMF's kernel
#   GUEST=ovmf             OVMF alone (PROBE=none)
#   GUEST=linux            trixie's SVSM-aware OVMF and trixie-backports'
#                          Linux with the test initramfs (tests/linux), all
#                          vCPUs, as an SEV-SNP guest
#   FW=trixie (default)    the image build/csvsm.igvm (trixie's OVMF 2025.02)
#   FW=forky               build/csvsm-forky.igvm (Debian's OVMF 2026.08,
#                          which drives the vTPM and measures the boot)
# Usage: tests/qemu/run.sh [MEM=4G] [SMP=2] [GUEST=probe|ovmf|linux] [FW=trixie|forky]
#                [PROBE=file.efi|none] [APPEND="snpm.x=y"] [KAPPEND="linux args"] [extra qemu args]
# APPEND= is the machine's command line (snpm.trace=1, docs/snp-machine.md).
set -u
cd "$(dirname "$0")/../.."
MEM=4G SMP=2 APPEND="" KAPPEND="" PROBE=build/probe.efi GUEST=probe FW=trixie
args=()
for a in "$@"; do
	case "$a" in
	MEM=*) MEM=${a#MEM=} ;;
	SMP=*) SMP=${a#SMP=} ;;
	APPEND=*) APPEND=${a#APPEND=} ;;
	KAPPEND=*) KAPPEND=${a#KAPPEND=} ;;
	PROBE=*) PROBE=${a#PROBE=} ;;
	GUEST=*) GUEST=${a#GUEST=} ;;
	FW=*) FW=${a#FW=} ;;
	*) args+=("$a") ;;
	esac
done
. tests/qemu/lib.sh
[ -n "$APPEND" ] && args+=(-append "$APPEND")
case "$FW" in
trixie) ;;
forky) CSVSM_IGVM=build/csvsm-forky.igvm KAPPEND="${KAPPEND:+$KAPPEND }csvsm_fw=forky" ;;
*) echo "csvsm: FW=$FW: use trixie or forky" >&2; exit 2 ;;
esac
GMEM=$(snpm_guest_mem "$MEM") || exit 2
for f in "$SNPM_ELF" "$CSVSM_IGVM"; do
	[ -f "$f" ] || { echo "csvsm: $f missing: run 'make'" >&2; exit 2; }
done
case "$GUEST" in
probe | ovmf)
	[ "$GUEST" = ovmf ] && PROBE=none
	[ "$PROBE" = none ] && PROBE=""
	if [ -n "$PROBE" ] && [ ! -f "$PROBE" ]; then echo "csvsm: no such probe: $PROBE" >&2; exit 2; fi
	# shellcheck disable=SC2207
	args+=($(snpm_guest_args probe "$MEM" "$SMP" "$PROBE"))
	;;
linux)
	if ! lx=$(linux_guest_args "$MEM" "$SMP" "$KAPPEND"); then exit 2; fi
	# shellcheck disable=SC2206
	args+=($lx)
	args+=(-fw_cfg "name=opt/csvsm/linux/cmdline,string=$(linux_cmdline "$GMEM" "$SMP" "$KAPPEND")")
	;;
*) echo "csvsm: GUEST=$GUEST: use probe, ovmf or linux" >&2; exit 2 ;;
esac
# shellcheck disable=SC2207
boot=($(snpm_args))
timeout --foreground -k 5 "${RUN_TIMEOUT:-600}" "$QEMU" -machine "$QEMU_MACHINE" -accel "$QEMU_ACCEL" -cpu "$QEMU_CPU" \
	-m "$MEM" -smp "$SMP" -nodefaults -net none -display none -no-reboot -serial stdio \
	-device isa-debug-exit,iobase=0xf4,iosize=0x04 "${boot[@]}" \
	"${args[@]}" 2> >(grep -v "TCG doesn't support requested feature" >&2)
rc=$?
case $rc in
1) echo "csvsm: VM ended with success status" ;;
124) echo "csvsm: stopped after ${RUN_TIMEOUT:-600}s: the VM did not end by itself (guest hung?)"; exit 1 ;;
*) echo "csvsm: VM ended with status $rc (failure)"; exit 1 ;;
esac
