#!/usr/bin/env bash
# Reports verified per second: csvsm-verify vs the openssl CLI doing the same
# chain + signature checks, on a real SNP report from $SHARED/fixtures/snp.
#
#   csvsm-verify warm : one process, --repeat N (chain parsed once; every
#                       round decodes the report and runs every check: three
#                       RSA-4096 PSS signatures, the ECDSA P-384 signature,
#                       TCB/chip-ID extensions, policy)
#   csvsm-verify cold : one process per report (what a CLI user pays)
#   openssl CLI       : per report, `openssl verify` (ARK -> ASK -> VCEK) and
#                       `openssl dgst -sha384 -verify` over bytes 0x000-0x29F
#                       with R,S converted to a DER ECDSA signature
#                       (conversion done once, before timing)
# Usage: bench/verify_bench.sh [FIXTURE-NAME] (default milan-v3)
# Env: SHARED, N (warm rounds, default 2000), M (cold/openssl rounds, default 50)
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SHARED=${SHARED:-$ROOT/../shared}
case "$SHARED" in /*) ;; *) SHARED=$ROOT/$SHARED ;; esac
FX=$SHARED/fixtures/snp
V=${CSVSM_VERIFY:-$ROOT/build/csvsm-verify}
NAME=${1:-milan-v3}
N=${N:-2000}
M=${M:-50}

if [ ! -f "$FX/reports/$NAME.report.bin" ]; then
	echo "verify_bench: SKIP: fixture $FX/reports/$NAME.report.bin not found"; exit 0
fi
[ -x "$V" ] || { echo "verify_bench: $V not built (make build/csvsm-verify)"; exit 1; }
case $NAME in milan*) P=milan ;; genoa*|siena*) P=genoa ;; turin*) P=turin ;; *) echo "unknown product"; exit 1 ;; esac
REP=$FX/reports/$NAME.report.bin VCEK=$FX/reports/$NAME.vcek.der
ARK=$FX/roots/${P}_ark.pem ASK=$FX/roots/${P}_ask.pem
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT

now() { date +%s.%N; }
rate() { python3 -c "import sys; print('%.1f' % (float(sys.argv[1]) / (float(sys.argv[3]) - float(sys.argv[2]))))" "$@"; }

# --- csvsm-verify ------------------------------------------------------------
ARGS=(--report "$REP" --vcek "$VCEK" --ark "$ARK" --ask "$ASK")
"$V" "${ARGS[@]}" >/dev/null || { echo "verify_bench: the fixture does not verify"; exit 1; }
warm=$("$V" "${ARGS[@]}" --repeat "$N" 2>&1 >/dev/null | sed -n 's/.*, \([0-9.]*\) reports\/s/\1/p')
t0=$(now)
for ((i = 0; i < M; i++)); do "$V" "${ARGS[@]}" >/dev/null; done
t1=$(now)
cold=$(rate "$M" "$t0" "$t1")

# --- openssl CLI (same checks: chain + report signature) ---------------------
openssl x509 -inform der -in "$VCEK" -out "$T/vcek.pem"
openssl x509 -in "$T/vcek.pem" -noout -pubkey >"$T/vcek.pub"
python3 - "$REP" "$T" <<'PY'
import sys
b = open(sys.argv[1], "rb").read()
open(sys.argv[2] + "/signed.bin", "wb").write(b[:0x2A0])
def der_int(le):
    v = int.from_bytes(le, "little").to_bytes(48, "big").lstrip(b"\0") or b"\0"
    if v[0] & 0x80: v = b"\0" + v
    return b"\x02" + bytes([len(v)]) + v
body = der_int(b[0x2A0:0x2A0 + 72]) + der_int(b[0x2E8:0x2E8 + 72])
open(sys.argv[2] + "/sig.der", "wb").write(b"\x30" + bytes([len(body)]) + body)
PY
one_openssl() {
	openssl verify -CAfile "$ARK" -untrusted "$ASK" "$T/vcek.pem" >/dev/null &&
	openssl dgst -sha384 -verify "$T/vcek.pub" -signature "$T/sig.der" "$T/signed.bin" >/dev/null
}
one_openssl || { echo "verify_bench: openssl does not verify the fixture"; exit 1; }
t0=$(now)
for ((i = 0; i < M; i++)); do one_openssl; done
t1=$(now)
ossl=$(rate "$M" "$t0" "$t1")

echo "verify_bench: $NAME ($P), $(nproc) CPUs, $(openssl version | cut -d' ' -f1-2)"
printf "  %-34s %10s reports/s  (%d rounds)\n" "csvsm-verify warm (--repeat)" "$warm" "$N"
printf "  %-34s %10s reports/s  (%d processes)\n" "csvsm-verify cold (process each)" "$cold" "$M"
printf "  %-34s %10s reports/s  (%d x verify + dgst)\n" "openssl CLI (verify + dgst)" "$ossl" "$M"
python3 -c "import sys; w,c,o=map(float,sys.argv[1:]); print('  ratio warm/openssl = %.1fx, cold/openssl = %.1fx' % (w/o, c/o))" "$warm" "$cold" "$ossl"
