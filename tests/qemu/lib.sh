# Shared helpers for the QEMU tests and `make run`: the canonical command
# line of DESIGN.md, a timeout, and TAP output.
QEMU=${QEMU:-qemu-system-x86_64}
CSVSM_ELF=${CSVSM_ELF:-build/csvsm.elf}
OVMF_FD=${OVMF_FD:-/usr/share/ovmf/OVMF.fd}
QEMU_TIMEOUT=${QEMU_TIMEOUT:-300}
# q35 without its DMA-capable SATA and SMBus controllers: nested paging does
# not confine device DMA (sim notes pitfall 10), so the guest gets none.
QEMU_MACHINE="q35,sata=off,smbus=off"

# csvsm_qemu LOG MEM SMP [extra qemu args...]; sets QEMU_RC (1 = csvsm success, 3 = failure).
csvsm_qemu() {
	local log=$1 mem=$2 smp=$3
	shift 3
	timeout --foreground -k 5 "$QEMU_TIMEOUT" "$QEMU" -machine "$QEMU_MACHINE" -accel tcg -cpu EPYC \
		-m "$mem" -smp "$smp" -nodefaults -net none -display none -no-reboot \
		-serial "file:$log" -device isa-debug-exit,iobase=0xf4,iosize=0x04 \
		-kernel "$CSVSM_ELF" "$@" 2>"$log.stderr"
	QEMU_RC=$?
	sed -e 's/\r//g' -e 's/\x1b\[[0-9;=?]*[a-zA-Z]//g' "$log" >"$log.tmp" && mv "$log.tmp" "$log"
	if [ "$QEMU_RC" -eq 124 ]; then
		echo "# QEMU timed out after ${QEMU_TIMEOUT}s (guest hung?)"
	fi
}

# The guest: OVMF plus a UEFI application as its kernel (default: the probe),
# and the simulated PSP's keys (test VCEK + chain, made by `make`) when built.
PSP_KEYS=${PSP_KEYS:-build/test-chain/psp-keys.bin}
guest_args() { # guest_args [probe.efi]
	echo "-fw_cfg name=opt/csvsm/ovmf,file=$OVMF_FD"
	[ -n "${1:-}" ] && echo "-fw_cfg name=opt/csvsm/probe,file=$1"
	[ -f "$PSP_KEYS" ] && echo "-fw_cfg name=opt/csvsm/psp-keys,file=$PSP_KEYS"
	return 0
}

TAP_N=0
tap_ok() { TAP_N=$((TAP_N + 1)); echo "ok $TAP_N - $*"; }
tap_fail() { TAP_N=$((TAP_N + 1)); echo "not ok $TAP_N - $*"; }
tap_check() { # tap_check "description" command...
	local d=$1
	shift
	if "$@"; then tap_ok "$d"; else tap_fail "$d"; fi
}
# field NAME LINE -> value of NAME=<v> in LINE
field() { sed -n "s/.*[ :]$1=\([^ ]*\).*/\1/p" <<<"$2" | head -n1; }
