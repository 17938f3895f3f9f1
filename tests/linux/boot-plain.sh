#!/usr/bin/env bash
# The baseline for issue 9's numbers: the same trixie OVMF, kernel and
# initramfs booted under plain QEMU TCG, without csvsm (no SEV-SNP):
#
#   tests/linux/boot-plain.sh        (or `make linux-plain`; MEM=4G SMP=2 TIMEOUT=600)
#
# Prints the guest's whole serial log as TAP comments ("# | ..."), its own
# checks as TAP, and machine-readable lines:
#   linux-boot: plain-ovmf init_ms=<QEMU start -> "linux-guest: init started">
#               kernel_console_ms=<-> the kernel's first console line, "Linux
#               version" (registered early in start_kernel(); what came
#               before is mostly OVMF)> kernel_uptime_at_init_ms=<the
#               kernel's own uptime when /init started>
#               done_ms=<-> the summary line> exit_ms=<-> QEMU exited>
#   linux-boot: plain-ovmf guest_passed=<N> guest_failed=<N>
# The SEV-SNP checks of /init fail here by design; what this script checks is
# that the kernel booted, /init ran to its summary line, its checks split as
# they must without SEV-SNP (SNP ones fail, the others pass; accept and
# pvalidate with nothing to do: no unaccepted memory, no SEV-SNP) and the
# VM powered itself off. The log is kept in build/linux/boot-plain.log.
set -u
cd "$(dirname "$0")/../.."
shopt -s extglob

MEM=${MEM:-4G}
SMP=${SMP:-2}
TIMEOUT=${TIMEOUT:-600}
OVMF=${OVMF:-build/guests/OVMF.fd}
KERNEL=${KERNEL:-build/guests/vmlinuz}
INITRD=${INITRD:-build/linux/initramfs.cpio.gz}
LOG=${LOG:-build/linux/boot-plain.log}

case "$MEM" in
*G) memkib=$((${MEM%G} * 1024 * 1024)) ;;
*M) memkib=$((${MEM%M} * 1024)) ;;
*) echo "boot-plain: MEM=$MEM: use <n>G or <n>M" >&2; exit 2 ;;
esac
# The same command line the csvsm run uses (console, panic=-1 so that a
# panic ends the VM at once under -no-reboot, and /init's expectations).
APPEND=${APPEND:-console=ttyS0 panic=-1 csvsm_vmpl=2 csvsm_cpus=$SMP csvsm_mem_kib=$memkib}

n=0 nfail=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
nok() { n=$((n + 1)); nfail=$((nfail + 1)); echo "not ok $n - $*"; }

for f in "$OVMF" "$KERNEL" "$INITRD"; do
	if [ ! -e "$f" ]; then
		nok "$f exists (run 'make deps' and 'make')"
		exit 1
	fi
done

ms_since() { # <EPOCHREALTIME at start> -> whole ms since
	local a=${1/./} b=${EPOCHREALTIME/./}
	echo $(((b - a) / 1000))
}

mkdir -p "$(dirname "$LOG")"
: >"$LOG"
init_ms= kernel_ms= uptime_ms= done_ms= summary= powered=
t0=$EPOCHREALTIME
# Serial output is read line by line as it arrives (QEMU writes the chardev
# unbuffered), so the timestamps are those of the lines' arrival.
while IFS= read -r line; do
	line=${line//$'\r'/}
	line=${line//$'\e'\[*([0-9;=?])[A-Za-z]/}
	printf '%s\n' "$line" >>"$LOG"
	echo "# | $line"
	case "$line" in
	*"] Linux version "*) [ -n "$kernel_ms" ] || kernel_ms=$(ms_since "$t0") ;;
	"linux-guest: init started"*)
		[ -n "$init_ms" ] || init_ms=$(ms_since "$t0")
		u=${line##*uptime_s=}; uptime_ms=$((${u%.*} * 1000 + 10#${u#*.} * 10)) ;;
	"linux-guest: "+([0-9])" passed, "+([0-9])" failed, "+([0-9])" skipped") done_ms=$(ms_since "$t0") summary=$line ;;
	*"reboot: Power down"*) powered=1 ;;
	esac
done < <(timeout --foreground -k 5 "$TIMEOUT" qemu-system-x86_64 \
	-machine q35 -accel "${ACCEL:-tcg}" -cpu EPYC -m "$MEM" -smp "$SMP" \
	-nodefaults -serial stdio -display none -no-reboot \
	-bios "$OVMF" -kernel "$KERNEL" -initrd "$INITRD" -append "$APPEND" 2>&1; echo "qemu-exit $?")
exit_ms=$(ms_since "$t0")
rc=$(sed -n 's/^qemu-exit //p' "$LOG" | tail -n1)

if [ -n "$init_ms" ]; then ok "plain OVMF: the kernel booted and /init started after $init_ms ms"
else nok "plain OVMF: /init never started (timeout ${TIMEOUT}s; QEMU status ${rc:-?})"; fi
if [ -n "$summary" ]; then ok "plain OVMF: /init ran to its summary line ($summary)"
else nok "plain OVMF: no 'linux-guest: N passed, N failed, N skipped' line"; fi
if [ "$rc" = 0 ] && [ -n "$powered" ]; then ok "plain OVMF: the VM powered off by itself (QEMU status 0, 'reboot: Power down')"
else nok "plain OVMF: the VM did not power off by itself (QEMU status ${rc:-?}, power-down line ${powered:-missing})"; fi

# Without SEV-SNP the guest's own checks must split exactly so: the SNP ones
# fail (which shows they can) and the others pass (tags from tests/linux/init).
expect_ok="vcpus ram accept pvalidate warn"
expect_fail="snp vmpl vtpm sev-guest tsm-svsm tsm-svsm-data tsm-vmpl"
# No tpm-svsm platform device without SEV-SNP: insmod tpm_svsm.ko fails
# (ENODEV) and every vTPM check after it fails too.
expect_fail="$expect_fail tpm-driver tpm-dev tpm-pcr0-sha256 tpm-pcr0-sha384 tpm-eventlog tpm-getrandom tpm-ek tpm-ak tpm-activate tpm-quote"
bad=
for t in $expect_ok; do grep -qE "^ok [0-9]+ - $t: " "$LOG" || bad="$bad $t(want ok)"; done
for t in $expect_fail; do grep -qE "^not ok [0-9]+ - $t: " "$LOG" || bad="$bad $t(want not ok)"; done
if [ -z "$bad" ]; then ok "plain OVMF: guest checks $expect_ok pass, $expect_fail fail (no SEV-SNP)"
else nok "plain OVMF: unexpected guest results:$bad"; fi
# accept and pvalidate pass here with nothing to do: without SEV-SNP no
# memory is unaccepted and nothing is PVALIDATEd. This baseline's evidence
# is exactly that (tests/linux/linux.sh requires the opposite of csvsm's
# run: memory unaccepted at init and PVALIDATE calls through csvsm).
acc=$(grep -E '^ok [0-9]+ - accept: ' "$LOG" | head -n1)
if [[ "$acc" == *"Unaccepted: 0 kB at init, 0 kB after"* ]] && grep -qE '^not ok [0-9]+ - snp: ' "$LOG" &&
	! grep -q 'SEV: SNP running at VMPL' "$LOG"; then
	ok "plain OVMF: accept and pvalidate pass with nothing to accept or PVALIDATE (Unaccepted 0 kB at init, no SEV-SNP)"
else
	nok "plain OVMF: accept and pvalidate were not vacuous here (${acc:-no accept line}; want Unaccepted 0 kB at init and no SEV-SNP)"
fi

gp=$(echo "$summary" | sed -n 's/^linux-guest: \([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) skipped$/\1/p')
gf=$(echo "$summary" | sed -n 's/^linux-guest: \([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) skipped$/\2/p')
gs=$(echo "$summary" | sed -n 's/^linux-guest: \([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) skipped$/\3/p')
echo "linux-boot: plain-ovmf init_ms=${init_ms:-none} kernel_console_ms=${kernel_ms:-none} kernel_uptime_at_init_ms=${uptime_ms:-none} done_ms=${done_ms:-none} exit_ms=$exit_ms mem=$MEM smp=$SMP"
echo "linux-boot: plain-ovmf guest_passed=${gp:-none} guest_failed=${gf:-none} guest_skipped=${gs:-none}"
echo "$((n - nfail)) passed, $nfail failed"
[ "$nfail" -eq 0 ]
