#!/usr/bin/env bash
# csvsm-measure end to end: the published sev-snp-measure vectors, Debian's
# OVMF, the option forms, and the exit codes (0 ok, 1 bad input, 2 usage).
# Prints TAP lines. Fixtures are read from $SHARED/fixtures/snp/measure
# (default ../shared from the repository root) and skipped if absent.
set -u
cd "$(dirname "$0")/../.." || exit 1
M=${CSVSM_MEASURE:-build/csvsm-measure}
case $M in /*) ;; *) M=$PWD/$M ;; esac
SHARED=${SHARED:-../shared}
[ -d "$SHARED" ] && SHARED=$(cd "$SHARED" && pwd)
FIX=$SHARED/fixtures/snp/measure
DEB_OVMF=/usr/share/ovmf/OVMF.fd
# Debian bookworm ovmf 2022.11-6+deb12u2: SHA-256 of OVMF.fd and its measurement
# (snp, 2 vCPUs, EPYC, guest features 0x1), computed by this tool; pinned so a
# change in the computation shows up even when no published vector covers it.
DEB_SHA=7b456907dd0786d415999e801a1ac4637b8ed4d7cf5378cfc6edbe5e574dd773
DEB_LD=a5b54e62ae971b58274dd24cc6c47b842662617036e7bd67d7326c07ac6363f35399ef933330a5ea160cead90a00603f
V_AMDSEV=e1e1ca029dd7973ab9513295be68198472dcd4fc834bd9af9b63f6e8a1674dbf281a9278a4a2ebe0eed9f22adbcd0e2b
V_OVMFX64=28797ae0afaba4005a81e629acebfb59e6687949d6be44007cd5506823b0dd66f146aaae26ff291eed7b493d8a64c385

n=0
ok()   { n=$((n + 1)); echo "ok $n - $1"; }
nok()  { n=$((n + 1)); echo "not ok $n - $1"; }
skip() { n=$((n + 1)); echo "ok $n # SKIP $1"; }
check() { if [ "$2" = "$3" ]; then ok "$1"; else nok "$1 (got '$2', want '$3')"; fi; }

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

if [ ! -x "$M" ]; then
	echo "not ok 1 - $M not built"
	exit 1
fi

have_fix=0
[ -f "$FIX/ovmf-amdsev-last4k.bin" ] && [ -f "$FIX/ovmf-ovmfx64-last4k.bin" ] && have_fix=1
snp() { "$M" --mode snp --vcpus 1 --vcpu-type EPYC-v4 --guest-features 0x21 "$@" 2>"$TMP/err"; }

# --- published vectors (sev-snp-measure tests/test_guest.py) ---
if [ $have_fix = 1 ]; then
	check "vector: AmdSevX64 last 4K, 1 vCPU, EPYC-v4, features 0x21" \
		"$(snp --ovmf "$FIX/ovmf-amdsev-last4k.bin")" "$V_AMDSEV"
	check "vector: OvmfPkgX64 last 4K, 1 vCPU, EPYC-v4, features 0x21" \
		"$(snp --ovmf "$FIX/ovmf-ovmfx64-last4k.bin")" "$V_OVMFX64"
	check "--vcpu-sig 0x800f12 is EPYC-v4" \
		"$("$M" --mode snp --vcpus 1 --vcpu-sig 0x800f12 --guest-features 0x21 --ovmf "$FIX/ovmf-amdsev-last4k.bin")" "$V_AMDSEV"
	check "--vcpu-family/model/stepping 23/1/2 is EPYC-v4" \
		"$("$M" --mode snp --vcpus 1 --vcpu-family 23 --vcpu-model 1 --vcpu-stepping 2 --guest-features 33 --ovmf "$FIX/ovmf-amdsev-last4k.bin")" "$V_AMDSEV"
	want=$(printf '%s' "$V_AMDSEV" | xxd -r -p | base64 -w0)
	check "--output-format base64" \
		"$(snp --ovmf "$FIX/ovmf-amdsev-last4k.bin" --output-format base64)" "$want"
	seed=$("$M" --mode snp:ovmf-hash --ovmf "$FIX/ovmf-amdsev-last4k.bin")
	check "snp --snp-ovmf-hash (seed from snp:ovmf-hash) equals the full computation" \
		"$(snp --ovmf "$FIX/ovmf-amdsev-last4k.bin" --snp-ovmf-hash "$seed")" "$V_AMDSEV"
	printf 'kernel image' >"$TMP/k"; printf 'initrd image' >"$TMP/i"
	a=$(snp --ovmf "$FIX/ovmf-amdsev-last4k.bin" --kernel "$TMP/k")
	b=$(snp --ovmf "$FIX/ovmf-amdsev-last4k.bin" --kernel "$TMP/k" --initrd "$TMP/i" --append "console=ttyS0")
	if [[ "$a" =~ ^[0-9a-f]{96}$ && "$b" =~ ^[0-9a-f]{96}$ && "$a" != "$V_AMDSEV" && "$a" != "$b" ]]; then
		ok "--kernel/--initrd/--append measure the kernel-hashes page"
	else
		nok "--kernel/--initrd/--append measure the kernel-hashes page ($a / $b)"
	fi
	snp --ovmf "$FIX/ovmf-ovmfx64-last4k.bin" --kernel "$TMP/k" >/dev/null; rc=$?
	if [ $rc = 1 ] && grep -q SNP_KERNEL_HASHES "$TMP/err"; then
		ok "--kernel with a firmware without SNP_KERNEL_HASHES: exit 1"
	else
		nok "--kernel with a firmware without SNP_KERNEL_HASHES: exit 1 (rc $rc)"
	fi
	check "--append without --kernel is ignored (as sev-snp-measure)" \
		"$(snp --ovmf "$FIX/ovmf-amdsev-last4k.bin" --append "console=ttyS0")" "$V_AMDSEV"
	check "precedence: --vcpu-sig over --vcpu-type (cli.py)" \
		"$("$M" --mode snp --vcpus 1 --vcpu-type EPYC-Milan --vcpu-sig 0x800f12 --guest-features 0x21 --ovmf "$FIX/ovmf-amdsev-last4k.bin")" "$V_AMDSEV"
	rm -f "$TMP"/vmsa*.bin
	(cd "$TMP" && "$M" --mode snp --vcpus 3 --vcpu-type EPYC-v4 --guest-features 0x21 \
		--ovmf "$FIX/ovmf-amdsev-last4k.bin" --dump-vmsa >/dev/null 2>&1)
	if [ -f "$TMP/vmsa0.bin" ] && [ -f "$TMP/vmsa2.bin" ] && [ ! -f "$TMP/vmsa3.bin" ] &&
	   [ "$(stat -c %s "$TMP/vmsa0.bin")" = 4096 ] && ! cmp -s "$TMP/vmsa0.bin" "$TMP/vmsa1.bin" &&
	   cmp -s "$TMP/vmsa1.bin" "$TMP/vmsa2.bin"; then
		ok "--dump-vmsa writes one 4 KiB page per vCPU (BSP differs from APs)"
	else
		nok "--dump-vmsa writes one 4 KiB page per vCPU (BSP differs from APs)"
	fi
	"$M" --mode snp:svsm --vcpus 1 --vcpu-type EPYC --ovmf "$FIX/ovmf-ovmfx64-last4k.bin" \
		--svsm "$FIX/ovmf-amdsev-last4k.bin" --vars-size 0x20000 >/dev/null 2>&1; rc=$?
	check "snp:svsm with an image lacking the SVSM info entry: exit 1" "$rc" 1
else
	for t in "vector: AmdSevX64" "vector: OvmfPkgX64" "--vcpu-sig" "--vcpu-family" \
		"base64" "seed" "kernel hashes" "kernel without section" "append w/o kernel" \
		"precedence" "dump-vmsa" "snp:svsm error"; do
		skip "$t: fixtures not found in $FIX (set SHARED)"
	done
fi

# --- Debian's OVMF ---
if [ -f "$DEB_OVMF" ]; then
	a=$("$M" --mode snp --vcpus 2 --vcpu-type EPYC --ovmf "$DEB_OVMF")
	b=$("$M" --mode snp --vcpus 2 --vcpu-type EPYC --ovmf "$DEB_OVMF")
	if [[ "$a" =~ ^[0-9a-f]{96}$ && "$a" = "$b" ]]; then
		ok "Debian OVMF.fd: stable 96-hex-digit measurement"
	else
		nok "Debian OVMF.fd: stable 96-hex-digit measurement ($a / $b)"
	fi
	if [ "$(sha256sum "$DEB_OVMF" | cut -d' ' -f1)" = "$DEB_SHA" ]; then
		check "Debian OVMF.fd (2022.11-6+deb12u2): pinned measurement" "$a" "$DEB_LD"
	else
		skip "Debian OVMF.fd is not the pinned build"
	fi
	"$M" --mode snp --vcpus 1 --vcpu-type EPYC --ovmf "$DEB_OVMF" --kernel "$DEB_OVMF" >/dev/null 2>&1
	check "Debian OVMF.fd has no kernel-hashes section: --kernel exits 1" "$?" 1
else
	for t in stable pinned kernel; do skip "$DEB_OVMF not installed ($t)"; done
fi

# --- usage errors: exit 2 ---
head -c 4096 /dev/zero >"$TMP/zero.fd"
usage_case() {
	local what=$1; shift
	"$M" "$@" >/dev/null 2>"$TMP/err"; local rc=$?
	if [ $rc = 2 ] && [ -s "$TMP/err" ]; then ok "usage error exits 2: $what"
	else nok "usage error exits 2: $what (rc $rc)"; fi
}
usage_case "no arguments"
usage_case "unknown option" --mode snp --bogus
usage_case "unknown mode" --mode sev-es --ovmf "$TMP/zero.fd"
usage_case "the retired sim platform's mode is gone" --mode csvsm-sim --vcpus 1 --svsm /bin/true --ovmf "$TMP/zero.fd"
usage_case "missing --ovmf" --mode snp --vcpus 1 --vcpu-type EPYC
usage_case "missing --vcpus" --mode snp --vcpu-type EPYC --ovmf "$TMP/zero.fd"
usage_case "--vcpus 0" --mode snp --vcpus 0 --vcpu-type EPYC --ovmf "$TMP/zero.fd"
usage_case "--vcpus not a number" --mode snp --vcpus two --vcpu-type EPYC --ovmf "$TMP/zero.fd"
usage_case "unknown --vcpu-type" --mode snp --vcpus 1 --vcpu-type Pentium --ovmf "$TMP/zero.fd"
usage_case "no vCPU type" --mode snp --vcpus 1 --ovmf "$TMP/zero.fd"
usage_case "bad --guest-features" --mode snp --vcpus 1 --vcpu-type EPYC --guest-features 0xZZ --ovmf "$TMP/zero.fd"
usage_case "bad --snp-ovmf-hash hex" --mode snp --vcpus 1 --vcpu-type EPYC --snp-ovmf-hash abcd --ovmf "$TMP/zero.fd"
usage_case "bad --output-format" --mode snp:ovmf-hash --output-format json --ovmf "$TMP/zero.fd"
usage_case "--vmm-type ec2 unsupported" --mode snp --vmm-type ec2 --vcpus 1 --vcpu-type EPYC --ovmf "$TMP/zero.fd"
usage_case "snp:svsm without --svsm" --mode snp:svsm --vcpus 1 --vcpu-type EPYC --vars-size 0 --ovmf "$TMP/zero.fd"
"$M" --help >/dev/null; check "--help exits 0" "$?" 0

# --- bad inputs: exit 1 ---
"$M" --mode snp --vcpus 1 --vcpu-type EPYC --ovmf "$TMP/missing.fd" >/dev/null 2>&1
check "missing firmware file exits 1" "$?" 1
"$M" --mode snp --vcpus 1 --vcpu-type EPYC --ovmf "$TMP/zero.fd" >/dev/null 2>&1
check "firmware without a footer table exits 1" "$?" 1
head -c 100 /dev/zero >"$TMP/short.fd"
"$M" --mode snp:ovmf-hash --ovmf "$TMP/short.fd" >/dev/null 2>&1
check "firmware size not a multiple of 4096 exits 1" "$?" 1
out=$("$M" --mode snp:ovmf-hash --ovmf "$TMP/zero.fd")
[[ "$out" =~ ^[0-9a-f]{96}$ ]] && ok "snp:ovmf-hash needs no metadata" || nok "snp:ovmf-hash needs no metadata"
echo "1..$n"
