# Shared helpers for the QEMU tests and `make run`: the canonical command
# line of DESIGN.md, a timeout, and TAP output.
QEMU=${QEMU:-qemu-system-x86_64}
CSVSM_ELF=${CSVSM_ELF:-build/csvsm.elf}
OVMF_FD=${OVMF_FD:-/usr/share/ovmf/OVMF.fd}
QEMU_TIMEOUT=${QEMU_TIMEOUT:-300}
# q35 without its DMA-capable SATA and SMBus controllers (nested paging does
# not confine device DMA, sim notes pitfall 10), without the HPET (its FSB
# interrupts are MSIs with any delivery mode), SMM and the VMware port. csvsm
# denies them to the guest anyway (src/platform/devpolicy.c); this is the
# machine's own minimum.
QEMU_MACHINE="q35,sata=off,smbus=off,hpet=off,smm=off,vmport=off"

# csvsm_qemu LOG MEM SMP [extra qemu args...]; sets QEMU_RC (1 = csvsm success, 3 = failure).
csvsm_qemu() {
	local log=$1 mem=$2 smp=$3
	shift 3
	# shellcheck disable=SC2046
	timeout --foreground -k 5 "$QEMU_TIMEOUT" "$QEMU" -machine "$QEMU_MACHINE" -accel tcg -cpu EPYC \
		-m "$mem" -smp "$smp" -nodefaults -net none -display none -no-reboot \
		-serial "file:$log" -device isa-debug-exit,iobase=0xf4,iosize=0x04 \
		-kernel "$CSVSM_ELF" $(launch_args "$log.secrets") "$@" 2>"$log.stderr"
	QEMU_RC=$?
	sed -e 's/\r//g' -e 's/\x1b\[[0-9;=?]*[a-zA-Z]//g' "$log" >"$log.tmp" && mv "$log.tmp" "$log"
	if [ "$QEMU_RC" -eq 124 ]; then
		echo "# QEMU timed out after ${QEMU_TIMEOUT}s (guest hung?)"
	fi
}

# The guest: OVMF plus a UEFI application as its kernel (default: the probe).
guest_args() { # guest_args [probe.efi]
	echo "-fw_cfg name=opt/csvsm/ovmf,file=$OVMF_FD"
	[ -n "${1:-}" ] && echo "-fw_cfg name=opt/csvsm/probe,file=$1"
	return 0
}

# What the launch puts into csvsm's memory, as the PSP does on SNP: a fresh
# secrets page (version 3, random GOSVW and VMPCK0..3) and the simulated
# PSP's keys (test VCEK + chain, made by `make`) when built. QEMU's loader
# device writes them at csvsm's .launch_in area (linker.ld) before csvsm
# runs; no device the guest can reach ever holds them.
PSP_KEYS=${PSP_KEYS:-build/test-chain/psp-keys.bin}
launch_in_addr() { nm -P "$CSVSM_ELF" | awk '$1 == "__launch_in_start" { print "0x" $3 }'; }
make_secrets_page() { # make_secrets_page FILE
	{
		printf '\003\000\000\000'
		head -c 12 /dev/zero
		head -c 144 /dev/urandom
		head -c 3936 /dev/zero
	} >"$1"
}
launch_args() { # launch_args SECRETS_FILE: writes a fresh secrets page there, prints QEMU args
	local base
	base=$(launch_in_addr)
	[ -n "$base" ] || return 0
	make_secrets_page "$1"
	echo "-device loader,file=$1,addr=$base,force-raw=on"
	[ -f "$PSP_KEYS" ] && echo "-device loader,file=$PSP_KEYS,addr=$(printf '0x%x' $((base + 4096))),force-raw=on"
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
