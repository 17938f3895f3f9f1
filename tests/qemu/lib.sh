# Shared helpers for the QEMU tests and `make run`: the canonical command
# line of DESIGN.md, a timeout, and TAP output.
QEMU=${QEMU:-qemu-system-x86_64}
CSVSM_ELF=${CSVSM_ELF:-build/csvsm.elf}
QEMU_TIMEOUT=${QEMU_TIMEOUT:-300}

# csvsm_qemu LOG MEM SMP [extra qemu args...]; sets QEMU_RC (1 = csvsm success).
csvsm_qemu() {
	local log=$1 mem=$2 smp=$3
	shift 3
	timeout --foreground -k 5 "$QEMU_TIMEOUT" "$QEMU" -machine q35 -accel tcg -cpu EPYC \
		-m "$mem" -smp "$smp" -nodefaults -net none -display none -no-reboot \
		-serial "file:$log" -device isa-debug-exit,iobase=0xf4,iosize=0x04 \
		-kernel "$CSVSM_ELF" "$@" 2>"$log.stderr"
	QEMU_RC=$?
	tr -d '\r' <"$log" >"$log.tmp" && mv "$log.tmp" "$log"
	if [ "$QEMU_RC" -eq 124 ]; then
		echo "# QEMU timed out after ${QEMU_TIMEOUT}s (guest hung?)" >&2
	fi
}

TAP_N=0
tap_ok() { TAP_N=$((TAP_N + 1)); echo "ok $TAP_N - $*"; }
tap_fail() { TAP_N=$((TAP_N + 1)); echo "not ok $TAP_N - $*"; }
tap_check() { # tap_check "description" command...
	local d=$1; shift
	if "$@"; then tap_ok "$d"; else tap_fail "$d"; fi
}
# field NAME LINE -> value of NAME=<v> in LINE
field() { sed -n "s/.*[ :]$1=\([^ ]*\).*/\1/p" <<<"$2" | head -n1; }
