#!/usr/bin/env bash
# `make run`: boot csvsm under QEMU TCG with the console on this terminal;
# csvsm pre-accepts memory, then runs OVMF at VMPL2 with a guest.
#   PLATFORM=snpm (default) csvsm's snp image build/csvsm.igvm in the SNP
#                          machine (build/snpm.elf: SEV-SNP hardware, PSP and
#                          KVM host models; docs/snp-machine.md), with the
#                          trixie OVMF the image carries, as an SNP guest
#   PLATFORM=sim           csvsm's sim platform (build/csvsm.elf), csvsm as
#                          the SVM host, until the sim leaves the image
#   GUEST=probe (default)  the probe (or PROBE=) as OVMF's kernel; on sim
#                          Debian's OVMF (OVMF_FD=) unless told otherwise
#   GUEST=ovmf             OVMF alone (PROBE=none)
#   GUEST=linux            trixie's SVSM-aware OVMF and trixie-backports'
#                          Linux with the test initramfs (tests/linux), all
#                          vCPUs, as an SEV-SNP guest
# Usage: tests/qemu/run.sh [PLATFORM=snpm|sim] [MEM=4G] [SMP=2] [GUEST=probe|ovmf|linux]
#                [PROBE=file.efi|none] [APPEND="csvsm.x=y"] [KAPPEND="linux args"] [extra qemu args]
# On snpm APPEND= is the machine's command line (snpm.trace=1).
set -u
cd "$(dirname "$0")/../.."
MEM=4G SMP=2 APPEND="" KAPPEND="" PROBE=build/probe.efi GUEST=probe PLATFORM=snpm
args=()
for a in "$@"; do
	case "$a" in
	MEM=*) MEM=${a#MEM=} ;;
	SMP=*) SMP=${a#SMP=} ;;
	APPEND=*) APPEND=${a#APPEND=} ;;
	KAPPEND=*) KAPPEND=${a#KAPPEND=} ;;
	PROBE=*) PROBE=${a#PROBE=} ;;
	GUEST=*) GUEST=${a#GUEST=} ;;
	PLATFORM=*) PLATFORM=${a#PLATFORM=} ;;
	*) args+=("$a") ;;
	esac
done
if [ "$GUEST" = linux ]; then
	OVMF_FD=${OVMF_FD:-build/guests/OVMF.fd}
fi
[ -n "${QEMU_ACCEL:-}" ] && QEMU_ACCEL_SET=1
. tests/qemu/lib.sh
[ -n "$APPEND" ] && args+=(-append "$APPEND")
case "$PLATFORM" in
snpm | sim) ;;
*) echo "csvsm: PLATFORM=$PLATFORM: use snpm or sim" >&2; exit 2 ;;
esac
GMEM=$MEM
if [ "$PLATFORM" = snpm ]; then
	GMEM=$(snpm_guest_mem "$MEM") || exit 2
	for f in "$SNPM_ELF" "$CSVSM_IGVM"; do
		[ -f "$f" ] || { echo "csvsm: $f missing: run 'make'" >&2; exit 2; }
	done
fi
case "$GUEST" in
probe | ovmf)
	[ "$GUEST" = ovmf ] && PROBE=none
	[ "$PROBE" = none ] && PROBE=""
	if [ -n "$PROBE" ] && [ ! -f "$PROBE" ]; then echo "csvsm: no such probe: $PROBE" >&2; exit 2; fi
	if [ "$PLATFORM" = snpm ]; then
		# shellcheck disable=SC2207
		args+=($(snpm_guest_args probe "$MEM" "$SMP" "$PROBE"))
	else
		# shellcheck disable=SC2207
		args+=($(guest_args "$PROBE"))
	fi
	;;
linux)
	[ -n "${QEMU_ACCEL_SET:-}" ] || QEMU_ACCEL=$(linux_accel "$SMP")
	if ! lx=$(linux_guest_args "$MEM" "$SMP" "$KAPPEND"); then exit 2; fi
	# shellcheck disable=SC2206
	[ "$PLATFORM" = sim ] && args+=($(guest_args))
	# shellcheck disable=SC2206
	args+=($lx)
	args+=(-fw_cfg "name=opt/csvsm/linux/cmdline,string=$(linux_cmdline "$GMEM" "$SMP" "$KAPPEND")")
	;;
*) echo "csvsm: GUEST=$GUEST: use probe, ovmf or linux" >&2; exit 2 ;;
esac
secrets=$(mktemp)
trap 'rm -f "$secrets"' EXIT
if [ "$PLATFORM" = snpm ]; then
	# shellcheck disable=SC2207
	boot=($(snpm_args))
else
	# shellcheck disable=SC2207
	boot=(-kernel "$CSVSM_ELF" $(launch_args "$secrets"))
fi
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
