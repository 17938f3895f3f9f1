#!/usr/bin/env bash
# IGVM end to end: csvsm-measure --igvm / --dump on the hand-made sample of
# tests/tools/igvm_ref.py (every header type QEMU handles) and on images
# csvsm-igvm builds, each digest checked against igvm_ref.py (a separate
# Python model of QEMU's loader and the PSP chain); one-byte-corrupted
# copies refused or measured differently; exit codes. build/csvsm.igvm is
# checked when `make` built it (trixie OVMF present), skipped otherwise.
# Prints TAP lines.
set -u
cd "$(dirname "$0")/../.." || exit 1
M=${CSVSM_MEASURE:-build/csvsm-measure}
B=${CSVSM_IGVM:-build/csvsm-igvm}
REF="python3 tests/tools/igvm_ref.py"
DEB_OVMF=/usr/share/ovmf/OVMF.fd
ELF=build/csvsm.elf

IMG=build/csvsm.igvm
SIG_EPYC=0x800f12

n=0
ok()   { n=$((n + 1)); echo "ok $n - $1"; }
nok()  { n=$((n + 1)); echo "not ok $n - $1"; }
skip() { n=$((n + 1)); echo "ok $n # SKIP $1"; }
check() { if [ "$2" = "$3" ]; then ok "$1"; else nok "$1 (got '$2', want '$3')"; fi; }

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

for t in "$M" "$B"; do
	if [ ! -x "$t" ]; then
		echo "not ok 1 - $t not built"
		exit 1
	fi
done

# Entry symbol of csvsm's ELF: the SNP entry once it exists.
entry_args() {
	if nm "$1" 2>/dev/null | grep -qw snp_entry32; then echo ""; else echo "--entry-symbol pvh_entry32"; fi
}

# measure_matches NAME FILE: csvsm-measure and igvm_ref.py agree (1 and 3 vCPUs, zero modes).
measure_matches() {
	local name=$1 f=$2 a b
	a=$("$M" --igvm "$f" 2>"$TMP/err"); b=$($REF measure "$f")
	check "$name: digest (1 vCPU) equals igvm_ref.py" "$a" "$b"
	a=$("$M" --igvm "$f" --vcpus 3 --vcpu-type EPYC-v4 2>/dev/null)
	b=$($REF measure "$f" --vcpus 3 --vcpu-sig $SIG_EPYC)
	check "$name: digest (3 vCPUs, EPYC-v4 reset VMSAs) equals igvm_ref.py" "$a" "$b"
	a=$("$M" --igvm "$f" --zero-pages zero 2>/dev/null); b=$($REF measure "$f" --native-zero)
	check "$name: --zero-pages zero equals igvm_ref.py --native-zero" "$a" "$b"
	check "$name: --zero-pages normal is the default" "$("$M" --igvm "$f" --zero-pages normal 2>/dev/null)" \
		"$("$M" --igvm "$f" 2>/dev/null)"
}

# corrupt_check NAME FILE OFFSETS...: each one-byte change is refused or measured differently.
corrupt_check() {
	local name=$1 f=$2 ref bad=0 tried=0 off d rc
	shift 2
	ref=$("$M" --igvm "$f" 2>/dev/null)
	for off in "$@"; do
		cp "$f" "$TMP/c.igvm"
		python3 -c 'import sys
p, o = sys.argv[1], int(sys.argv[2])
b = bytearray(open(p, "rb").read()); b[o] ^= 0x5A; open(p, "wb").write(b)' "$TMP/c.igvm" "$off"
		d=$("$M" --igvm "$TMP/c.igvm" 2>"$TMP/cerr"); rc=$?
		tried=$((tried + 1))
		if [ $rc -eq 0 ] && [ "$d" = "$ref" ]; then
			bad=$((bad + 1)); echo "# $name: byte $off changed, same digest"
		elif [ $rc -ne 0 ] && { [ $rc -ne 1 ] || [ "$(wc -l <"$TMP/cerr")" != 1 ]; }; then
			bad=$((bad + 1)); echo "# $name: byte $off: exit $rc, stderr: $(cat "$TMP/cerr")"
		fi
	done
	if [ $bad -eq 0 ]; then ok "$name: $tried one-byte corruptions refused (exit 1, one line) or measured differently"
	else nok "$name: $bad of $tried one-byte corruptions neither refused nor measured differently"; fi
}

offsets() { # FILE COUNT: spread over the file, plus the fixed header and the last byte
	python3 -c 'import os, sys
size, k = os.path.getsize(sys.argv[1]), int(sys.argv[2])
offs = {0, 5, 9, 13, 17, 21, 24, 31, size - 1} | {i * size // k for i in range(k)}
print(" ".join(str(o) for o in sorted(offs)))' "$1" "$2"
}

# --- the hand-made sample: every header type QEMU's loader handles ---
$REF sample "$TMP/sample.igvm"
measure_matches "sample" "$TMP/sample.igvm"
if grep -q "ID block's LD differs" "$TMP/err"; then ok "sample: ID block LD mismatch warned on stderr"
else nok "sample: no warning for the ID block's LD"; fi
"$M" --igvm "$TMP/sample.igvm" --dump >"$TMP/dump" 2>&1; rc=$?
hdrs=$(grep -c '^#[0-9]' "$TMP/dump")
check "sample --dump: exit 0, one line per header (28)" "$rc:$hdrs" "0:28"
missing=""
for t in SUPPORTED_PLATFORM GUEST_POLICY PARAMETER_AREA PAGE_DATA PARAMETER_INSERT VP_CONTEXT \
	REQUIRED_MEMORY VP_COUNT_PARAMETER MADT SNP_ID_BLOCK MEMORY_MAP ENVIRONMENT_INFO_PARAMETER; do
	grep -q " $t " "$TMP/dump" || missing="$missing $t"
done
check "sample --dump names every header type" "${missing:-none}" "none"
# A page without data is NORMAL (QEMU/KVM) unless --zero-pages zero asks for the PSP ZERO type.
if grep -qE 'PAGE_DATA .*data_type=NORMAL .*snp=NORMAL sha384=-$' "$TMP/dump" &&
	! grep -q 'snp=ZERO' "$TMP/dump" && grep -q 'snp=SECRETS' "$TMP/dump" &&
	grep -q 'snp=CPUID' "$TMP/dump" && grep -q 'snp=UNMEASURED' "$TMP/dump" &&
	grep -qE 'PAGE_DATA .*snp=NORMAL sha384=[0-9a-f]{96}' "$TMP/dump"; then
	ok "sample --dump: SNP page types and SHA-384 of page data"
else
	nok "sample --dump: page types/hashes missing"
fi
"$M" --igvm "$TMP/sample.igvm" --dump --zero-pages zero 2>/dev/null | grep -qE 'PAGE_DATA .*snp=ZERO sha384=-$' &&
	ok "sample --dump --zero-pages zero: no-data pages as the PSP ZERO type" ||
	nok "sample --dump --zero-pages zero: no ZERO page"
"$M" --igvm "$TMP/sample.igvm" --zero-pages native >/dev/null 2>&1
check "--zero-pages with an unknown value: exit 2" "$?" "2"
want=$("$M" --igvm "$TMP/sample.igvm" 2>/dev/null | xxd -r -p | base64 -w0)
check "--output-format base64" "$("$M" --igvm "$TMP/sample.igvm" --output-format base64 2>/dev/null)" "$want"
case $("$M" --igvm "$TMP/sample.igvm" -v 2>/dev/null) in
"Calculated IGVM SEV_SNP guest measurement: "*) ok "-v labels the digest" ;;
*) nok "-v does not label the digest" ;;
esac

# --- a page without data: the vector of tests/tools/snp_zero_vector.py ---
# Computed from the IGVM/SNP ABI layouts and QEMU's sev.c rule alone (not from
# igvm_ref.py or attest/): QEMU + KVM measure the page as NORMAL with the
# SHA-384 of 4096 zero bytes; the PSP ZERO type is only --zero-pages zero.
if vec=$(python3 tests/tools/snp_zero_vector.py "$TMP/zero.igvm"); then
	want_normal=$(echo "$vec" | sed -n 's/^normal //p'); want_zero=$(echo "$vec" | sed -n 's/^zero //p')
	check "zero-page vector: default digest is QEMU/KVM's (NORMAL page of zeros)" \
		"$("$M" --igvm "$TMP/zero.igvm" 2>&1)" "$want_normal"
	check "zero-page vector: --zero-pages zero gives the PSP ZERO page type's digest" \
		"$("$M" --igvm "$TMP/zero.igvm" --zero-pages zero 2>&1)" "$want_zero"
	check "zero-page vector: igvm_ref.py agrees (default, --native-zero)" \
		"$($REF measure "$TMP/zero.igvm") $($REF measure "$TMP/zero.igvm" --native-zero)" \
		"$want_normal $want_zero"
	[ -n "$want_normal" ] && [ "$want_normal" != "$want_zero" ] &&
		ok "zero-page vector: the two page types give different digests" ||
		nok "zero-page vector: the two modes do not differ"
else
	nok "tests/tools/snp_zero_vector.py failed"
fi

# --- malformed input and usage: exit 1 with one line, exit 2 ---
head -c 1000 "$TMP/sample.igvm" >"$TMP/trunc.igvm"
"$M" --igvm "$TMP/trunc.igvm" >/dev/null 2>"$TMP/err"; rc=$?
check "truncated file: exit 1, one line on stderr" "$rc:$(wc -l <"$TMP/err")" "1:1"
grep -q "inconsistent fixed header" "$TMP/err" && ok "truncated file: the error says why" ||
	nok "truncated file: unclear error: $(cat "$TMP/err")"
"$M" --igvm "$TMP/sample.igvm" --vcpus 2 >/dev/null 2>"$TMP/err"; rc=$?
check "--vcpus 2 without a vCPU type: exit 1" "$rc" "1"
"$M" --dump >/dev/null 2>&1; check "--dump without --igvm: exit 2" "$?" "2"
"$M" --igvm "$TMP/sample.igvm" --ovmf "$DEB_OVMF" >/dev/null 2>&1; check "--igvm with --ovmf: exit 2" "$?" "2"
"$M" --igvm "$TMP/sample.igvm" --vcpus 0 >/dev/null 2>&1; check "--igvm --vcpus 0: exit 2" "$?" "2"
"$M" --igvm "$TMP/nonexistent.igvm" >/dev/null 2>&1; check "missing file: exit 1" "$?" "1"

# --- images csvsm-igvm builds from csvsm's ELF and Debian's (bookworm) OVMF ---
if [ -f "$ELF" ] && [ -f "$DEB_OVMF" ]; then
	# shellcheck disable=SC2046
	"$B" --elf "$ELF" --ovmf "$DEB_OVMF" $(entry_args "$ELF") --append "csvsm.guest_vmpl=2" \
		-o "$TMP/deb.igvm" >"$TMP/out" 2>"$TMP/err"; rc=$?
	check "csvsm-igvm with Debian's OVMF: exit 0" "$rc" "0"
	# shellcheck disable=SC2046
	"$B" --elf "$ELF" --ovmf "$DEB_OVMF" $(entry_args "$ELF") --append "csvsm.guest_vmpl=2" \
		-o "$TMP/deb2.igvm" >/dev/null 2>&1
	cmp -s "$TMP/deb.igvm" "$TMP/deb2.igvm" && ok "csvsm-igvm is deterministic" ||
		nok "csvsm-igvm: two builds differ"
	printed=$(sed -n 's/.*launch digest (1 vCPU) \([0-9a-f]*\)$/\1/p' "$TMP/out")
	check "csvsm-igvm prints the digest csvsm-measure computes" "$printed" \
		"$("$M" --igvm "$TMP/deb.igvm" 2>/dev/null)"
	measure_matches "csvsm + Debian OVMF" "$TMP/deb.igvm"
	"$M" --igvm "$TMP/deb.igvm" --dump >"$TMP/dump" 2>/dev/null
	if grep -q 'VP_CONTEXT .*gpa=0xfffffffff000 .*sev_features=0x29 qemu9-fields=zero ' "$TMP/dump" &&
		[ "$(grep -c ' VP_CONTEXT ' "$TMP/dump")" = 1 ] &&
		[ "$(tail -n1 "$TMP/dump" | grep -c VP_CONTEXT)" = 1 ]; then
		ok "csvsm image: one VMSA, last, at 0xFFFFFFFFF000, SEV_FEATURES 0x29 (SNPActive, RestrictedInjection, DebugSwap)"
	else
		nok "csvsm image: VMSA directive wrong"
	fi
	# The VMSA fields the COCONUT QEMU 9-era check_vmsa_supported refuses
	# non-zero (GDTR/LDTR/IDTR/TR, MXCSR, x87 FCW), read by the independent
	# model: zero, so every QEMU's check takes the image (docs/hardware.md).
	check "csvsm image: GDTR/LDTR/IDTR/TR, MXCSR and FCW zero in the VMSA (igvm_ref.py vmsa)" \
		"$($REF vmsa "$TMP/deb.igvm")" \
		"vp=0 gpa=0xfffffffff000 sev_features=0x29 gdtr_ldtr_idtr_tr=zero mxcsr=0x0 fcw=0x0"
	# --no-debug-swap: SEV_FEATURES 0x9 for a host without DebugSwap; the
	# digest moves with it, and csvsm-measure --host-sev-features refuses
	# the default image on such a host with QEMU >= 10.1's words.
	# shellcheck disable=SC2046
	"$B" --elf "$ELF" --ovmf "$DEB_OVMF" $(entry_args "$ELF") --append "csvsm.guest_vmpl=2" \
		--no-debug-swap -o "$TMP/nodbg.igvm" >/dev/null 2>&1
	a=$("$M" --igvm "$TMP/deb.igvm" 2>/dev/null); b=$("$M" --igvm "$TMP/nodbg.igvm" 2>/dev/null)
	if [ "$($REF vmsa "$TMP/nodbg.igvm" | grep -o 'sev_features=[^ ]*')" = sev_features=0x9 ] &&
	   [ -n "$b" ] && [ "$a" != "$b" ] && [ "$b" = "$($REF measure "$TMP/nodbg.igvm")" ]; then
		ok "csvsm-igvm --no-debug-swap: SEV_FEATURES 0x9, its own digest (igvm_ref.py agrees)"
	else nok "csvsm-igvm --no-debug-swap: '$($REF vmsa "$TMP/nodbg.igvm")' '$a' '$b'"; fi
	"$M" --igvm "$TMP/deb.igvm" --host-sev-features 0x8 >/dev/null 2>"$TMP/err"; rc=$?
	check "csvsm-measure --host-sev-features 0x8 (no debug_swap): exit 1, QEMU's message" \
		"$rc:$(grep -c 'VMSA contains unsupported sev_features: 29, supported features: 8' "$TMP/err")" "1:1"
	check "csvsm-measure --host-sev-features 0x28: the digest" \
		"$("$M" --igvm "$TMP/deb.igvm" --host-sev-features 0x28 2>/dev/null)" "$a"
	if grep -q 'GUEST_POLICY .*policy=0x30000 abi=0.0 smt=1 migrate_ma=0 debug=0' "$TMP/dump" &&
		grep -q 'SUPPORTED_PLATFORM .*platform=SEV_SNP highest_vtl=2' "$TMP/dump"; then
		ok "csvsm image: SEV-SNP platform (VTL2 = VMPL0) and policy 0x30000"
	else
		nok "csvsm image: platform or policy header wrong"
	fi
	if grep -q 'PARAMETER_INSERT .*gpa=0xfe001000' "$TMP/dump" && grep -q ' MEMORY_MAP ' "$TMP/dump" &&
		grep -q ' VP_COUNT_PARAMETER ' "$TMP/dump" && grep -q ' MADT ' "$TMP/dump" &&
		grep -q 'PAGE_DATA .*gpa=0xfe000000 .*snp=NORMAL' "$TMP/dump" &&
		grep -q 'snp=SECRETS' "$TMP/dump" && grep -q 'snp=CPUID' "$TMP/dump"; then
		ok "csvsm image: parameter areas, boot block, secrets and CPUID pages"
	else
		nok "csvsm image: parameter areas/boot block/secrets/CPUID missing"
	fi
	first_page=$(grep -n ' PAGE_DATA ' "$TMP/dump" | head -n1 | cut -d: -f1)
	last_insert=$(grep -n ' PARAMETER_INSERT ' "$TMP/dump" | tail -n1 | cut -d: -f1)
	[ "$last_insert" -lt "$first_page" ] && ok "csvsm image: inserts before pages (QEMU order = file order)" ||
		nok "csvsm image: an insert follows a page"
	a=$("$M" --igvm "$TMP/deb.igvm" 2>/dev/null)
	# shellcheck disable=SC2046
	"$B" --elf "$ELF" --ovmf "$DEB_OVMF" $(entry_args "$ELF") -o "$TMP/deb3.igvm" >/dev/null 2>&1
	b=$("$M" --igvm "$TMP/deb3.igvm" 2>/dev/null)
	[ -n "$a" ] && [ "$a" != "$b" ] && ok "the measured command line changes the digest" ||
		nok "the command line does not change the digest"
	corrupt_check "csvsm + Debian OVMF" "$TMP/deb.igvm" $(offsets "$TMP/deb.igvm" 24)
	"$B" --elf "$ELF" --ovmf "$DEB_OVMF" --entry-symbol no_such_symbol -o "$TMP/x.igvm" \
		>/dev/null 2>"$TMP/err"; rc=$?
	check "csvsm-igvm: unknown entry symbol: exit 1, one line" "$rc:$(wc -l <"$TMP/err")" "1:1"
	"$B" --elf "$ELF" -o "$TMP/x.igvm" >/dev/null 2>&1
	check "csvsm-igvm without --ovmf: exit 2" "$?" "2"
	head -c 8192 "$DEB_OVMF" >"$TMP/plain.fd"
	"$B" --elf "$ELF" --ovmf "$TMP/plain.fd" --entry-symbol pvh_entry32 -o "$TMP/x.igvm" \
		>/dev/null 2>"$TMP/err"; rc=$?
	check "csvsm-igvm with a firmware without SEV metadata: exit 1" "$rc" "1"
else
	skip "csvsm-igvm image checks need $ELF and $DEB_OVMF"
fi

# --- build/csvsm.igvm from `make` (trixie OVMF) ---
if [ -f build/guests/OVMF.fd ] && [ -f "$IMG" ]; then
	measure_matches "build/csvsm.igvm" "$IMG"
	"$M" --igvm "$IMG" --dump >"$TMP/dump" 2>/dev/null; rc=$?
	check "build/csvsm.igvm --dump: exit 0" "$rc" "0"
	grep -q 'snp=SECRETS' "$TMP/dump" && grep -q 'snp=CPUID' "$TMP/dump" &&
		ok "build/csvsm.igvm: secrets and CPUID pages" || nok "build/csvsm.igvm: secrets/CPUID missing"
	corrupt_check "build/csvsm.igvm" "$IMG" $(offsets "$IMG" 24)
	# make host-cmdline (docs/hardware.md), by default for COCONUT's planes
	# host: the planes machine options (split irqchip: v1 PATCH 54/60;
	# device-plane=2: svsm 4b2f71de/f4effdf8), then the MEASUREMENT for the
	# BSP's VMSA only (what that host measures: COCONUT's RELEASE-TESTPLAN.md
	# attests with igvmmeasure --check-kvm at -smp 4), then one per vCPU.
	out=$(MEASURE=$M tools/host-cmdline.sh "$IMG" 3 4G 51 2>&1)
	d1=$("$M" --igvm "$IMG" --vcpus 1 --vcpu-type EPYC-v4 2>/dev/null)
	d3=$("$M" --igvm "$IMG" --vcpus 3 --vcpu-type EPYC-v4 2>/dev/null)
	if grep -q -- "-machine q35,.*,igvm-cfg=igvm0,kernel-irqchip=split,device-plane=2 " <<<"$out" &&
	   grep -q "igvm-cfg,id=igvm0,file=$IMG" <<<"$out" && grep -q -- "-smp 3" <<<"$out" &&
	   [ "$(grep -xE '[0-9a-f]{96}' <<<"$out" | paste -sd, -)" = "$d1,$d3" ] && [ "$d3" != "$d1" ] &&
	   grep -q -- "--vcpus 1 .*" <<<"$(grep -B1 -x "$d1" <<<"$out")"; then
		ok "host-cmdline (default: planes): kernel-irqchip=split,device-plane=2; the 1-VMSA digest first, the 3-VMSA one second"
	else nok "host-cmdline (default): got '$(grep -- -machine <<<"$out")' / $(grep -xE '[0-9a-f]{96}' <<<"$out" | paste -sd, -)"; fi
	check "host-cmdline KVM=coconut is the same (planes) host" \
		"$(MEASURE=$M tools/host-cmdline.sh "$IMG" 3 4G 51 coconut 2>&1)" "$out"
	out=$(MEASURE=$M tools/host-cmdline.sh "$IMG" 1 4G 51 planes 2>&1)
	check "host-cmdline SMP=1: one digest" "$(grep -xE '[0-9a-f]{96}' <<<"$out")" "$d1"
	if MEASURE=$M tools/host-cmdline.sh "$IMG" 3 4G 51 upstream >/dev/null 2>"$TMP/err"; then
		nok "host-cmdline refuses KVM=upstream (it runs VMPL0 only)"
	else check "host-cmdline refuses KVM=upstream (it runs VMPL0 only)" \
		"$(grep -c 'upstream KVM runs VMPL0 only' "$TMP/err")" 1; fi
	if tools/host-cmdline.sh "$IMG" 3 4G 51 bogus >/dev/null 2>&1; then nok "host-cmdline refuses KVM=bogus"
	else ok "host-cmdline refuses KVM=bogus"; fi
elif [ -f build/guests/OVMF.fd ]; then
	nok "build/guests/OVMF.fd exists but $IMG was not built (make all)"
else
	skip "build/csvsm.igvm: build/guests/OVMF.fd absent (make deps fetches trixie OVMF)"
fi
