# Shared helpers for the QEMU tests and `make run`: the machine's QEMU
# command line, a timeout, the guests' files, and TAP output.
QEMU=${QEMU:-qemu-system-x86_64}
QEMU_TIMEOUT=${QEMU_TIMEOUT:-300}
# q35 without its DMA-capable SATA and SMBus controllers (nested paging does
# not confine device DMA, sim notes pitfall 10), without the HPET (its FSB
# interrupts are MSIs with any delivery mode), SMM and the VMware port. The
# SNP machine denies them to its guests anyway (tests/snpm/model/devpolicy.c);
# this is QEMU's own minimum.
QEMU_MACHINE="q35,sata=off,smbus=off,hpet=off,smm=off,vmport=off"
# 52 physical address bits: an SNP guest's C-bit (51) is then an ordinary
# address bit to TCG's nested walk, which uses bits 47:12 only
# (snp-guest-view-notes.md).
QEMU_CPU=${QEMU_CPU:-EPYC,phys-bits=52}
# Multi-threaded TCG (one host thread per vCPU) for every run, the SMP
# Linux runs included. The "VMCB holding the host's own state" once seen
# with it is what QEMU leaves after a VMRUN that failed its consistency
# checks (tests/snpm/vmrun-check.sh; docs/snp-machine.md "Multi-threaded
# TCG"). QEMU_ACCEL=tcg,thread=single runs everything on one thread.
QEMU_ACCEL=${QEMU_ACCEL:-tcg}

# A Linux guest (GUEST=linux): trixie-backports' kernel and the test
# initramfs (tests/linux), handed to the SNP machine as hidden fw_cfg files;
# its device model shows them to OVMF where QEMU's own -kernel would put them.
LINUX_KERNEL=${LINUX_KERNEL:-build/guests/vmlinuz}
LINUX_INITRD=${LINUX_INITRD:-build/linux/initramfs.cpio.gz}
mem_kib() { # 4G -> 4194304 (2048M, 1835008K too)
	case "$1" in
	*K) echo "${1%K}" ;;
	*G) echo $((${1%G} * 1024 * 1024)) ;;
	*M) echo $((${1%M} * 1024)) ;;
	*) return 1 ;;
	esac
}
# The kernel command line: the console, panic ends the VM, and what /init
# expects to find (tests/linux/init).
linux_cmdline() { # linux_cmdline MEM SMP [extra]
	echo "console=ttyS0 panic=-1 csvsm_vmpl=2 csvsm_cpus=$2 csvsm_mem_kib=$(mem_kib "$1")${3:+ $3}"
}
linux_guest_args() { # linux_guest_args MEM SMP: the fw_cfg files but the command line
	local f
	for f in "$LINUX_KERNEL" "$LINUX_INITRD"; do
		if [ ! -e "$f" ]; then
			echo "csvsm: $f missing: run 'make deps' and 'make'" >&2
			return 1
		fi
	done
	mem_kib "$1" >/dev/null || { echo "csvsm: MEM=$1: use <n>G or <n>M" >&2; return 1; }
	echo "-fw_cfg name=opt/csvsm/linux/kernel,file=$LINUX_KERNEL"
	echo "-fw_cfg name=opt/csvsm/linux/initrd,file=$LINUX_INITRD"
}

TAP_N=0 TAP_FAILS=0
tap_ok() { TAP_N=$((TAP_N + 1)); echo "ok $TAP_N - $*"; }
tap_fail() { TAP_N=$((TAP_N + 1)); TAP_FAILS=$((TAP_FAILS + 1)); echo "not ok $TAP_N - $*"; }
tap_merge() { # tap_merge FILE PREFIX: another TAP stream's results as ours, renumbered
	local l
	while IFS= read -r l; do
		case "$l" in
		ok*) tap_ok "$2${l#ok * - }" ;;
		"not ok"*) tap_fail "$2${l#not ok * - }" ;;
		esac
	done <"$1"
}
tap_check() { # tap_check "description" command...
	local d=$1
	shift
	if "$@"; then tap_ok "$d"; else tap_fail "$d"; fi
}
# field NAME LINE -> value of NAME=<v> in LINE
field() { sed -n "s/.*[ :]$1=\([^ ]*\).*/\1/p" <<<"$2" | head -n1; }
# The RAM pages the firmware in build/csvsm.igvm expects to find unvalidated
# (its SEC GHCB), from its own SEV metadata (tests/tools/ovmf_sec_gaps.py):
# what the machine's accept-audit must list as unvalidated_ranges, no more.
fw_host_pages() { python3 tests/tools/ovmf_sec_gaps.py build/guests/OVMF.fd; }

# ---- the SNP machine (tests/snpm, docs/snp-machine.md) ----
# build/snpm.elf plays SEV-SNP hardware, the PSP and a KVM host: it loads
# build/csvsm.igvm (csvsm's snp image with trixie's OVMF) from fw_cfg and
# measures it as the PSP does; the PSP model's keys come the same way and
# are gone from every guest-visible device once read. The guest's probe
# and Linux files are fw_cfg files the machine's device model shows to OVMF.
SNPM_ELF=${SNPM_ELF:-build/snpm.elf}
PSP_KEYS=${PSP_KEYS:-build/test-chain/psp-keys.bin}
CSVSM_IGVM=${CSVSM_IGVM:-build/csvsm.igvm}
snpm_need() { # snpm_need [more files]: stop with a TAP failure unless the machine, the image and these exist
	local f
	for f in "$SNPM_ELF" "$CSVSM_IGVM" "$@"; do
		if [ ! -f "$f" ]; then echo "not ok 1 - $f exists (build it with make)"; exit 1; fi
	done
}
snpm_args() { # the machine's own QEMU arguments
	echo "-kernel $SNPM_ELF -fw_cfg name=opt/csvsm/igvm,file=$CSVSM_IGVM"
	[ -f "$PSP_KEYS" ] && echo "-fw_cfg name=opt/csvsm/psp-keys,file=$PSP_KEYS"
	return 0
}
# The machine keeps the top 256 MiB of the VM's low RAM (0x70000000 up to
# 2 GiB, where it is linked: tests/snpm/snpm.mk) as host memory; the guest
# gets the rest. MEM must be 2G or more.
SNPM_HOST_KIB=262144
snpm_guest_mem() { # snpm_guest_mem MEM -> the guest's RAM as <n>K
	local k
	k=$(mem_kib "$1") || return 1
	[ "$k" -ge 2097152 ] || { echo "csvsm: MEM=$1: the SNP machine needs 2G or more" >&2; return 1; }
	echo "$((k - SNPM_HOST_KIB))K"
}
snpm_guest_args() { # snpm_guest_args probe|linux MEM SMP [probe.efi] [kernel args]
	case "$1" in
	probe) [ -n "${4:-}" ] && echo "-fw_cfg name=opt/csvsm/probe,file=$4" ;;
	linux) linux_guest_args "$2" "$3" || return 1 ;;
	esac
	return 0
}
# csvsm's vTPM channel (docs/vtpm.md "Persistence"): a 16550 at COM4
# (0x2e8, IRQ 3, which csvsm never enables) whose chardev is a unix socket
# that build/csvsm-proxy listens on (QEMU connects as the client: start the
# proxy first). The machine passes VMPL0's accesses to 0x2e8-0x2ef through
# and refuses the guest's (tests/snpm/model/devpolicy.c DP_SVSM_CHAN).
snpm_vtpm_args() { # snpm_vtpm_args SOCKET
	echo "-chardev socket,id=csvsm-vtpm,path=$1 -device isa-serial,chardev=csvsm-vtpm,iobase=0x2e8,irq=3"
}
# snpm_vtpm_proxy SOCKET STATE LOG [options]: build/csvsm-proxy for one
# connection (bounded by QEMU_TIMEOUT), in the background (VTPM_PROXY_PID),
# once its socket is there.
snpm_vtpm_proxy() {
	local sock=$1 state=$2 log=$3
	shift 3
	rm -f "$sock"
	"${PROXY:-build/csvsm-proxy}" --socket "$sock" --state "$state" --log "$log" --max-connections 1 \
		--idle-exit "$QEMU_TIMEOUT" --io-timeout "$QEMU_TIMEOUT" "$@" &
	VTPM_PROXY_PID=$!
	for _ in $(seq 100); do [ -S "$sock" ] && return 0; sleep 0.1; done
	return 1
}
# snpm_qemu LOG MEM SMP [extra qemu args...]; sets QEMU_RC (1 = success, 3 = failure).
snpm_qemu() {
	local log=$1 mem=$2 smp=$3
	shift 3
	# shellcheck disable=SC2046
	timeout --foreground -k 5 "$QEMU_TIMEOUT" "$QEMU" -machine "$QEMU_MACHINE" -accel "$QEMU_ACCEL" -cpu "$QEMU_CPU" \
		-m "$mem" -smp "$smp" -nodefaults -net none -display none -no-reboot \
		-serial "file:$log" -device isa-debug-exit,iobase=0xf4,iosize=0x04 \
		$(snpm_args) "$@" 2>"$log.stderr"
	QEMU_RC=$?
	sed -e 's/\r//g' -e 's/\x1b\[[0-9;=?]*[a-zA-Z]//g' "$log" >"$log.tmp" && mv "$log.tmp" "$log"
	if [ "$QEMU_RC" -eq 124 ]; then
		echo "# QEMU timed out after ${QEMU_TIMEOUT}s (guest hung?)"
	fi
}
