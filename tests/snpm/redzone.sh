#!/usr/bin/env bash
# Exception frames over live library data (issue 34 item 1). csvsm is built
# with -mno-red-zone, but it links Debian's static libcrypto, libmbedcrypto
# and libtpms, which keep live data in the 128 bytes below RSP (the System V
# x86-64 red zone). A host may inject #HV at any instruction boundary of
# VMPL0 (restricted injection), and #VC comes at every CPUID: an exception
# frame pushed on the interrupted stack, and the handler's register save,
# would land on that data. csvsm takes #HV, #VC and NMI on per-vCPU IST
# stacks and copies the frame to below the red zone (src/exception.S).
#
# One run of the SNP machine to the guest's launch (snpm.stop_at_launch=1),
# with the AVX state shown (snpm.xsave=1) so that OpenSSL's SHA-256 takes
# its AVX2 path, which keeps a copy of its frame pointer at -8(%rsp):
#  - snpm.redzone=S-E: at every instruction boundary of its first call
#    (libtpms's hashing during the vTPM's start) the machine injects #HV
#    and compares the 128 bytes below RSP and every register when the
#    #HV returns; at every 64th it steps csvsm's #HV handler too and
#    injects a second #HV at each of its boundaries off the IST stack;
#  - snpm.redzone_vc=...: every #VC of the libraries' CPUID (found here by
#    disassembly: functions of the Debian archives that execute CPUID) is
#    checked the same way, with an #HV injected inside its handler's GHCB
#    call;
#  - snpm.ist_probe=...: each vCPU's five IST stacks mapped, their guard
#    pages not, and the IDT's IST indices.
# (tests/snpm/hv/redzone.c, docs/snp-machine.md.) Without the IST stacks
# the first check finds the 128 bytes changed at every boundary. Builds
# nothing: `make` first. CSVSM_ELF/CSVSM_IGVM name another image.
set -u
cd "$(dirname "$0")/../.."
. tests/qemu/lib.sh
ELF=${CSVSM_ELF:-build/csvsm.elf}
LIBDIR=${LIBC_LIBDIR:-/usr/lib/x86_64-linux-gnu}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
snpm_need "$ELF"
QEMU_TIMEOUT=${QEMU_TIMEOUT_REDZONE:-300}

objdump -d --no-show-raw-insn "$ELF" >"$tmp/dis"
nm -S "$ELF" >"$tmp/nm"
sym_range() { # sym_range NAME -> START-END (hex, no 0x) of a sized symbol
	local a n
	read -r a n < <(awk -v s="$1" '$4 == s && NF == 4 {print $1, $2; exit}' "$tmp/nm")
	[ -n "${a:-}" ] && printf '%x-%x\n' "$((0x$a))" "$((0x$a + 0x$n))"
}
sym_addr() { awk -v s="$1" '$NF == s {sub(/^0*/, "", $1); print $1; exit}' "$tmp/nm"; }

# Every function of the image with an access below RSP (a negative
# displacement from %rsp; a few are stack probes or biased pointers).
read -r nfun nacc < <(awk '/^[0-9a-f]+ <.*>:$/ {f = $2}
	/-0x[0-9a-f]+\(%rsp\)/ {c[f]++; n++} END {print length(c), n + 0}' "$tmp/dis")
echo "# $nfun functions of csvsm.elf access memory below RSP ($nacc instructions)"
ROUTINE=sha256_block_data_order_avx2
range=$(sym_range "$ROUTINE")
store=$(awk -v f="<$ROUTINE>:" '$2 == f {p = 1; next} /^[0-9a-f]+ <.*>:$/ {p = 0}
	p && /mov +%r[a-z0-9]+,-0x[0-9a-f]+\(%rsp\)/ {sub(/^ +/, ""); print; exit}' "$tmp/dis")
echo "# the routine: $ROUTINE ${range:-?}: ${store:-no store below RSP}"
tap_check "the image's libraries use the red zone, $ROUTINE stores below its RSP" \
	test "${nfun:-0}" -gt 0 -a -n "$range" -a -n "$store"

# The libraries' CPUID: functions with a cpuid instruction that Debian's
# archives define (not csvsm's own).
defined=$(nm --defined-only "$LIBDIR/libcrypto.a" "$LIBDIR/libmbedcrypto.a" "$LIBDIR/libtpms.a" 2>/dev/null |
	awk 'NF == 3 && $2 ~ /[Tt]/ {print $3}' | sort -u)
vc_ranges="" vc_names=""
for f in $(awk '/^[0-9a-f]+ <.*>:$/ {f = $2} /\tcpuid/ {gsub(/[<>:]/, "", f); print f}' "$tmp/dis" | sort -u); do
	grep -qx "$f" <<<"$defined" || continue
	r=$(sym_range "$f")
	[ -n "$r" ] || continue
	vc_ranges=${vc_ranges:+$vc_ranges,}$r vc_names="$vc_names $f"
done
echo "# library functions that execute CPUID:${vc_names:- none}"
tap_check "the libraries execute CPUID (a #VC each)" test -n "$vc_ranges"

tss=$(sym_addr cpu_tss) idt=$(sym_addr idt)
probe=${tss:+${idt:+ snpm.ist_probe=$tss,$idt}}
snpm_qemu "$tmp/r.log" 2G 2 -append "snpm.stop_at_launch=1 snpm.xsave=1 snpm.redzone=$range \
snpm.redzone_vc=$vc_ranges$probe"
log=$tmp/r.log
grep '^snpm: redzone:' "$log" | sed 's/^/# /'

sweep=$(grep -m1 '^snpm: redzone: phase=' "$log")
kind() { grep -m1 "^snpm: redzone: $1: " "$log"; }
b=$(field boundaries "$sweep")
tap_check "the host's #HV came at each of $ROUTINE's instruction boundaries: the sweep ran to the routine's return (${b:-0} boundaries)" \
	test "$(field phase "$sweep")" = "done" -a "${b:-0}" -ge 1000
ok_kind() { # ok_kind NAME MIN: injected >= MIN, each checked, nothing changed
	local l i c
	l=$(kind "$1")
	i=$(field injected "$l") c=$(field checked "$l")
	test "${i:-0}" -ge "$2" -a "${c:--1}" = "${i:-0}" -a "$(field redzone_changed "$l")" = 0 \
		-a "$(field registers_changed "$l")" = 0
}
l=$(kind 'boundary #HV')
tap_check "every boundary's #HV was checked when it returned: the 128 bytes below RSP and the registers unchanged ($l)" \
	ok_kind 'boundary #HV' "$((${b:-0} > 0 ? ${b:-0} : 1))"
l=$(kind 'nested #HV')
tap_check "a second #HV at each boundary of csvsm's #HV handler (off its IST stack): unchanged ($l; $(field handler_sweeps "$sweep") handlers stepped, $(field ist_window_steps "$sweep") steps in the IST window not injected)" \
	ok_kind 'nested #HV' 100
l=$(kind 'library #VC')
tap_check "each #VC of the libraries' CPUID: unchanged below RSP ($l)" \
	ok_kind 'library #VC' 1
l=$(kind '#HV inside #VC')
tap_check "an #HV inside a #VC handler's GHCB call: unchanged ($l)" \
	ok_kind '#HV inside #VC' 1

# The IST stacks of both vCPUs (the AP's made at run time, src/smp.c).
grep -E '^snpm: vmpl0-(map: cpu=|idt:)' "$log" | sed 's/^/# /'
for cpu in 0 1; do
	n=$(grep -c "^snpm: vmpl0-map: cpu=$cpu ist=[1-5] .*mapped_top=1 mapped_low=1 .*mapped_guard=0$" "$log")
	tap_check "vCPU $cpu: 5 IST stacks, each mapped over an unmapped guard page ($n)" test "$n" -eq 5
done
tops=$(sed -n 's/^snpm: vmpl0-map: cpu=[0-9]* ist=[0-9] top=\(0x[0-9a-f]*\) .*/\1/p' "$log" | sort -u | wc -l)
tap_check "the 10 IST stacks are distinct ($tops)" test "$tops" -eq 10
want=0,0,1,0,0,0,0,0,2,0,0,0,0,0,0,0,0,0,3,0,0,0,0,0,0,0,0,0,4,5,0,0
tap_check "the IDT sends NMI, #DF, #MC, #HV and #VC to IST 1..5, nothing else" \
	grep -qx "snpm: vmpl0-idt: ist=$want" "$log"
launched() { test "$QEMU_RC" -eq 1 && grep -q '^csvsm: vtpm: pcr0_sha256=' "$log"; }
tap_check "csvsm reached the guest's launch with its vTPM (QEMU exit $QEMU_RC, want 1)" launched
[ "$TAP_FAILS" -eq 0 ]
