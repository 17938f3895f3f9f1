#!/usr/bin/env bash
# csvsm-verify against the real SEV-SNP fixtures ($SHARED/fixtures/snp) and
# against tampered copies made here in a temp dir. TAP output ("ok N - ...").
# The fixtures are read in place, never copied into the repository.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SHARED=${SHARED:-$ROOT/../shared}
case "$SHARED" in /*) ;; *) SHARED=$ROOT/$SHARED ;; esac
FX=$SHARED/fixtures/snp
V=${CSVSM_VERIFY:-$ROOT/build/csvsm-verify}
n=0; failed=0

if [ ! -d "$FX/reports" ] || [ ! -d "$FX/roots" ]; then
	echo "# SKIP: fixtures not found at $FX/reports and $FX/roots"
	echo "1..0 # SKIP no SEV-SNP fixtures"
	exit 0
fi
if [ ! -x "$V" ]; then
	echo "not ok 1 - csvsm-verify not built ($V)"
	exit 1
fi
T=$(mktemp -d); [ -n "${KEEP_TMP:-}" ] && echo "# temp dir $T" || trap 'rm -rf "$T"' EXIT
R=$FX/reports; K=$FX/roots

ok() { n=$((n + 1)); echo "ok $n - $*"; }
nok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; }

# run DESC EXPECTED_RC [CHECK=STATE ...] -- ARGS...: runs with --json, checks
# the exit status, that the JSON parses, and the named checks' outcome.
run() {
	local desc=$1 want=$2; shift 2
	local expect=()
	while [ "$1" != "--" ]; do expect+=("$1"); shift; done; shift
	"$V" --json "$@" >"$T/out.json" 2>"$T/err"; local rc=$?
	if [ "$rc" != "$want" ]; then
		nok "$desc (exit $rc, want $want)"; sed 's/^/# /' "$T/err" "$T/out.json" | head -40; return
	fi
	if [ "$want" != 2 ] && ! python3 -m json.tool "$T/out.json" >/dev/null 2>&1; then
		nok "$desc (JSON does not parse)"; return
	fi
	# The warm chain cache reused for more reports and shared by two threads
	# (--repeat 4 --threads 2; csvsm-verify exits 2 if the threads' results
	# differ) gives the same result, byte for byte, as the cache made for one run.
	if [ "$want" != 2 ]; then
		"$V" --json "$@" --repeat 4 --threads 2 >"$T/rep.json" 2>"$T/rep.err"
		if ! cmp -s "$T/out.json" "$T/rep.json"; then
			nok "$desc (--repeat 4 --threads 2 differs)"
			diff "$T/out.json" "$T/rep.json" | head -10 | sed 's/^/# /'; sed 's/^/# /' "$T/rep.err"; return
		fi
	fi
	for e in "${expect[@]}"; do
		local name=${e%=*} st=${e#*=}
		local got
		got=$(python3 -c '
import json,sys
d=json.load(open(sys.argv[1]))
for c in d["checks"]:
    if c["name"]==sys.argv[2]:
        print("skip" if c.get("skipped") else ("pass" if c["ok"] else "fail")); break
else: print("absent")' "$T/out.json" "$name" 2>/dev/null)
		if [ "$got" != "$st" ]; then
			nok "$desc ($name is $got, want $st)"; head -c 3000 "$T/out.json" | sed 's/^/# /'; return
		fi
	done
	ok "$desc"
}

prod() { case $1 in milan*) echo milan ;; genoa*|siena*) echo genoa ;; turin*) echo turin ;; esac; }

# --- every fixture verifies with the right options --------------------------
for f in milan-v2 milan-v2-tcbdiff milan-v3 milan-v3-b genoa-v5 turin-v5 siena-v3; do
	p=$(prod $f)
	run "$f verifies (explicit --ark/--ask)" 0 parse=pass signature=pass chain=pass tcb=pass chip_id=pass \
		policy.debug=pass policy.vmpl=pass -- \
		--report $R/$f.report.bin --vcek $R/$f.vcek.der --ark $K/${p}_ark.pem --ask $K/${p}_ask.pem
	run "$f verifies (--roots, product detected)" 0 chain=pass -- \
		--report $R/$f.report.bin --vcek $R/$f.vcek.der --roots $K
done
run "genoa-tsm verifies from its certificate table (PEM, RFC-4122 GUIDs)" 0 \
	parse=pass signature=pass chain=pass tcb=pass chip_id=pass -- \
	--report $R/genoa-tsm.report.bin --cert-table $R/genoa-tsm.certtable.bin
run "siena-v3 verifies with --product genoa" 0 chain=pass -- \
	--report $R/siena-v3.report.bin --vcek $R/siena-v3.vcek.der --roots $K --product genoa
run "turin-v5 under --product milan fails chain (product mismatch)" 1 chain=fail -- \
	--report $R/turin-v5.report.bin --vcek $R/turin-v5.vcek.der --ark $K/turin_ark.pem \
	--ask $K/turin_ask.pem --product milan

# --- snpguest --certs layout ------------------------------------------------
mkdir -p "$T/certs"
cp $K/milan_ark.pem "$T/certs/ark.pem"; cp $K/milan_ask.pem "$T/certs/ask.pem"
cp $R/milan-v3.vcek.der "$T/certs/vcek.der"
run "milan-v3 verifies with --certs DIR" 0 chain=pass signature=pass -- \
	--report $R/milan-v3.report.bin --certs "$T/certs"
openssl x509 -inform der -in $R/milan-v3.vcek.der -out "$T/vcek.pem"
run "milan-v3 verifies with a PEM VCEK" 0 signature=pass chain=pass -- \
	--report $R/milan-v3.report.bin --vcek "$T/vcek.pem" --roots $K

# --- policy: debug ----------------------------------------------------------
run "milan-v2-debug fails policy.debug by default" 1 signature=pass chain=pass policy.debug=fail -- \
	--report $R/milan-v2-debug.report.bin --vcek $R/milan-v2-debug.vcek.der --roots $K
run "milan-v2-debug passes with --allow-debug" 0 policy.debug=pass -- \
	--report $R/milan-v2-debug.report.bin --vcek $R/milan-v2-debug.vcek.der --roots $K --allow-debug

# --- VLEK -------------------------------------------------------------------
VL="--report $R/milan-vlek-vmpl1.report.bin --vlek $R/milan-vlek-vmpl1.vlek.der --ark $K/milan_ark.pem"
run "milan-vlek-vmpl1 passes with --time 2025-06-01, ASVK, --vmpl 1" 0 signature=pass chain=pass tcb=pass \
	chip_id=skip policy.vmpl=pass -- $VL --asvk $K/milan_asvk.pem --time 2025-06-01 --vmpl 1
run "milan-vlek-vmpl1 fails policy.vmpl by default" 1 policy.vmpl=fail -- \
	$VL --asvk $K/milan_asvk.pem --time 2025-06-01
run "milan-vlek-vmpl1 fails chain now (VLEK expired 2025-12-10)" 1 chain=fail -- \
	$VL --asvk $K/milan_asvk.pem --time 2025-12-11 --vmpl 1
run "milan-vlek-vmpl1 fails chain with the ASK instead of the ASVK" 1 chain=fail -- \
	$VL --ask $K/milan_ask.pem --time 2025-06-01 --vmpl 1
run "milan-vlek-vmpl1 passes with --roots (ASVK picked)" 0 chain=pass -- \
	--report $R/milan-vlek-vmpl1.report.bin --vlek $R/milan-vlek-vmpl1.vlek.der --roots $K \
	--time 2025-06-01 --vmpl 1
run "VLEK report with a VCEK certificate fails signature" 1 signature=fail -- \
	--report $R/milan-vlek-vmpl1.report.bin --vcek $R/milan-v3.vcek.der --roots $K --time 2025-06-01 --vmpl 1

# --- tampered copies --------------------------------------------------------
flip() { # flip SRC DST OFFSET [XOR]
	python3 -c 'import sys
b=bytearray(open(sys.argv[1],"rb").read()); o=int(sys.argv[3],0); b[o]^=int(sys.argv[4],0)
open(sys.argv[2],"wb").write(b)' "$1" "$2" "$3" "${4:-0x01}"
}
M3="--vcek $R/milan-v3.vcek.der --roots $K"
flip $R/milan-v3.report.bin "$T/meas.bin" 0x90
run "flipped MEASUREMENT byte fails signature" 1 parse=pass signature=fail -- --report "$T/meas.bin" $M3
flip $R/milan-v3.report.bin "$T/rd.bin" 0x50
run "flipped REPORT_DATA byte fails signature" 1 signature=fail -- --report "$T/rd.bin" $M3
flip $R/milan-v3.report.bin "$T/sig.bin" 0x2A0
run "flipped signature R byte fails signature" 1 signature=fail -- --report "$T/sig.bin" $M3
flip $R/milan-v3.report.bin "$T/sigs.bin" 0x2E8
run "flipped signature S byte fails signature" 1 signature=fail -- --report "$T/sigs.bin" $M3
flip $R/milan-v3.report.bin "$T/sighi.bin" 0x2D0
run "non-zero R high byte fails parse and signature" 1 parse=fail signature=fail -- --report "$T/sighi.bin" $M3
run "another chip's VCEK fails signature and chip_id" 1 signature=fail chip_id=fail chain=pass -- \
	--report $R/milan-v3.report.bin --vcek $R/milan-v3-b.vcek.der --roots $K
flip $R/milan-v3.report.bin "$T/rsv.bin" 0x208
run "reserved byte 0x208 set fails parse" 1 parse=fail -- --report "$T/rsv.bin" $M3
flip $R/milan-v3.report.bin "$T/rsv2.bin" 0x400
run "reserved byte 0x400 (unsigned area) set fails parse, signature still passes" 1 parse=fail signature=pass -- \
	--report "$T/rsv2.bin" $M3
flip $R/milan-v2.report.bin "$T/rsv3.bin" 0x188
run "v2: CPUID byte 0x188 (reserved in v2) set fails parse" 1 parse=fail -- \
	--report "$T/rsv3.bin" --vcek $R/milan-v2.vcek.der --roots $K
flip $R/milan-v3.report.bin "$T/ver.bin" 0x0 0x05
run "unknown VERSION 6 fails parse" 1 parse=fail -- --report "$T/ver.bin" $M3
flip $R/milan-v3.report.bin "$T/alg.bin" 0x34 0x03
run "SIGNATURE_ALGO 2 fails parse and signature" 1 parse=fail signature=fail -- --report "$T/alg.bin" $M3
head -c 1000 $R/milan-v3.report.bin >"$T/short.bin"
run "truncated report exits 2" 2 -- --report "$T/short.bin" $M3
cat $R/milan-v3.report.bin $R/milan-v3.report.bin >"$T/long.bin"
run "over-long report exits 2" 2 -- --report "$T/long.bin" $M3
run "missing report file exits 2" 2 -- --report "$T/nonexistent.bin" $M3
run "missing ASK exits 2" 2 -- --report $R/milan-v3.report.bin --vcek $R/milan-v3.vcek.der --ark $K/milan_ark.pem
run "unknown option exits 2" 2 -- --report $R/milan-v3.report.bin $M3 --bogus

# --- wrong roots ------------------------------------------------------------
run "Genoa ARK with the Milan chain fails chain" 1 chain=fail signature=pass -- \
	--report $R/milan-v3.report.bin --vcek $R/milan-v3.vcek.der --ark $K/genoa_ark.pem --ask $K/milan_ask.pem
run "Genoa ASK under the Milan ARK fails chain" 1 chain=fail -- \
	--report $R/milan-v3.report.bin --vcek $R/milan-v3.vcek.der --ark $K/milan_ark.pem --ask $K/genoa_ask.pem
# A self-made root with AMD's name and PSS parameters is not pinned.
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$T/fake.key" -out "$T/fake_ark.pem" -days 30 \
	-subj "/OU=Engineering/C=US/L=Santa Clara/ST=CA/O=Advanced Micro Devices/CN=ARK-Milan" \
	-sha384 -sigopt rsa_padding_mode:pss -sigopt rsa_pss_saltlen:48 >/dev/null 2>&1
run "unpinned ARK fails chain" 1 chain=fail -- \
	--report $R/milan-v3.report.bin --vcek $R/milan-v3.vcek.der --ark "$T/fake_ark.pem" --ask $K/milan_ask.pem
run "--trust-ark of an unrelated root does not rescue the AMD ASK" 1 chain=fail -- \
	--report $R/milan-v3.report.bin --vcek $R/milan-v3.vcek.der --trust-ark "$T/fake_ark.pem" --ask $K/milan_ask.pem
run "expired chain at --time 2050-01-01 fails chain" 1 chain=fail -- \
	--report $R/milan-v3.report.bin $M3 --time 2050-01-01

# --- measurement / report_data / min_tcb ------------------------------------
MEAS=$(python3 -c 'import sys;print(open(sys.argv[1],"rb").read()[0x90:0xC0].hex())' $R/milan-v3.report.bin)
RDATA=$(python3 -c 'import sys;print(open(sys.argv[1],"rb").read()[0x50:0x90].hex())' $R/milan-v3.report.bin)
run "--measurement equal passes" 0 measurement=pass -- --report $R/milan-v3.report.bin $M3 --measurement $MEAS
run "milan-v3-b has the same MEASUREMENT" 0 measurement=pass -- \
	--report $R/milan-v3-b.report.bin --vcek $R/milan-v3-b.vcek.der --roots $K --measurement $MEAS
BAD=$(python3 -c 'import sys;b=bytearray.fromhex(sys.argv[1]);b[0]^=1;print(b.hex())' $MEAS)
run "--measurement mismatch fails measurement" 1 measurement=fail signature=pass -- \
	--report $R/milan-v3.report.bin $M3 --measurement $BAD
run "--report-data equal passes" 0 report_data=pass -- --report $R/milan-v3.report.bin $M3 --report-data $RDATA
run "--report-data mismatch fails report_data" 1 report_data=fail -- \
	--report $R/milan-v3.report.bin $M3 --report-data 00
run "--min-tcb equal to REPORTED_TCB passes" 0 policy.min_tcb=pass -- \
	--report $R/milan-v3.report.bin $M3 --min-tcb bl=4,tee=0,snp=24,ucode=219
run "--min-tcb too high fails policy.min_tcb" 1 policy.min_tcb=fail -- \
	--report $R/milan-v3.report.bin $M3 --min-tcb bl=4,tee=0,snp=25,ucode=219
run "turin --min-tcb fmc too high fails policy.min_tcb" 1 policy.min_tcb=fail tcb=pass -- \
	--report $R/turin-v5.report.bin --vcek $R/turin-v5.vcek.der --roots $K --min-tcb fmc=1
run "--min-tcb malformed exits 2" 2 -- --report $R/milan-v3.report.bin $M3 --min-tcb bl=300
run "--measurement short exits 2" 2 -- --report $R/milan-v3.report.bin $M3 --measurement abcd

# --- certificate table: hostile copies --------------------------------------
python3 - "$R/genoa-tsm.certtable.bin" "$T" <<'PY'
import sys, struct
src, t = sys.argv[1], sys.argv[2]
b = bytearray(open(src, "rb").read())
# entry 2 (VCEK) length past the end
x = bytearray(b); struct.pack_into("<I", x, 2*24+20, len(b)); open(t+"/ct_bounds.bin","wb").write(x)
# no terminator: truncate right after the entries
open(t+"/ct_noend.bin","wb").write(bytes(b[:3*24+10]))
# offset into the entry array
x = bytearray(b); struct.pack_into("<I", x, 0*24+16, 8); open(t+"/ct_overlap.bin","wb").write(x)
PY
run "cert table with an out-of-bounds length exits 2" 2 -- --report $R/genoa-tsm.report.bin --cert-table "$T/ct_bounds.bin"
run "cert table without a terminator exits 2" 2 -- --report $R/genoa-tsm.report.bin --cert-table "$T/ct_noend.bin"
run "cert table with data overlapping its entries exits 2" 2 -- --report $R/genoa-tsm.report.bin --cert-table "$T/ct_overlap.bin"
run "genoa-tsm report with the milan-v3 VCEK fails signature" 1 signature=fail -- \
	--report $R/genoa-tsm.report.bin --cert-table $R/genoa-tsm.certtable.bin --vcek $R/milan-v3.vcek.der

# --- a self-made chain admitted with --trust-ark (as csvsm's simulated PSP) --
# One RSA-4096 key serves the test ARK and ASK (keygen is slow); the VCEK is
# P-384 with AMD's SPL/hwID/productName extensions; the report is v3 Milan
# with REPORT_DATA = SHA-512(nonce || manifest), signed with openssl.
S=$T/sim; mkdir -p "$S"
DN="/OU=Engineering/C=US/L=Santa Clara/ST=CA/O=Advanced Micro Devices/CN"
CHIP=$(python3 -c 'print(bytes(range(64)).hex())')
HWID=$(python3 -c 'print(":".join("%02x" % i for i in range(64)))')
{
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:4096 -out "$S/ca.key" &&
openssl req -x509 -new -key "$S/ca.key" -out "$S/ark.pem" -days 365 -subj "$DN=ARK-Milan" -sha384 \
	-sigopt rsa_padding_mode:pss -sigopt rsa_pss_saltlen:48 -sigopt rsa_mgf1_md:sha384 \
	-addext "basicConstraints=critical,CA:true" -addext "keyUsage=critical,keyCertSign,cRLSign" &&
openssl req -new -key "$S/ca.key" -out "$S/ask.csr" -subj "$DN=SEV-Milan" &&
printf 'basicConstraints=critical,CA:true,pathlen:0\nkeyUsage=critical,keyCertSign\n' >"$S/ask.ext" &&
openssl x509 -req -in "$S/ask.csr" -CA "$S/ark.pem" -CAkey "$S/ca.key" -set_serial 2 -days 365 \
	-sha384 -sigopt rsa_padding_mode:pss -sigopt rsa_pss_saltlen:48 -sigopt rsa_mgf1_md:sha384 \
	-extfile "$S/ask.ext" -out "$S/ask.pem" &&
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-384 -out "$S/vcek.key" &&
openssl req -new -key "$S/vcek.key" -out "$S/vcek.csr" -subj "$DN=SEV-VCEK" &&
cat >"$S/vcek.ext" <<EXT &&
1.3.6.1.4.1.3704.1.1 = DER:02:01:01
1.3.6.1.4.1.3704.1.2 = DER:16:08:4d:69:6c:61:6e:2d:42:30
1.3.6.1.4.1.3704.1.3.1 = DER:02:01:04
1.3.6.1.4.1.3704.1.3.2 = DER:02:01:00
1.3.6.1.4.1.3704.1.3.3 = DER:02:01:18
1.3.6.1.4.1.3704.1.3.8 = DER:02:02:00:db
1.3.6.1.4.1.3704.1.4 = DER:$HWID
EXT
openssl x509 -req -in "$S/vcek.csr" -CA "$S/ask.pem" -CAkey "$S/ca.key" -set_serial 3 -days 365 \
	-sha384 -sigopt rsa_padding_mode:pss -sigopt rsa_pss_saltlen:48 -sigopt rsa_mgf1_md:sha384 \
	-extfile "$S/vcek.ext" -out "$S/vcek.pem"
} >"$S/log" 2>&1 || { nok "test chain generation failed"; sed 's/^/# /' "$S/log" | tail -20; }
printf 'csvsm services manifest (test)' >"$S/manifest.bin"
# A 64-byte nonce: the only size the SVSM attestation calls take (issue 34 item 4).
NONCE=$(printf '00112233445566778899aabbccddeeff%.0s' 1 2 3 4)
python3 - "$S" "$NONCE" "$CHIP" <<'PY'
import sys, struct, hashlib
s, nonce, chip = sys.argv[1], bytes.fromhex(sys.argv[2]), bytes.fromhex(sys.argv[3])
r = bytearray(0x4A0)
struct.pack_into("<IIQ", r, 0, 3, 0, 0x30000)
struct.pack_into("<II", r, 0x30, 0, 1)
tcb = bytes([4, 0, 0, 0, 0, 0, 24, 219])
r[0x38:0x40] = tcb; r[0x180:0x188] = tcb; r[0x1E0:0x1E8] = tcb; r[0x1F0:0x1F8] = tcb
r[0x50:0x90] = hashlib.sha512(nonce + open(s + "/manifest.bin", "rb").read()).digest()
r[0x90:0xC0] = bytes([0x5A]) * 48
r[0x188:0x18B] = bytes([0x19, 0x01, 0x01])
r[0x1A0:0x1E0] = chip
open(s + "/unsigned.bin", "wb").write(r)
PY
# sign_report UNSIGNED OUT [POLICY]: UNSIGNED with POLICY (offset 0x008) if
# given, signed over 0x000-0x29F by the test VCEK (R, S little-endian).
sign_report() {
	python3 - "$1" "$S/tosign.bin" "$S/patched.bin" "${3:-}" <<'PY'
import sys, struct
r = bytearray(open(sys.argv[1], "rb").read())
if sys.argv[4]: struct.pack_into("<Q", r, 0x008, int(sys.argv[4], 0))
open(sys.argv[2], "wb").write(r[:0x2A0]); open(sys.argv[3], "wb").write(r)
PY
	openssl dgst -sha384 -sign "$S/vcek.key" -out "$S/sig.der" "$S/tosign.bin"
	python3 - "$S/patched.bin" "$S/sig.der" "$2" <<'PY'
import sys
r = bytearray(open(sys.argv[1], "rb").read()); d = open(sys.argv[2], "rb").read()
def rd(d, i):                       # one DER INTEGER at i (short lengths only)
    assert d[i] == 2; l = d[i + 1]; return int.from_bytes(d[i + 2:i + 2 + l], "big"), i + 2 + l
assert d[0] == 0x30
i = 2 if d[1] < 0x80 else 3
R, i = rd(d, i); S_, i = rd(d, i)
r[0x2A0:0x2A0 + 72] = R.to_bytes(72, "little"); r[0x2E8:0x2E8 + 72] = S_.to_bytes(72, "little")
open(sys.argv[3], "wb").write(r)
PY
}
sign_report "$S/unsigned.bin" "$S/report.bin"
SIM="--report $S/report.bin --vcek $S/vcek.pem --ask $S/ask.pem"
run "test chain verifies with --trust-ark (nonce+manifest binding)" 0 parse=pass signature=pass chain=pass \
	tcb=pass chip_id=pass report_data=pass -- $SIM --trust-ark "$S/ark.pem" --nonce $NONCE --manifest "$S/manifest.bin"
run "test chain: the same root as --ark without --trust-ark fails chain (not pinned)" 1 chain=fail signature=pass -- \
	$SIM --ark "$S/ark.pem"
run "test chain: wrong nonce fails report_data" 1 report_data=fail -- \
	$SIM --trust-ark "$S/ark.pem" --nonce ${NONCE%??}00 --manifest "$S/manifest.bin"
run "test chain: the nonce with a 0x prefix verifies" 0 report_data=pass -- \
	$SIM --trust-ark "$S/ark.pem" --nonce 0x$NONCE --manifest "$S/manifest.bin"
# --nonce takes exactly 64 bytes (SVSM_ATTEST_SERVICES/SINGLE_SERVICE take no
# other size): anything else is a usage error (exit 2) that says so, not a
# report_data failure (it used to hash any length).
for nl in 16 63 65 0; do
	nh=$(printf '%*s' $((2 * nl)) '' | tr ' ' 'a')
	"$V" $SIM --trust-ark "$S/ark.pem" --nonce "$nh" --manifest "$S/manifest.bin" >"$T/out" 2>"$T/err"; rc=$?
	if [ $rc = 2 ] && grep -q -- "--nonce: need exactly 64 bytes (128 hex digits).*got $((2 * nl)) hex digits" "$T/err"; then
		ok "--nonce of $nl bytes exits 2 and says 64 bytes are needed"
	else nok "--nonce of $nl bytes (exit $rc, want 2 and the 64-byte message)"; sed 's/^/# /' "$T/err" | head -3; fi
done
printf 'tampered manifest' >"$S/manifest2.bin"
run "test chain: other manifest fails report_data" 1 report_data=fail -- \
	$SIM --trust-ark "$S/ark.pem" --nonce $NONCE --manifest "$S/manifest2.bin"

# --- each input file read once (issue 34 item 4) ---------------------------
# Manifests A and B: SVSM services manifests (attest/manifest.c layout: table
# GUID, size, count, 24-byte entries) whose vTPM entry is an RSA-2048 EK
# TPMT_PUBLIC (template L-1), with different moduli. The report binds A:
# REPORT_DATA = SHA-512(nonce || A), VMPL 0, MEASUREMENT 5a..5a.
python3 - "$S" "$NONCE" <<'PY'
import sys, struct, hashlib
s, nonce = sys.argv[1], bytes.fromhex(sys.argv[2])
def guid(t):  # EFI byte order
    h = bytes.fromhex(t.replace("-", ""))
    return h[3::-1] + h[5:3:-1] + h[7:5:-1] + h[8:]
def ek(fill):
    n = bytes([0x80 | fill]) + bytes([fill]) * 254 + bytes([fill | 1])
    return (struct.pack(">HHI", 0x0001, 0x000B, 0x000300B2) + struct.pack(">H", 32) + bytes(32) +
            struct.pack(">HHHHHI", 0x0006, 128, 0x0043, 0x0010, 2048, 0) + struct.pack(">H", 256) + n)
for name, fill in (("a", 0x11), ("b", 0x77)):
    e = ek(fill)
    m = guid("63849ebb-3d92-4670-a1ff-58f9c94b87bb") + struct.pack("<II", 24 + 24 + len(e), 1)
    m += guid("c476f1eb-0123-45a5-9641-b4e7dde5bfe3") + struct.pack("<II", 48, len(e)) + e
    open(s + "/mek-" + name + ".bin", "wb").write(m)
    open(s + "/ek-" + name + ".bin", "wb").write(e)
r = bytearray(open(s + "/unsigned.bin", "rb").read())
r[0x50:0x90] = hashlib.sha512(nonce + open(s + "/mek-a.bin", "rb").read()).digest()
open(s + "/unsigned-mek.bin", "wb").write(r)
PY
sign_report "$S/unsigned-mek.bin" "$S/report-mek.bin"
MEK="--report $S/report-mek.bin --vcek $S/vcek.pem --ask $S/ask.pem --trust-ark $S/ark.pem --nonce $NONCE \
	--measurement $(printf '5a%.0s' $(seq 48)) --vmpl 0"
run "manifest A: report_data and manifest.ek pass, the EK written is A's" 0 report_data=pass manifest.ek=pass -- \
	$MEK --manifest "$S/mek-a.bin" --manifest-ek "$T/ek.out"
if cmp -s "$T/ek.out" "$S/ek-a.bin"; then ok "--manifest-ek wrote manifest A's EK"; else nok "--manifest-ek did not write A's EK"; fi
run "manifest B (not the bound one) fails report_data and writes no EK" 1 report_data=fail -- \
	$MEK --manifest "$S/mek-b.bin" --manifest-ek "$T/ek.out"
[ ! -e "$T/ek.out" ] && ok "no EK file after a failed run" || nok "an EK file is left after a failed run"
# From a pipe: a second read of the manifest found it empty (manifest.ek failed).
"$V" --json $MEK --manifest <(cat "$S/mek-a.bin") --manifest-ek "$T/ek.out" >"$T/out.json" 2>"$T/err"; rc=$?
if [ $rc = 0 ] && cmp -s "$T/ek.out" "$S/ek-a.bin"; then ok "--manifest from a pipe: read once, verified, A's EK written"
else nok "--manifest from a pipe (exit $rc)"; sed 's/^/# /' "$T/err" "$T/out.json" | grep -i 'manifest\|error' | head -5; fi
# The swap: a FIFO that gives A to the first reader and B to a later one. Read
# twice, REPORT_DATA was checked against A and the EK taken from B, and B's EK
# (one the report never bound) came out as verified. The writer serves B only
# to a reader that opens after the first one closed (an O_NONBLOCK open for
# writing fails with ENXIO while no reader has the FIFO open), for 20 s at
# most, and is stopped as soon as csvsm-verify returns.
mkfifo "$T/mek.fifo"
python3 - "$T/mek.fifo" "$S/mek-a.bin" "$S/mek-b.bin" >"$T/served" 2>&1 <<'PY' &
import errno, os, sys, time
fifo, a, b = sys.argv[1:4]
with open(fifo, "wb") as f:
    f.write(open(a, "rb").read())
print("served A", flush=True)
end, gone = time.time() + 20, False
while time.time() < end:
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as e:
        if e.errno != errno.ENXIO: raise
        gone = True  # the first reader has closed it
        time.sleep(0.0005); continue
    if not gone:  # still the first reader
        os.close(fd); time.sleep(0.0005); continue
    os.set_blocking(fd, True); os.write(fd, open(b, "rb").read()); os.close(fd)
    print("served B", flush=True); break
PY
wpid=$!
timeout 10 "$V" --json $MEK --manifest "$T/mek.fifo" --manifest-ek "$T/ek.out" >"$T/out.json" 2>"$T/err"; rc=$?
kill $wpid 2>/dev/null; wait $wpid 2>/dev/null
# ("served A" may not be printed yet when the writer is stopped: A's EK is the proof.)
if [ $rc = 0 ] && ! grep -q "served B" "$T/served" && cmp -s "$T/ek.out" "$S/ek-a.bin"; then
	ok "manifest swapped after the first read (FIFO: A, then B): read once, A's EK written, B never read"
else
	nok "manifest swap (exit $rc; $(tr '\n' ' ' <"$T/served"); EK written: $(cmp -s "$T/ek.out" "$S/ek-b.bin" && echo "B's, which the report never bound" || echo "not B's"))"
fi
rm -f "$T/mek.fifo" "$T/ek.out"
# A file named twice (--ark and --trust-ark) is read once: a FIFO serves it once.
mkfifo "$T/ark.fifo"
python3 -c 'import sys; open(sys.argv[1], "wb").write(open(sys.argv[2], "rb").read())' "$T/ark.fifo" "$S/ark.pem" &
wpid=$!
timeout 10 "$V" --json $SIM --ark "$T/ark.fifo" --trust-ark "$T/ark.fifo" --nonce $NONCE --manifest "$S/manifest.bin" \
	>"$T/out.json" 2>"$T/err"; rc=$?
kill $wpid 2>/dev/null; wait $wpid 2>/dev/null
if [ $rc = 0 ]; then ok "--ark and --trust-ark naming one FIFO: read once, verified"
else nok "--ark and --trust-ark naming one FIFO (exit $rc: 124 is a second read waiting for a writer)"; fi
rm -f "$T/ark.fifo"

run "test chain: AMD VCEK under the test ASK fails chain" 1 chain=fail -- \
	--report $S/report.bin --vcek $R/milan-v3.vcek.der --ask $S/ask.pem --trust-ark "$S/ark.pem"
run "test chain: test VCEK under AMD's Milan chain fails chain" 1 chain=fail signature=pass -- \
	--report $S/report.bin --vcek $S/vcek.pem --roots $K

# --- guest policy: test-chain reports re-signed with other POLICY values ----
# GUEST_POLICY (AMD SEV-SNP ABI 56860; interfaces §7): 16 SMT, 17 reserved
# (must be 1), 18 MIGRATE_MA, 19 DEBUG, 20..25 SINGLE_SOCKET, CXL_ALLOW,
# MEM_AES_256_XTS, RAPL_DIS, CIPHERTEXT_HIDING, PAGE_SWAP_DISABLE, 63:26 MBZ.
# Each report is correctly signed, so only the named policy check refuses it.
PT="--vcek $S/vcek.pem --ask $S/ask.pem --trust-ark $S/ark.pem --nonce $NONCE --manifest $S/manifest.bin"
sign_report "$S/unsigned.bin" "$S/p-ma.bin" 0x70000
run "policy MIGRATE_MA (0x70000) fails policy.migrate_ma by default" 1 parse=pass signature=pass chain=pass \
	policy.migrate_ma=fail policy.debug=pass policy.reserved=pass policy.mbz=pass -- --report "$S/p-ma.bin" $PT
run "policy MIGRATE_MA passes with --allow-migrate-ma" 0 policy.migrate_ma=pass -- \
	--report "$S/p-ma.bin" $PT --allow-migrate-ma
run "--allow-debug does not admit MIGRATE_MA" 1 policy.migrate_ma=fail -- --report "$S/p-ma.bin" $PT --allow-debug
out=$("$V" --report "$S/p-ma.bin" $PT 2>&1); rc=$?
if [ $rc = 1 ] && grep -q '^  \[FAIL\] policy.migrate_ma ' <<<"$out" && grep -q '^NOT VERIFIED$' <<<"$out" &&
	grep -q 'policy 0x70000 (SMT MIGRATE_MA ' <<<"$out"; then
	ok "human summary names [FAIL] policy.migrate_ma and the MIGRATE_MA flag"
else nok "human summary for MIGRATE_MA (rc=$rc)"; sed 's/^/# /' <<<"$out"; fi
sign_report "$S/unsigned.bin" "$S/p-dbg.bin" 0xb0000
run "policy DEBUG (0xb0000) fails policy.debug by default" 1 signature=pass chain=pass policy.debug=fail \
	policy.migrate_ma=pass -- --report "$S/p-dbg.bin" $PT
run "policy DEBUG passes with --allow-debug" 0 policy.debug=pass -- --report "$S/p-dbg.bin" $PT --allow-debug
run "--allow-migrate-ma does not admit DEBUG" 1 policy.debug=fail -- --report "$S/p-dbg.bin" $PT --allow-migrate-ma
sign_report "$S/unsigned.bin" "$S/p-both.bin" 0xf0000
run "policy DEBUG|MIGRATE_MA needs both --allow options" 1 policy.debug=pass policy.migrate_ma=fail -- \
	--report "$S/p-both.bin" $PT --allow-debug
run "policy DEBUG|MIGRATE_MA passes with --allow-debug --allow-migrate-ma" 0 policy.debug=pass \
	policy.migrate_ma=pass -- --report "$S/p-both.bin" $PT --allow-debug --allow-migrate-ma
sign_report "$S/unsigned.bin" "$S/p-r17.bin" 0x10000
run "policy bit 17 clear (0x10000) fails policy.reserved and parse" 1 signature=pass policy.reserved=fail \
	parse=fail policy.mbz=pass -- --report "$S/p-r17.bin" $PT
for bit in 26 31 32 63; do
	pol=$(printf '0x%x' $(( (1 << bit) | 0x30000 )))
	sign_report "$S/unsigned.bin" "$S/p-b$bit.bin" $pol
	run "policy bit $bit ($pol, unknown) fails policy.mbz and parse" 1 signature=pass policy.mbz=fail \
		parse=fail policy.reserved=pass -- --report "$S/p-b$bit.bin" $PT --allow-debug --allow-migrate-ma
done
sign_report "$S/unsigned.bin" "$S/p-known.bin" 0x3f30000
run "policy with every other known bit (0x3f30000: SMT, 20..25) verifies" 0 parse=pass signature=pass \
	policy.migrate_ma=pass policy.debug=pass policy.reserved=pass policy.mbz=pass -- --report "$S/p-known.bin" $PT

# --- TPM quote check against tpm2_quote output from swtpm --------------------
qtests() {
	local Q=$T/quote PORT SPID rc
	mkdir -p "$Q/state"
	PORT=$(python3 -c 'import socket,random
for _ in range(50):
    p=random.randint(20000,60000)
    try:
        a=socket.socket(); a.bind(("127.0.0.1",p)); b=socket.socket(); b.bind(("127.0.0.1",p+1)); a.close(); b.close(); print(p); break
    except OSError: pass')
	swtpm socket --tpmstate dir="$Q/state" --tpm2 --server type=tcp,port=$PORT \
		--ctrl type=tcp,port=$((PORT + 1)) --flags not-need-init,startup-clear >"$Q/swtpm.log" 2>&1 &
	SPID=$!
	export TPM2TOOLS_TCTI=swtpm:port=$PORT
	for _ in 1 2 3 4 5 6 7 8 9 10; do tpm2_getrandom 4 >/dev/null 2>&1 && break; sleep 0.3; done
	{
	tpm2_createek -c "$Q/ek.ctx" -G rsa -u "$Q/ek.pub" && tpm2_flushcontext -t &&
	tpm2_createak -C "$Q/ek.ctx" -c "$Q/ak.ctx" -G ecc -g sha256 -s ecdsa -u "$Q/ak.pem" -f pem -n "$Q/ak.name" &&
	tpm2_flushcontext -t && tpm2_flushcontext -s &&
	tpm2_createak -C "$Q/ek.ctx" -c "$Q/akr.ctx" -G rsa -g sha256 -s rsassa -u "$Q/akr.pem" -f pem -n "$Q/akr.name" &&
	tpm2_flushcontext -t && tpm2_flushcontext -s &&
	tpm2_pcrextend 0:sha256=$(printf '%064x' 1) &&
	tpm2_quote -c "$Q/ak.ctx" -l sha256:0,1,2,7 -q 0011223344 -m "$Q/e.msg" -s "$Q/e.sig" -o "$Q/e.pcrs" -g sha256 &&
	tpm2_flushcontext -t &&
	tpm2_quote -c "$Q/akr.ctx" -l sha1:0,1,2,3+sha256:0,1,2,3,4,5,6,7,8,9,10,16 -q abcd -m "$Q/r.msg" \
		-s "$Q/r.sig" -o "$Q/r.pcrs" -g sha256 &&
	tpm2_checkquote -u "$Q/ak.pem" -m "$Q/e.msg" -s "$Q/e.sig" -f "$Q/e.pcrs" -g sha256 -q 0011223344 &&
	tpm2_checkquote -u "$Q/akr.pem" -m "$Q/r.msg" -s "$Q/r.sig" -f "$Q/r.pcrs" -g sha256 -q abcd
	} >"$Q/log" 2>&1; rc=$?
	kill "$SPID" 2>/dev/null; wait "$SPID" 2>/dev/null
	if [ $rc != 0 ]; then nok "quote: generating quotes with swtpm + tpm2_quote"; tail -5 "$Q/log" | sed 's/^/# /'; return; fi
	local B="--report $R/milan-v3.report.bin $M3"
	local E="--quote-msg $Q/e.msg --quote-sig $Q/e.sig --ak $Q/ak.pem"
	run "quote: ECDSA P-256 quote verifies (tpm2_checkquote agrees)" 0 quote=pass -- \
		$B $E --quote-pcrs "$Q/e.pcrs" --quote-nonce 0011223344
	run "quote: RSASSA quote over sha1+sha256 banks, 16 PCRs, verifies" 0 quote=pass -- \
		$B --quote-msg "$Q/r.msg" --quote-sig "$Q/r.sig" --ak "$Q/akr.pem" --quote-pcrs "$Q/r.pcrs" --quote-nonce abcd
	run "quote: wrong nonce fails quote" 1 quote=fail -- $B $E --quote-pcrs "$Q/e.pcrs" --quote-nonce 0011223345
	run "quote: wrong AK fails quote" 1 quote=fail -- \
		$B --quote-msg "$Q/e.msg" --quote-sig "$Q/e.sig" --ak "$Q/akr.pem" --quote-pcrs "$Q/e.pcrs" --quote-nonce 0011223344
	python3 - "$Q" <<'PY'
import sys
q = sys.argv[1]
p = bytearray(open(q + "/e.pcrs", "rb").read()); p[142] ^= 1; open(q + "/bad.pcrs", "wb").write(p)
m = bytearray(open(q + "/e.msg", "rb").read()); m[-1] ^= 1; open(q + "/bad.msg", "wb").write(m)
open(q + "/short.msg", "wb").write(m[:20])
PY
	run "quote: a changed PCR value fails quote (pcrDigest)" 1 quote=fail -- \
		$B $E --quote-pcrs "$Q/bad.pcrs" --quote-nonce 0011223344
	run "quote: another quote's PCR selection fails quote" 1 quote=fail -- \
		$B $E --quote-pcrs "$Q/r.pcrs" --quote-nonce 0011223344
	run "quote: a changed message fails quote (signature)" 1 quote=fail -- \
		$B --quote-msg "$Q/bad.msg" --quote-sig "$Q/e.sig" --ak "$Q/ak.pem" --quote-pcrs "$Q/e.pcrs" --quote-nonce 0011223344
	run "quote: a truncated message fails quote" 1 quote=fail -- \
		$B --quote-msg "$Q/short.msg" --quote-sig "$Q/e.sig" --ak "$Q/ak.pem" --quote-pcrs "$Q/e.pcrs" --quote-nonce 0011223344
	run "quote: incomplete quote options exit 2" 2 -- $B $E --quote-nonce 0011223344
}
if command -v swtpm >/dev/null && command -v tpm2_quote >/dev/null && command -v tpm2_checkquote >/dev/null; then
	qtests
else
	echo "# SKIP quote tests: swtpm or tpm2-tools not installed"
fi

# --- human output and exit codes without --json -----------------------------
# Without --measurement and --report-data only signature, chain and policy
# are checked: exit 0, and the summary and the JSON say so.
out=$("$V" --report $R/milan-v2.report.bin --vcek $R/milan-v2.vcek.der --roots $K); rc=$?
if [ $rc = 0 ] && grep -qx 'VERIFIED (signature and chain only: no --measurement, no --report-data given)' <<<"$out" &&
	grep -q '\[PASS\] signature' <<<"$out"; then
	ok "human summary without --measurement/--report-data says 'VERIFIED (signature and chain only: ...)'"
else nok "human summary, signature and chain only (rc=$rc)"; sed 's/^/# /' <<<"$out"; fi
out=$("$V" --report $R/milan-v3.report.bin $M3 --measurement $MEAS --report-data $RDATA); rc=$?
if [ $rc = 0 ] && grep -qx 'VERIFIED' <<<"$out"; then
	ok "human summary with --measurement and --report-data says plain VERIFIED"
else nok "human summary, full (rc=$rc)"; sed 's/^/# /' <<<"$out"; fi
out=$("$V" --report $R/milan-v3.report.bin $M3 --measurement $MEAS); rc=$?
if [ $rc = 0 ] && grep -qx 'VERIFIED (REPORT_DATA not checked: no --report-data or --nonce/--manifest given)' <<<"$out"; then
	ok "human summary with --measurement only says REPORT_DATA was not checked"
else nok "human summary, measurement only (rc=$rc)"; sed 's/^/# /' <<<"$out"; fi
out=$("$V" --report $S/report.bin --vcek $S/vcek.pem --ask $S/ask.pem --trust-ark $S/ark.pem \
	--nonce $NONCE --manifest $S/manifest.bin); rc=$?
if [ $rc = 0 ] && grep -qx 'VERIFIED (MEASUREMENT not checked: no --measurement given)' <<<"$out"; then
	ok "human summary with --nonce/--manifest only says MEASUREMENT was not checked"
else nok "human summary, report data only (rc=$rc)"; sed 's/^/# /' <<<"$out"; fi
jscope() { # jscope DESC SIG_ONLY MEAS_CHECKED RDATA_CHECKED ARGS...: verified and the JSON scope fields
	local desc=$1 a=$2 b=$3 c=$4; shift 4
	"$V" --json "$@" >"$T/scope.json" 2>/dev/null
	local got want
	got=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
print(*(str(d[k]).lower() for k in ("verified","signature_and_chain_only","measurement_checked","report_data_checked")), "note" in d)' "$T/scope.json" 2>&1)
	want="true $a $b $c $([ "$b$c" = truetrue ] && echo False || echo True)"
	if [ "$got" = "$want" ]; then ok "$desc"; else nok "$desc (got '$got', want '$want')"; fi
}
jscope "JSON without --measurement/--report-data: signature_and_chain_only true, a note" true false false \
	--report $R/milan-v3.report.bin $M3
jscope "JSON with --measurement and --report-data: signature_and_chain_only false, no note" false true true \
	--report $R/milan-v3.report.bin $M3 --measurement $MEAS --report-data $RDATA
jscope "JSON with --measurement only: measurement_checked, not report_data_checked" false true false \
	--report $R/milan-v3.report.bin $M3 --measurement $MEAS
"$V" --report $R/milan-v3.report.bin $M3 --repeat 5 >/dev/null 2>"$T/rep"; rc=$?
if [ $rc = 0 ] && grep -q 'reports/s' "$T/rep"; then ok "--repeat runs and reports a rate"; else nok "--repeat (rc=$rc)"; fi

echo "1..$n"
[ "$failed" -eq 0 ]
