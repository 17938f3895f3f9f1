#!/usr/bin/env bash
# The probe and end-to-end attestation in the SNP machine (docs/attestation.md
# "End-to-end test", docs/snp-machine.md): csvsm's image build/csvsm.igvm on
# the machine's SEV-SNP, PSP and KVM models, the PSP model with the test
# chain's keys (build/test-chain/psp-keys.bin); trixie's OVMF runs the probe
# at VMPL2 as an SNP guest. The probe runs its suite (0 failed), calls
# SVSM_ATTEST_SERVICES with a fresh RDRAND nonce, checks the answer itself
# and prints the evidence (nonce, report, services manifest, certificate
# table) as `# evidence NAME OFFSET HEX` lines. This script rebuilds the
# files from the console log and verifies them on the host with
# build/csvsm-verify against the test chain's ARK and the measurement from
# `csvsm-measure --igvm`, which must also be the machine's own launch
# measurement and the report's MEASUREMENT; then checks that tampered
# evidence is refused. Builds nothing: `make` first.
set -u
cd "$(dirname "$0")/../.."
. tests/qemu/lib.sh
CHAIN=${CHAIN:-build/test-chain}
VERIFY=${VERIFY:-build/csvsm-verify}
MEASURE=${MEASURE:-build/csvsm-measure}
PROBE=${PROBE:-build/probe.efi}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ ! -f "$CHAIN/psp-keys.bin" ]; then
	echo "ok 1 # SKIP no $CHAIN/psp-keys.bin (make build/test-chain/psp-keys.bin)"
	exit 0
fi
for f in "$SNPM_ELF" "$CSVSM_IGVM" "$PROBE" "$VERIFY" "$MEASURE" "$CHAIN/ark.pem" "$CHAIN/vcek.der"; do
	if [ ! -f "$f" ]; then echo "not ok 1 - $f exists (build it with make)"; exit 1; fi
done
if ! command -v python3 >/dev/null; then echo "ok 1 # SKIP no python3"; exit 0; fi
QEMU_TIMEOUT=${QEMU_TIMEOUT_ATTEST:-300}

# The relying party (docs/kbs.md "In the SNP machine"): csvsm-kbs on
# loopback with a policy for this launch (csvsm-measure --igvm) hands out
# the challenge before the machine starts; the client keeps the session and
# the TEE key, and the 64 bytes the runtime data hashes to reach the probe
# as csvsm.nonce= on its command line, so the SVSM evidence the probe
# prints answers csvsm-kbs's nonce and binds the client's key.
KBS=build/csvsm-kbs KBSC=build/csvsm-kbs-client KPID=
trap '[ -n "$KPID" ] && kill "$KPID" 2>/dev/null; wait "$KPID" 2>/dev/null; rm -rf "$tmp"' EXIT
kbs_meas=$("$MEASURE" --igvm "$CSVSM_IGVM")
mkdir -p "$tmp/kbs"
printf '{"version": 1, "snp": {"policy": "0x30000", "vmpl": 0, "measurement": "%s"}, "svsm": {}}\n' \
	"$kbs_meas" >"$tmp/kbs/policy.json"
printf 'probe-secret' >"$tmp/kbs/secret"
kbs_nonce=
if [ -x "$KBS" ] && [ -x "$KBSC" ] &&
	"$KBS" put-secret --db "sqlite:$tmp/kbs/r.db" default/probe/secret --rule affirming --file "$tmp/kbs/secret" >/dev/null; then
	"$KBS" serve --policy "$tmp/kbs/policy.json" --db "sqlite:$tmp/kbs/r.db" --listen 127.0.0.1:0 \
		--insecure-http --trust-ark "$CHAIN/ark.pem" --port-file "$tmp/kbs/port" --nonce-ttl 900 \
		--max-seconds 900 2>"$tmp/kbs/log" &
	KPID=$!
	for _ in $(seq 1 100); do [ -s "$tmp/kbs/port" ] && break; sleep 0.05; done
	mkdir -p "$tmp/kbs/state"
	"$KBSC" rcar --port "$(cat "$tmp/kbs/port" 2>/dev/null || echo 0)" --chain "$CHAIN" \
		--auth-only "$tmp/kbs/state" >"$tmp/kbs/auth.out" 2>&1 &&
		kbs_nonce=$(cat "$tmp/kbs/state/nonce64.hex")
fi
tap_check "csvsm-kbs on loopback handed out a challenge; the client's runtime data hashes to the probe's nonce (${kbs_nonce:0:16}...)" \
	test ${#kbs_nonce} -eq 128

# snpm_args (lib.sh) gives the machine $PSP_KEYS for its PSP model.
PSP_KEYS=$CHAIN/psp-keys.bin
# shellcheck disable=SC2046
snpm_qemu "$tmp/p.log" 2G 2 $(snpm_guest_args probe 2G 2 "$PROBE") \
	${kbs_nonce:+-fw_cfg name=opt/csvsm/linux/cmdline,string=csvsm.nonce=$kbs_nonce}
log=$tmp/p.log
summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n1)
# The probe's attestation lines and failures, as comments.
sed -n '/^# --- attestation protocol/,/^# --- isolation/p' "$log" | grep -v '^# evidence ' | sed 's/^/# probe: /'
grep '^not ok ' "$log" | sed 's/^/# probe FAILED: /'
tap_check "probe ran to the end: $summary" test -n "$summary"
tap_check "probe reports 0 failed" grep -qE '^[0-9]+ passed, 0 failed' "$log"
tap_check "csvsm ended with success status (QEMU exit $QEMU_RC)" test "$QEMU_RC" -eq 1
# Absence counts only once the run is shown to have reached its end: the
# probe's summary, then the machine's last line.
if [ -n "$summary" ] && [ "$(tail -n1 "$log")" = "snpm: end: success" ] && ! grep -q 'FAULT\|PANIC' "$log"; then
	tap_ok "no csvsm fault or panic (the run reached its end: the probe's summary, then 'snpm: end: success')"
else
	tap_fail "no csvsm fault or panic (summary: ${summary:-none}; last line: '$(tail -n1 "$log" | cut -c1-60)'; FAULT/PANIC lines: $(grep -c 'FAULT\|PANIC' "$log"))"
fi
[ "$QEMU_RC" -eq 1 ] || tail -n 40 "$log" | sed 's/^/# /'
tap_check "the run had the machine's default backing, 4K pages as guest_memfd gives ($(grep -m1 '^snpm: rmp: ' "$log"))" \
	grep -q '^snpm: rmp: backing=4k ' "$log"
# The same probe on 2 MiB backing (a hugepage-backed host, snpm.backing=2m):
# OVMF's and the probe's own 4K page-state changes and PVALIDATEs land in 2M
# RMP entries, which the host splits (KVM's PSMASH, counted by the machine).
snpm_qemu "$tmp/b.log" 2G 2 $(snpm_guest_args probe 2G 2 "$PROBE") -append "snpm.backing=2m"
bsum=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$tmp/b.log" | tail -n1)
brmp=$(grep -m1 '^snpm: rmp: ' "$tmp/b.log")
tap_check "2M backing: the probe ran to the end with 0 failed (${bsum:-no summary}; QEMU exit $QEMU_RC)" \
	test "$QEMU_RC" -eq 1 -a "$(tail -n1 "$tmp/b.log")" = "snpm: end: success" \
	-a -n "$bsum" -a "${bsum#* passed, }" = "0 failed"
tap_check "2M backing: the machine says so, and 4K changes split 2M entries (${brmp:-no rmp line})" \
	test "$(field backing "$brmp")" = 2m -a "$(( $(field psmash_sizem "$brmp" | grep -x '[0-9]*' || echo 0) + $(field psmash_update "$brmp" | grep -x '[0-9]*' || echo 0) ))" -gt 0
[ "$QEMU_RC" -eq 1 ] || tail -n 20 "$tmp/b.log" | sed 's/^/# /'
if grep -q '^ok .*QUERY_PROTOCOL(attestation' "$log" && ! grep -q 'SVSM_ATTEST.* # SKIP' "$log"; then
	tap_ok "probe ran the attestation checks (QUERY_PROTOCOL(1) = v1, nothing skipped)"
else
	tap_fail "probe ran the attestation checks (QUERY_PROTOCOL(1) = v1, nothing skipped)"
fi
{
	# What only the machine shows: csvsm ran its snp platform, accepted memory
	# with its own PVALIDATE instructions (each one the machine's RMP model
	# executed), and served trixie's OVMF and the probe as an SNP guest at VMPL2.
	grep -E '^snpm: launch:|platform +snp|accept +done|^snpm: guest powered|snp-view' "$log" | sed 's/^/# /'
	tap_check "csvsm ran its snp platform" grep -qE '\] platform +snp, ' "$log"
	acc=$(grep '^csvsm: accept:' "$log" | tail -n1)
	tap_check "csvsm pre-accepted memory with its own 2M PVALIDATEs" test "$(field pvalidate_2m "$acc")" -gt 0
	tap_check "the machine executed PVALIDATE for csvsm (emulated, RMP model)" \
		grep -qE 'emulated without #VC: pvalidate=[1-9]' "$log"
	tap_check "the probe ran as an SEV-SNP guest at VMPL2 (SEV_STATUS 0x7)" \
		grep -q '^# SEV-SNP guest: SEV_STATUS 0x7' "$log"
	tap_check "the guest's SVSM calls were VMPL switches" grep -qE '^snpm: guest powered off; [0-9]+ exits, [1-9][0-9]* VMPL switches' "$log"
}
tap_check "probe: SVSM_ATTEST_SERVICES -> SUCCESS" grep -q '^ok .*SVSM_ATTEST_SERVICES -> SUCCESS' "$log"
tap_check "probe: REPORT_DATA == SHA-512(nonce || manifest) in the guest" \
	grep -q '^ok .*REPORT_DATA == SHA-512(nonce || manifest)' "$log"
tap_check "probe: SVSM_ATTEST_SINGLE_SERVICE(vTPM) returned the vTPM service data" \
	grep -q '^ok .*SVSM_ATTEST_SINGLE_SERVICE(vTPM, version 0) -> SUCCESS' "$log"

# Evidence lines -> files; every stream must be contiguous from offset 0 and
# have the size the probe announced (`# evidence sizes ...`).
python3 - "$log" "$tmp" >"$tmp/extract.out" 2>&1 <<'EOF'
import re, sys
log, out = sys.argv[1], sys.argv[2]
streams, sizes, ok = {}, {}, True
for line in open(log, errors="replace"):
    line = line.rstrip("\n")
    m = re.match(r"^# evidence sizes report (\d+) manifest (\d+) certs (\d+)$", line)
    if m:
        sizes = {"report": int(m[1]), "manifest": int(m[2]), "certs": int(m[3]), "nonce": 64, "measurement": 48}
        continue
    m = re.match(r"^# evidence (\w+) (\d+) ([0-9a-f]+)$", line)
    if m:
        streams.setdefault(m[1], []).append((int(m[2]), bytes.fromhex(m[3])))
for name in ("nonce", "report", "manifest", "certs", "measurement"):
    data = b""
    for off, chunk in streams.get(name, []):
        if off != len(data):
            print(f"{name}: chunk at {off}, expected {len(data)}"); ok = False; break
        data += chunk
    if name not in sizes or len(data) != sizes[name]:
        print(f"{name}: {len(data)} bytes, announced {sizes.get(name)}"); ok = False
    open(f"{out}/{name}.bin", "wb").write(data)
    print(f"{name}: {len(data)} bytes")
sys.exit(0 if ok else 1)
EOF
erc=$?
sed 's/^/# evidence: /' "$tmp/extract.out"
tap_check "evidence extracted from the console: nonce 64, report 1184, manifest and certificate table complete" \
	test "$erc" -eq 0 -a -s "$tmp/report.bin" -a -s "$tmp/manifest.bin" -a -s "$tmp/certs.bin"
[ "$erc" -eq 0 ] || { echo "# no usable evidence: stopping"; exit 1; }
nonce=$(xxd -p -c 256 "$tmp/nonce.bin")
tap_check "report file is the raw 1184-byte ATTESTATION_REPORT" test "$(stat -c %s "$tmp/report.bin")" -eq 1184

# The evidence back to csvsm-kbs: the session's /attest, then the resource.
tap_check "the probe attested to csvsm-kbs's nonce (its command line's csvsm.nonce=)" \
	test -n "$kbs_nonce" -a "$nonce" = "$kbs_nonce"
"$KBSC" rcar --port "$(cat "$tmp/kbs/port" 2>/dev/null || echo 0)" --chain "$CHAIN" --resume "$tmp/kbs/state" \
	--evidence-dir "$tmp" --resource default/probe/secret >"$tmp/kbs/attest.out" 2>&1
sed 's/^/# csvsm-kbs: /' "$tmp/kbs/attest.out" | grep -v '^# csvsm-kbs: claim ' | head -n 12
tap_check "csvsm-kbs appraised the machine's SVSM evidence: affirming, the token names the client's key, the secret opened with it" \
	eval "grep -qx 'status affirming' $tmp/kbs/attest.out && grep -qx 'token-tee-pubkey is ours' $tmp/kbs/attest.out && grep -qx 'secret probe-secret' $tmp/kbs/attest.out"

# The vTPM EK in the manifest: an RSA-2048 TPMT_PUBLIC (TPM 2.0 Part 2 §12.2.4).
python3 - "$tmp/manifest.bin" >"$tmp/ek.out" 2>&1 <<'EOF'
import struct, sys
m = open(sys.argv[1], "rb").read()
hdr = bytes.fromhex("bb9e8463923d7046a1ff58f9c94b87bb")            # 63849ebb-..., mixed-endian
vtpm = bytes.fromhex("ebf176c42301a5459641b4e7dde5bfe3")           # c476f1eb-..., mixed-endian
assert m[:16] == hdr, "manifest GUID"
total, n = struct.unpack_from("<II", m, 16)
assert total == len(m), f"total {total} != {len(m)}"
ek = None
for i in range(n):
    g, off, size = m[24 + 24 * i:40 + 24 * i], *struct.unpack_from("<II", m, 40 + 24 * i)
    assert off + size <= len(m), "entry out of range"
    print(f"service {g.hex()} offset {off} size {size}")
    if g == vtpm:
        ek = m[off:off + size]
assert ek is not None, "no vTPM service"
p = 0
def u16():
    global p; v = struct.unpack_from(">H", ek, p)[0]; p += 2; return v
typ, name_alg = u16(), u16()
attrs = struct.unpack_from(">I", ek, p)[0]; p += 4
p += 2 + struct.unpack_from(">H", ek, p)[0]          # authPolicy
sym = u16()
if sym != 0x0010: u16(); u16()                          # keyBits, mode
scheme = u16()
if scheme != 0x0010: u16()                              # hashAlg
bits = u16(); exponent = struct.unpack_from(">I", ek, p)[0]; p += 4
mod_len = u16(); modulus = ek[p:p + mod_len]; p += mod_len
print(f"EK type 0x{typ:04x} nameAlg 0x{name_alg:04x} attrs 0x{attrs:08x} sym 0x{sym:04x} keyBits {bits} "
      f"exponent {exponent} modulus {mod_len} bytes, {len(ek) - p} trailing bytes")
assert typ == 0x0001 and name_alg == 0x000B, "not RSA / SHA-256"
assert bits == 2048 and mod_len >= 256 and len(modulus) == mod_len and p == len(ek), "not a complete RSA-2048 key"
EOF
ekrc=$?
sed 's/^/# manifest: /' "$tmp/ek.out"
tap_check "manifest: vTPM EK is an RSA-2048 TPMT_PUBLIC (type 0x0001, nameAlg 0x000B, 256-byte modulus)" test "$ekrc" -eq 0

# The certificate table's VCEK is the test chain's (the sim PSP signs with it).
python3 - "$tmp/certs.bin" "$CHAIN/vcek.der" <<'EOF' >"$tmp/ct.out" 2>&1
import struct, sys
t, vcek = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read()
guid = bytes.fromhex("63da758de6644564adc5f4b93be8accd")          # RFC-4122 order
for i in range(0, len(t), 24):
    g, off, ln = t[i:i + 16], *struct.unpack_from("<II", t, i + 16)
    if g == bytes(16) and off == 0 and ln == 0:
        break
    print(f"entry {g.hex()} offset {off} length {ln}")
    if g == guid:
        sys.exit(0 if t[off:off + ln] == vcek else 1)
sys.exit(1)
EOF
ctrc=$?
sed 's/^/# certs: /' "$tmp/ct.out"
tap_check "certificate table: the VCEK entry is $CHAIN/vcek.der" test "$ctrc" -eq 0

# Every measurement compared is 96 hex digits: two empty outputs are not equal ones.
is_meas() { [[ "$1" =~ ^[0-9a-f]{96}$ ]]; }
same_meas() { is_meas "$1" && [ "$1" = "$2" ]; }
{
	meas=$("$MEASURE" --igvm "$CSVSM_IGVM")
	echo "# expected measurement (csvsm-measure --igvm):       $meas"
	launch=$(sed -n 's/^snpm: launch: measurement=\([0-9a-f]*\) .*/\1/p' "$log" | head -n1)
	echo "# the machine's launch measurement (PSP model):      $launch"
	tap_check "the machine's launch measurement (96 hex digits) equals csvsm-measure --igvm" same_meas "$launch" "$meas"
	tap_check "the report's MEASUREMENT (96 hex digits) equals csvsm-measure --igvm" \
		same_meas "$(xxd -p -c 256 "$tmp/measurement.bin")" "$meas"
}
echo "# report measurement:                                $(xxd -p -c 256 "$tmp/measurement.bin")"
tap_check "csvsm-measure computed a 48-byte measurement (96 hex digits)" is_meas "$meas"

verify() { # verify OUT.json REPORT MEASUREMENT -> exit status of csvsm-verify
	"$VERIFY" --report "$2" --cert-table "$tmp/certs.bin" --trust-ark "$CHAIN/ark.pem" \
		--measurement "$3" --nonce "$nonce" --manifest "$tmp/manifest.bin" --json >"$1" 2>"$1.err"
}
# check_json FILE [name=ok|fail ...]: the JSON parses; prints each check; each
# named check is present and has the wanted outcome (ok: ok and not skipped).
check_json() {
	python3 - "$@" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
checks = {c["name"]: c for c in doc["checks"]}
for c in doc["checks"]:
    print(f"#   {c['name']:<14} {'ok' if c['ok'] else 'FAIL'}{' (skipped)' if c.get('skipped') else ''}  {c.get('detail', '')}")
bad = []
for want in sys.argv[2:]:
    name, outcome = want.split("=")
    c = checks.get(name)
    if name == "all":
        if not doc.get("verified") or not all(x["ok"] for x in doc["checks"]):
            bad.append("not every check ok / not verified")
    elif c is None:
        bad.append(f"{name} missing")
    elif outcome == "ok" and not (c["ok"] and not c.get("skipped")):
        bad.append(f"{name} not ok")
    elif outcome == "fail" and c["ok"]:
        bad.append(f"{name} passed")
if bad:
    print("# unexpected: " + ", ".join(bad))
sys.exit(1 if bad else 0)
EOF
}

verify "$tmp/v.json" "$tmp/report.bin" "$meas"
vrc=$?
sed 's/^/# csvsm-verify stderr: /' "$tmp/v.json.err"
tap_check "csvsm-verify of the evidence exits 0 (got $vrc)" test "$vrc" -eq 0
echo "# csvsm-verify --json:"
if check_json "$tmp/v.json" all=all; then tap_ok "csvsm-verify JSON parses, verified, every check ok"; else
	tap_fail "csvsm-verify JSON parses, verified, every check ok"; fi
for c in parse signature chain tcb chip_id policy.vmpl measurement report_data; do
	if check_json "$tmp/v.json" "$c=ok" >/dev/null; then tap_ok "csvsm-verify check '$c' present and ok"
	else tap_fail "csvsm-verify check '$c' present and ok"; fi
done

# Negative 1: a REPORT_DATA byte flipped -> report_data and signature fail.
cp "$tmp/report.bin" "$tmp/bad-rd.bin"
printf "\\x$(printf %02x $(( $(od -An -tu1 -j $((0x50)) -N1 "$tmp/report.bin") ^ 1 )))" |
	dd of="$tmp/bad-rd.bin" bs=1 seek=$((0x50)) conv=notrunc status=none
verify "$tmp/bad-rd.json" "$tmp/bad-rd.bin" "$meas"
rc=$?
tap_check "tampered REPORT_DATA: csvsm-verify exits 1 (got $rc)" test "$rc" -eq 1
tap_check "tampered REPORT_DATA: 'report_data' and 'signature' fail" \
	check_json "$tmp/bad-rd.json" report_data=fail signature=fail

# Negative 2: another measurement -> only 'measurement' fails.
case $meas in 0*) badmeas=1${meas#0} ;; *) badmeas=0${meas#?} ;; esac
verify "$tmp/bad-m.json" "$tmp/report.bin" "$badmeas"
rc=$?
tap_check "wrong --measurement: csvsm-verify exits 1 (got $rc)" test "$rc" -eq 1
tap_check "wrong --measurement: 'measurement' fails, 'signature' and 'report_data' still pass" \
	check_json "$tmp/bad-m.json" measurement=fail signature=ok report_data=ok

# Negative 3: another nonce -> report_data fails.
othernonce=$(head -c 64 /dev/urandom | xxd -p -c 256)
"$VERIFY" --report "$tmp/report.bin" --cert-table "$tmp/certs.bin" --trust-ark "$CHAIN/ark.pem" \
	--nonce "$othernonce" --manifest "$tmp/manifest.bin" --json >"$tmp/bad-n.json" 2>/dev/null
rc=$?
if [ "$rc" -eq 1 ] && check_json "$tmp/bad-n.json" report_data=fail >/dev/null; then
	tap_ok "another nonce: csvsm-verify exits 1 and 'report_data' fails"
else
	tap_fail "another nonce: csvsm-verify exits 1 (got $rc) and 'report_data' fails"
fi
[ "$TAP_FAILS" -eq 0 ]
