#!/usr/bin/env bash
# SVSM benchmarks under QEMU TCG in the SNP machine (csvsm's image
# build/csvsm.igvm, trixie OVMF as an SNP guest at VMPL2); prints a comparison.
#  (a) SVSM call round trips per second: csvsm runs OVMF with build/bench.efi
#      as its kernel (tests/guest/bench.c), which times 20,000 core
#      QUERY_PROTOCOL calls through the GHCB MSR form and 20,000 through the
#      GHCB page form with RDTSC; cycles are converted to seconds with the
#      "TSC NNNN MHz" csvsm prints in its boot log.
#  (b) boot overhead: wall time from QEMU start to the probe's first console
#      line under csvsm vs a plain OVMF boot of the same probe, same QEMU,
#      measured in this one run from timestamps taken as serial lines arrive.
# Usage: bench/svsm_bench.sh   (needs build/snpm.elf, build/csvsm.igvm, build/bench.efi,
# build/probe.efi: make)
# Environment: MEM (4G), SMP (2), REPEAT (1: runs of (b) to take the median of).
set -u
cd "$(dirname "$0")/.."
. tests/qemu/lib.sh
MEM=${MEM:-4G}
SMP=${SMP:-2}
OVMF_FD=${OVMF_FD:-/usr/share/ovmf/OVMF.fd} # the plain boot's firmware (bookworm's)
REPEAT=${REPEAT:-1}
BENCH_EFI=${BENCH_EFI:-build/bench.efi}
PROBE_EFI=${PROBE_EFI:-build/probe.efi}
TIMEOUT=${BENCH_TIMEOUT:-600}
PROBE_FIRST='csvsm probe: SVSM client conformance suite'

for f in "$SNPM_ELF" "$CSVSM_IGVM" "$BENCH_EFI" "$PROBE_EFI" "$OVMF_FD"; do
	[ -f "$f" ] || { echo "svsm_bench: missing $f (run make)"; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

. bench/stamp.sh

csvsm_args() { # csvsm_args EFI
	echo -machine "$QEMU_MACHINE" -accel tcg -cpu "$QEMU_CPU" -m "$MEM" -smp "$SMP" -nodefaults -net none \
		-display none -no-reboot -device isa-debug-exit,iobase=0xf4,iosize=0x04
	echo "$(snpm_args) $(snpm_guest_args probe "$MEM" "$SMP" "$1")"
}
plain_args() { # the plain OVMF boot of the same probe
	echo -machine "$QEMU_MACHINE" -accel tcg -cpu "$QEMU_CPU" -m 4G -nodefaults -net none -display none \
		-no-reboot -bios "$OVMF_FD" -kernel "$PROBE_EFI"
}
# first_line_time LOG REGEX -> seconds of the first matching line
first_line_time() { grep -m1 -E "$2" "$1" | cut -d' ' -f1; }

echo "== svsm_bench: $("$QEMU" --version | head -n1), host $(nproc) CPUs, csvsm (SNP machine) -m $MEM -smp $SMP"

# ---- (a) call round trips ----------------------------------------------------
stamp_run "$tmp/a.log" 'bench: done|bench: error' $(csvsm_args "$BENCH_EFI")
mhz=$(sed -n 's/.*platform *\(sim\|snp\), TSC \([0-9]*\) MHz.*/\2/p' "$tmp/a.log" | head -n1)
if ! grep -q 'bench: done' "$tmp/a.log" || [ -z "$mhz" ]; then
	echo "svsm_bench: the call benchmark did not complete (TSC MHz '${mhz}'); last lines:"
	tail -n 20 "$tmp/a.log"
	exit 1
fi
echo "-- (a) SVSM call round trips, core QUERY_PROTOCOL, TSC $mhz MHz (csvsm boot log)"
printf '%-6s %8s %14s %12s %10s %12s %7s\n' form calls cycles cycles/call us/call calls/s errors
for form in msr ghcb; do
	l=$(grep -m1 "bench: form=$form " "$tmp/a.log")
	calls=$(field calls "$l") cyc=$(field cycles "$l") per=$(field per_call_cycles "$l") err=$(field errors "$l")
	us=$(bc <<<"scale=2; $per / $mhz")
	cps=$(bc <<<"scale=0; $calls * $mhz * 1000000 / $cyc")
	printf '%-6s %8s %14s %12s %10s %12s %7s\n' "$form" "$calls" "$cyc" "$per" "$us" "$cps" "$err"
done
# Where an MSR-form call goes: it is 5 exits. Four are GHCB MSR accesses
# (save, request, response, restore), which exit only because QEMU has no
# GHCB MSR (hardware runs them without an exit); one is the VMGEXIT. The
# bench times the pieces: a GHCB MSR read alone (one exit, csvsm does
# nothing but answer) and WRMSR + bare VMGEXIT + RDMSR.
msr_l=$(grep -m1 "bench: form=ghcb_msr_read " "$tmp/a.log")
vmg_l=$(grep -m1 "bench: form=vmgexit_3exits " "$tmp/a.log")
call_l=$(grep -m1 "bench: form=msr " "$tmp/a.log")
if [ -n "$msr_l" ] && [ -n "$vmg_l" ]; then
	m=$(field per_call_cycles "$msr_l") v3=$(field per_call_cycles "$vmg_l") c=$(field per_call_cycles "$call_l")
	v=$((v3 - 2 * m)) svsm=$((c - 4 * m - v))
	echo "-- (a') one MSR-form call, by exit (cycles; baseline: the bare world switch)"
	printf '%-44s %10s %8s\n' piece cycles us
	printf '%-44s %10s %8s\n' "world switch (a GHCB MSR read, csvsm idle)" "$m" "$(bc <<<"scale=2; $m / $mhz")"
	printf '%-44s %10s %8s\n' "4 GHCB MSR exits (none on hardware)" "$((4 * m))" "$(bc <<<"scale=2; 4 * $m / $mhz")"
	printf '%-44s %10s %8s\n' "VMGEXIT: switch + csvsm decoding it" "$v" "$(bc <<<"scale=2; $v / $mhz")"
	rest="csvsm's SVSM call handling (rest)"
	# In the machine a call is two VMPL switches (VMSA save and load) too.
	rest="VMPL switches + csvsm's handling (rest)"
	printf '%-44s %10s %8s\n' "$rest" "$svsm" "$(bc <<<"scale=2; $svsm / $mhz")"
	printf '%-44s %10s %8s\n' "whole call" "$c" "$(bc <<<"scale=2; $c / $mhz")"
	echo "   csvsm's (and, in the machine, the VMPL switches') share: $(( (v - m + svsm) * 100 / c ))% of the call"
fi

# ---- (b) time to the probe's first line ---------------------------------------
med() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
: >"$tmp/ts.csvsm"
: >"$tmp/ts.plain"
for i in $(seq "$REPEAT"); do
	stamp_run "$tmp/b-csvsm.log" "$PROBE_FIRST" $(csvsm_args "$PROBE_EFI")
	stamp_run "$tmp/b-plain.log" "$PROBE_FIRST" $(plain_args)
	first_line_time "$tmp/b-csvsm.log" "$PROBE_FIRST" >>"$tmp/ts.csvsm"
	first_line_time "$tmp/b-plain.log" "$PROBE_FIRST" >>"$tmp/ts.plain"
done
tc=$(med <"$tmp/ts.csvsm")
tp=$(med <"$tmp/ts.plain")
if [ -z "$tc" ] || [ -z "$tp" ]; then
	echo "svsm_bench: the probe's first line was not seen (csvsm '$tc', plain '$tp')"
	tail -n 5 "$tmp/b-csvsm.log" "$tmp/b-plain.log"
	exit 1
fi
# csvsm's own boot phases for the breakdown: its first line, the end of
# pre-acceptance and the guest launch (boot_phase lines "[ t ms] <phase> ...").
t1=$(head -n1 "$tmp/b-csvsm.log" | cut -d' ' -f1)
ta=$(first_line_time "$tmp/b-csvsm.log" '\] accept +done')
tg=$(first_line_time "$tmp/b-csvsm.log" '\] guest +')
echo "-- (b) QEMU start -> probe's first line (median of $REPEAT; runs: plain $(tr '\n' ' ' <"$tmp/ts.plain")| csvsm $(tr '\n' ' ' <"$tmp/ts.csvsm"))"
printf '%-30s %8.3f s\n' "plain OVMF (-bios, 1 vCPU)" "$tp"
printf '%-30s %8.3f s\n' "OVMF under csvsm (SNP machine)" "$tc"
echo "   csvsm phases in its last run:"
[ -n "$t1" ] && printf '%-30s %8.3f s\n' "   csvsm's first line" "$t1"
[ -n "$ta" ] && printf '%-30s %8.3f s\n' "   pre-acceptance done" "$ta"
[ -n "$tg" ] && printf '%-30s %8.3f s\n' "   guest OVMF launched" "$tg"
printf '%-30s %8.2f\n' "ratio csvsm/plain" "$(bc <<<"scale=4; $tc / $tp")"
