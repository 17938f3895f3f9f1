#!/usr/bin/env bash
# SEV-SNP reports verified per second per core, in one run, on the same real
# AMD report ($SHARED/fixtures/snp, read in place), against named baselines:
#
#   floor        `openssl speed -seconds S ecdsap384`, its verify/s: one
#                ECDSA P-384 verification, the one piece of public-key work
#                a warm verifier cannot avoid per report (OpenSSL divides by
#                its CPU user time; so do the rates below, by user + system
#                CPU time of the process, so a loaded machine does not blur
#                them: "per core")
#   libraries    build/verify-floor (bench/verify_floor.c): the same report's
#                bare ECDSA P-384 verification in a loop by Nettle (the
#                library the verifier uses), OpenSSL (EVP_PKEY_verify, one
#                context, as openssl speed) and mbedTLS (what it used before)
#   csvsm warm   csvsm-verify --repeat N: the chain verified once into the
#                warm cache (snp_chain_cache_init), then every check of every
#                report against it (snp_verify_run_cached): a service's path
#   csvsm before BEFORE=path (or BEFORE_REF=git-ref, built under build/):
#                an older csvsm-verify timed the same way
#   Go peer      go-sev-guest 0.13's verify package from Debian's packages,
#                built offline by bench/verify_go_peer.sh:
#                verify.SnpAttestation per report (chain + signature, the
#                package has no cache), and verify.SnpReportSignature with
#                the VCEK parsed once (the nearest it has to a warm cache)
#   csvsm cold   one csvsm-verify process per report (a CLI user's cost)
#   openssl CLI  per report `openssl verify -CAfile ark -untrusted ask vcek`
#                and `openssl dgst -sha384 -verify` over bytes 0x000-0x29F
#                (R,S made a DER signature once, before timing)
# Each in-process contender runs ROUNDS times, interleaved, about S seconds
# each; the median is printed with its ratio to the floor and to the Go peer.
# Then the verdicts of csvsm-verify and the Go peer on every fixture.
#
# Usage: bench/verify_bench.sh [FIXTURE] (default milan-v3)
# Env: SHARED; S (whole seconds per measurement, default 2); ROUNDS (default 3);
#      CSVSM_VERIFY, VERIFY_FLOOR (the binaries, default build/);
#      M (processes for cold and CLI, default 30); BEFORE / BEFORE_REF;
#      GO_PEER_SUITE (bookworm: Go 1.19, default; trixie: Go 1.24); NO_GO=1
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SHARED=${SHARED:-$ROOT/../shared}
case "$SHARED" in /*) ;; *) SHARED=$ROOT/$SHARED ;; esac
FX=$SHARED/fixtures/snp
V=${CSVSM_VERIFY:-$ROOT/build/csvsm-verify}
VF=${VERIFY_FLOOR:-$ROOT/build/verify-floor}
NAME=${1:-milan-v3}
S=${S:-2}
case $S in '' | *[!0-9]* | 0) echo "verify_bench: S is whole seconds (1 or more)"; exit 1 ;; esac
ROUNDS=${ROUNDS:-3}
M=${M:-30}

if [ ! -f "$FX/reports/$NAME.report.bin" ]; then
	echo "verify_bench: SKIP: fixture $FX/reports/$NAME.report.bin not found"; exit 0
fi
[ -x "$V" ] || { echo "verify_bench: $V not built (make build/csvsm-verify)"; exit 1; }
[ -x "$VF" ] || { echo "verify_bench: $VF not built (make build/verify-floor)"; exit 1; }
prod() { case $1 in milan*) echo milan ;; genoa*|siena*) echo genoa ;; turin*) echo turin ;; esac; }
P=$(prod "$NAME")
[ -n "$P" ] || { echo "verify_bench: unknown product for $NAME"; exit 1; }
REP=$FX/reports/$NAME.report.bin VCEK=$FX/reports/$NAME.vcek.der
ARK=$FX/roots/${P}_ark.pem ASK=$FX/roots/${P}_ask.pem
[ -f "$VCEK" ] || { echo "verify_bench: $NAME has no .vcek.der (pick a VCEK fixture)"; exit 1; }
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
ARGS=(--report "$REP" --vcek "$VCEK" --ark "$ARK" --ask "$ASK")
"$V" "${ARGS[@]}" >/dev/null || { echo "verify_bench: the fixture does not verify"; exit 1; }

# --- the contenders ------------------------------------------------------------
BEFORE=${BEFORE:-}
if [ -z "$BEFORE" ] && [ -n "${BEFORE_REF:-}" ]; then
	b=$ROOT/build/verify-before-$(git -C "$ROOT" rev-parse --short "$BEFORE_REF")
	if [ ! -x "$b/build/csvsm-verify" ]; then
		rm -rf "$b" && mkdir -p "$b"
		git -C "$ROOT" archive "$BEFORE_REF" | tar -x -C "$b"
		make -C "$b" -j2 build/csvsm-verify >"$b.log" 2>&1 || { echo "verify_bench: building $BEFORE_REF failed ($b.log)"; exit 1; }
	fi
	BEFORE=$b/build/csvsm-verify
fi
GO=""
GOV=""
if [ -z "${NO_GO:-}" ]; then
	if GO=$("$ROOT/bench/verify_go_peer.sh" "$ROOT/build" 2>"$T/go.err"); then
		GOV=$(cut -d' ' -f3 "$GO.goversion")
	else
		echo "verify_bench: go-sev-guest peer not built: $(tail -n1 "$T/go.err")"; GO=""
	fi
fi
GOARGS=(-report "$REP" -vcek "$VCEK" -ask "$ASK" -ark "$ARK")

# cpurun OPS CMD...: runs CMD, prints "OPS WALL CPU" (CPU: the child's user +
# system time, every thread); its stdout goes to $T/out.
cpurun() {
	python3 - "$T/out" "$@" <<'PY'
import resource, subprocess, sys, time
out, ops, cmd = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
r0 = resource.getrusage(resource.RUSAGE_CHILDREN); t0 = time.monotonic()
with open(out, "wb") as f:
    rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT).returncode
t1 = time.monotonic(); r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
print(ops, t1 - t0, cpu, rc)
PY
}
# calibrate CMD-PREFIX: rounds for about S seconds of CPU, from 50 rounds.
calib() {
	local n=50; local -a c=("$@")
	read -r _ _ cpu rc < <(cpurun $n "${c[@]/@N@/$n}")
	[ "$rc" = 0 ] || { echo 0; return; }
	python3 -c "import sys; print(max(50, int(float(sys.argv[1]) * 50 / max(float(sys.argv[2]), 1e-3))))" "$S" "$cpu"
}
declare -A RES=() NS=()
measure() { # measure KEY CMD... (with @N@ for the count)
	local key=$1; shift
	local n=${NS[$key]:-}
	if [ -z "$n" ]; then n=$(calib "$@"); NS[$key]=$n; fi
	[ "$n" != 0 ] || { RES[$key]+=" fail"; return; }
	read -r ops wall cpu rc < <(cpurun "$n" "${@/@N@/$n}")
	if [ "$rc" != 0 ]; then RES[$key]+=" fail"; return; fi
	RES[$key]+=" $(python3 -c "import sys; o,w,c=map(float,sys.argv[1:]); print('%.1f/%.1f' % (o/c, o/w))" "$ops" "$wall" "$cpu")"
}
floor() {
	local v
	v=$(openssl speed -seconds "$S" ecdsap384 2>/dev/null | awk '/nistp384/ { print $NF }' | tail -n1)
	echo "${v:-fail}"
}

for ((round = 1; round <= ROUNDS; round++)); do
	f=$(floor); if [ "$f" = fail ]; then RES[floor]+=" fail"; else RES[floor]+=" $f/-"; fi
	while read -r lib r; do
		if [ "$r" = failed ]; then RES[$lib]+=" fail"; else RES[$lib]+=" $r/-"; fi
	done < <("$VF" "$VCEK" "$REP" "$S")
	measure warm "$V" "${ARGS[@]}" --repeat @N@
	[ -z "$BEFORE" ] || measure before "$BEFORE" "${ARGS[@]}" --repeat @N@
	if [ -n "$GO" ]; then
		measure goatt "$GO" "${GOARGS[@]}" -mode attestation -n @N@
		measure gosig "$GO" "${GOARGS[@]}" -mode signature -n @N@
	fi
done

# --- once: a process per report ------------------------------------------------
procs() { # procs M CMD...: M runs of CMD in a row, rates per CPU and wall
	python3 - "$@" <<'PY'
import resource, subprocess, sys, time
m, cmd = int(sys.argv[1]), sys.argv[2:]
r0 = resource.getrusage(resource.RUSAGE_CHILDREN); t0 = time.monotonic()
for _ in range(m):
    if subprocess.run(["bash", "-c", " ".join(cmd)], stdout=subprocess.DEVNULL).returncode:
        print("fail"); sys.exit(0)
t1 = time.monotonic(); r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
print("%.1f/%.1f" % (m / cpu, m / (t1 - t0)))
PY
}
q() { printf '%q ' "$@"; }
RES[cold]=$(procs "$M" "$(q "$V" "${ARGS[@]}")")
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
CLI="$(q openssl verify -CAfile "$ARK" -untrusted "$ASK" "$T/vcek.pem") >/dev/null && $(q openssl dgst -sha384 -verify "$T/vcek.pub" -signature "$T/sig.der" "$T/signed.bin")"
RES[cli]=$(procs "$M" "$CLI")

# --- the table -----------------------------------------------------------------
echo "verify_bench: $NAME ($P), $(nproc) CPUs, $(openssl version | cut -d' ' -f1-2)${GOV:+, go-sev-guest 0.13 on $GOV (Debian ${GO_PEER_SUITE:-bookworm})}"
echo "  $ROUNDS interleaved rounds of ~${S} s each, median; reports/s per CPU-second (wall-clock rate in brackets)"
python3 - "$ROUNDS" "$M" "${RES[floor]}" "${RES[warm]}" "${RES[before]:-}" "${RES[goatt]:-}" "${RES[gosig]:-}" \
	"${RES[cold]}" "${RES[cli]}" "${NS[warm]:-0}" "${NS[before]:-0}" "${NS[goatt]:-0}" "${NS[gosig]:-0}" \
	"${RES[nettle]:-fail}" "${RES[openssl]:-fail}" "${RES[mbedtls]:-fail}" <<'PY'
import statistics, sys
rounds, m = sys.argv[1], sys.argv[2]
floor, warm, before, goatt, gosig, cold, cli = sys.argv[3:10]
nw, nb, nga, ngs = sys.argv[10:14]
lnettle, lossl, lmbed = sys.argv[14:17]
def med(s):
    v = [x for x in s.split() if x != "fail"]
    if not v or len(v) != len(s.split()): return None, None
    cpu = statistics.median(float(x.split("/")[0]) for x in v)
    w = [x.split("/")[1] for x in v]
    wall = None if "-" in w else statistics.median(float(x) for x in w)
    return cpu, wall
rows = [
    ("openssl speed ecdsap384 verify (floor)", floor, ""),
    ("Nettle ecdsa_verify, this report (csvsm's library)", lnettle, "bare, in a loop"),
    ("OpenSSL EVP_PKEY_verify, this report", lossl, "bare, in a loop"),
    ("mbedTLS mbedtls_ecdsa_verify, this report", lmbed, "bare, in a loop (csvsm before)"),
    ("csvsm-verify warm cache (--repeat)", warm, "%s reports a round" % nw),
    ("csvsm-verify before (BEFORE)", before, "%s reports a round" % nb),
    ("go-sev-guest SnpAttestation (Go peer)", goatt, "%s reports a round" % nga),
    ("go-sev-guest SnpReportSignature, VCEK parsed once", gosig, "%s reports a round" % ngs),
    ("csvsm-verify cold (a process per report)", cold, "%s processes" % m),
    ("openssl CLI (verify + dgst per report)", cli, "%s x 2 processes" % m),
]
f = med(floor)[0]; g = med(goatt)[0] if goatt else None
print("  %-50s %10s %8s %9s  %s" % ("", "reports/s", "x floor", "x Go peer", ""))
for name, s, note in rows:
    if not s: continue
    cpu, wall = med(s)
    if cpu is None:
        print("  %-50s %10s" % (name, "failed")); continue
    print("  %-50s %10.1f %8.2f %9s  %s%s" % (name, cpu, cpu / f if f else 0,
          "%.2f" % (cpu / g) if g else "-", "[%.1f wall] " % wall if wall else "", note))
PY

# --- verdicts on every fixture ---------------------------------------------------
echo "  verdicts on every fixture (csvsm-verify --roots | go-sev-guest SnpAttestation):"
for r in "$FX"/reports/*.report.bin; do
	f=$(basename "$r" .report.bin); p=$(prod "$f"); extra=(); gextra=(); leaf=$FX/reports/$f.vcek.der
	ask=$FX/roots/${p}_ask.pem
	case $f in
	*vlek*) leaf=$FX/reports/$f.vlek.der; ask=$FX/roots/${p}_asvk.pem
		extra=(--vlek "$leaf" --time 2025-06-01 --vmpl 1); gextra=(-vlek -time 2025-06-01) ;;
	*) extra=(--vcek "$leaf") ;;
	esac
	if [ -f "$FX/reports/$f.certtable.bin" ]; then
		extra=(--cert-table "$FX/reports/$f.certtable.bin")
		leaf=$T/$f.leaf
		python3 - "$FX/reports/$f.certtable.bin" "$leaf" <<'PY'
import sys, struct, uuid
b = open(sys.argv[1], "rb").read()
vcek = uuid.UUID("63da758d-e664-4564-adc5-f4b93be8accd").bytes_le
for i in range(0, len(b) - 24, 24):
    g, off, ln = b[i:i + 16], *struct.unpack_from("<II", b, i + 16)
    if g == vcek or g == uuid.UUID("63da758d-e664-4564-adc5-f4b93be8accd").bytes:
        open(sys.argv[2], "wb").write(b[off:off + ln]); break
PY
	fi
	crc=0; "$V" --report "$r" --roots "$FX/roots" "${extra[@]}" >"$T/c.out" 2>&1 || crc=$?
	cv=$([ $crc = 0 ] && echo "verified" || echo "NOT verified: $(sed -n 's/^  \[FAIL\] \([a-z_.]*\).*/\1/p' "$T/c.out" | tr '\n' ' ')")
	gv="-"
	if [ -n "$GO" ]; then
		gv=$("$GO" -report "$r" -vcek "$leaf" -ask "$ask" -ark "$FX/roots/${p}_ark.pem" "${gextra[@]}" -n 1 2>&1 |
			sed 's/^go-sev-guest attestation: 1 reports, //; s/, [0-9.]* s, .*//' | cut -c1-110)
	fi
	printf '    %-20s csvsm: %-14s go-sev-guest: %s\n' "$f" "$cv" "$gv"
done
