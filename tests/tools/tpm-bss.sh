#!/usr/bin/env bash
# libtpms' static state is a registered secret (issue 15 item 3): linker.ld
# gathers the .bss of libtpms.a (and of libcrypto.a, libmbedcrypto.a) into
# [__tpm_lib_bss_start, __tpm_lib_bss_end), which src/snp_boot.c registers
# for the termination wipe. Checked in the built image with nm: the range is
# not empty, the libtpms globals that hold seeds, proofs, authorisations,
# keys and the NV image lie wholly inside it (gp: EPS/SPS/PPS, s_NV: the NV
# image, ...), and so does every other .bss global libtpms.a defines that
# the image holds. TAP; run after `make`. ELF= and LIBTPMS_A= name others.
set -u
cd "$(dirname "$0")/../.."
ELF=${ELF:-build/csvsm.elf}
LIBTPMS_A=${LIBTPMS_A:-/usr/lib/x86_64-linux-gnu/libtpms.a}
n=0 fails=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
nok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $*"; }

for f in "$ELF" "$LIBTPMS_A"; do
	if [ ! -f "$f" ]; then
		echo "not ok 1 - $f exists (build csvsm with make; libtpms.a: make deps)"
		exit 1
	fi
done
# name -> address and size (nm -S: "addr size type name", or "addr type name")
declare -A addr size
while read -r a b c d; do
	if [ -n "$d" ]; then
		addr[$d]=$a size[$d]=$b
	elif [ -n "$c" ]; then
		addr[$c]=$a
	fi
done < <(nm -S "$ELF")
addr_of() { echo "${addr[$1]:-}"; }
size_of() { echo "${size[$1]:-}"; }

start=$(addr_of __tpm_lib_bss_start)
end=$(addr_of __tpm_lib_bss_end)
if [ -z "$start" ] || [ -z "$end" ]; then
	nok "$ELF defines __tpm_lib_bss_start and __tpm_lib_bss_end (start ${start:-none}, end ${end:-none})"
	echo "1..$n"
	exit 1
fi
start=$((0x$start)) end=$((0x$end))
if [ "$end" -gt "$start" ]; then
	ok "the registered range [0x$(printf %x $start), 0x$(printf %x $end)) is not empty ($((end - start)) bytes)"
else
	nok "the registered range [0x$(printf %x $start), 0x$(printf %x $end)) is not empty"
fi

inside() { # inside NAME WHAT: NAME's bytes lie in [start, end)
	local a s
	a=$(addr_of "$1")
	s=$(size_of "$1")
	if [ -z "$a" ]; then
		nok "$1 ($2) is in $ELF"
		return
	fi
	a=$((0x$a)) s=$((0x${s:-0}))
	if [ "$s" -gt 0 ] && [ "$a" -ge "$start" ] && [ $((a + s)) -le "$end" ]; then
		ok "$1 ($2, 0x$(printf %x $a) + $s) lies inside the registered range"
	else
		nok "$1 ($2, 0x$(printf %x $a) + $s) lies inside [0x$(printf %x $start), 0x$(printf %x $end))"
	fi
}
# libtpms' TPM 2.0 globals (Global.h): what a host that read csvsm's memory
# after a termination must not find.
inside gp "PERSISTENT_DATA: EPS/SPS/PPS seeds, hierarchy proofs, owner/endorsement/lockout auth"
inside s_NV "the NV image: persistent objects, NV indices"
inside gr "STATE_RESET_DATA: null seed and proof, commit nonce"
inside gc "STATE_CLEAR_DATA: platform auth and policy"
inside s_objects "loaded objects, private keys among them"
inside s_sessions "sessions and their session keys"
inside s_indexOrderlyRam "orderly NV indices' data"

# Every other .bss global of libtpms.a that made it into the image.
lib=$(nm "$LIBTPMS_A" 2>/dev/null | awk '$2 == "B" || $2 == "C" { print $3 }' | sort -u)
total=0 outside=()
for s in $lib; do
	a=$(addr_of "$s")
	[ -n "$a" ] || continue
	total=$((total + 1))
	a=$((0x$a))
	sz=$(size_of "$s")
	sz=$((0x${sz:-0}))
	if [ "$a" -lt "$start" ] || [ $((a + sz)) -gt "$end" ]; then outside+=("$s"); fi
done
if [ "$total" -gt 0 ] && [ "${#outside[@]}" -eq 0 ]; then
	ok "all $total .bss globals of libtpms.a in $ELF lie inside the registered range"
else
	nok "all $total .bss globals of libtpms.a in $ELF lie inside the registered range (outside: ${outside[*]:-none})"
fi
echo "1..$n"
[ "$fails" -eq 0 ]
