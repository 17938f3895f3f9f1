#!/usr/bin/env bash
# csvsm-kbs under load on loopback (docs/kbs.md "Benchmark"): full RCAR
# exchanges (auth, attest with csvsm's SVSM evidence, the resource opened
# with the TEE key) with 1, 16 and 64 clients, and 16 with a CRL configured.
#
# What the service costs is measured on the daemon alone: its CPU time
# (user + system, /proc/PID/stat) over each step divided by the exchanges
# it answered, so "exchanges per server CPU-second" (each one appraisal)
# does not depend on the client, which runs on the same two cores and signs
# one PSP-model report per exchange (its evidence must bind the fresh
# nonce, so it cannot be made before the challenge). The wall-clock rate and
# p50/p99 (the client's time for the three requests, its evidence
# generation excluded) are printed too; they move with the machine's load.
#
# The daemon also times its appraisals on the thread's CPU clock (from the
# chain lookup to the last check; printed when it stops): the appraisal
# inside the service, against the floor below.
#
# Baselines, measured in the same run:
#   - csvsm-verify --repeat on one of these reports (the verifier's warm
#     chain cache: one report's checks and signature, per CPU-second): the
#     floor of an appraisal; the ratio says what the protocol, JOSE, the
#     registry and HTTP add
#   - csvsm-kbs before: BEFORE=binary or BEFORE_REF=git-ref (built under
#     build/kbs-before-<sha>), the same steps, interleaved step by step
#   bash bench/kbs.sh [SECONDS per step, default 8]
set -eu
cd "$(dirname "$0")/.."
ROOT=$PWD
S=${1:-8}
CHAIN=build/test-chain
T=$(mktemp -d)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$T"
}
trap cleanup EXIT
M=$(printf 'c5%.0s' $(seq 48))
cat >"$T/p.json" <<EOF2
{"version": 1, "snp": {"policy": "0x30000", "measurement": "$M"}, "svsm": {}}
EOF2
printf 's3cret' >"$T/s"

BEFORE=${BEFORE:-}
if [ -z "$BEFORE" ] && [ -n "${BEFORE_REF:-}" ]; then
	b=$ROOT/build/kbs-before-$(git rev-parse --short "$BEFORE_REF")
	if [ ! -x "$b/build/csvsm-kbs" ]; then
		rm -rf "$b" && mkdir -p "$b"
		git archive "$BEFORE_REF" | tar -x -C "$b"
		nice make -C "$b" -j2 build/csvsm-kbs >"$b.log" 2>&1 || { echo "bench/kbs.sh: building $BEFORE_REF failed ($b.log)"; exit 1; }
	fi
	BEFORE=$b/build/csvsm-kbs
fi

# A CRL of the test ARK revoking nothing (the CRL step), when the chain kept its keys.
CRL=
if [ -f "$CHAIN/ark-key.pem" ]; then
	mkdir -p "$T/ca" && : >"$T/ca/index.txt" && echo 01 >"$T/ca/crlnumber"
	printf '[ca]\ndefault_ca=d\n[d]\ndatabase=%s\ncrlnumber=%s\ndefault_md=sha384\ndefault_crl_days=30\n' \
		"$T/ca/index.txt" "$T/ca/crlnumber" >"$T/ca/ca.cnf"
	openssl ca -config "$T/ca/ca.cnf" -gencrl -keyfile "$CHAIN/ark-key.pem" -cert "$CHAIN/ark.pem" \
		-out "$T/crl.pem" -sigopt rsa_padding_mode:pss -sigopt rsa_pss_saltlen:48 \
		-sigopt rsa_mgf1_md:sha384 >/dev/null 2>&1 && CRL=$T/crl.pem
fi

# start NAME BINARY [options]: a daemon on its own registry; sets PID_NAME, PORT_NAME
start() {
	local name=$1 bin=$2 extra=()
	shift 2
	# the per-address limit is csvsm-kbs's since the review (64; the load test's 64 clients
	# share one address)
	"$bin" serve --help 2>&1 | grep -q max-conn-per-ip && extra=(--max-conn-per-ip 256)
	"$bin" put-secret --db "sqlite:$T/$name.db" default/key/one --rule affirming --file "$T/s" >/dev/null
	"$bin" serve --policy "$T/p.json" --db "sqlite:$T/$name.db" --listen 127.0.0.1:0 --insecure-http \
		--trust-ark "$CHAIN/ark.pem" --port-file "$T/$name.port" --threads 8 --max-seconds 1800 \
		"${extra[@]}" "$@" 2>"$T/$name.log" &
	local pid=$!
	PIDS+=("$pid")
	for _ in $(seq 1 100); do [ -s "$T/$name.port" ] && break; sleep 0.05; done
	[ -s "$T/$name.port" ] || { echo "bench/kbs.sh: $name did not start:"; cat "$T/$name.log"; exit 1; }
	eval "PID_$name=$pid PORT_$name=$(cat "$T/$name.port")"
}
TCK=$(getconf CLK_TCK)
cpu() { awk -v t="$TCK" '{printf "%.3f", ($14 + $15) / t}' "/proc/$1/stat"; }
mem() { awk '/^VmRSS|^VmHWM/ {printf "%s %s kB  ", $1, $2}' "/proc/$1/status"; }

names=(after)
start after build/csvsm-kbs
[ -z "$BEFORE" ] || { names+=(before); start before "$BEFORE"; }
if [ -n "$CRL" ]; then
	start after_crl build/csvsm-kbs --crl "$CRL"
	[ -z "$BEFORE" ] || start before_crl "$BEFORE" --crl "$CRL"
fi

# The floor: csvsm-verify's warm path on one of these reports.
mkdir -p "$T/ev"
# shellcheck disable=SC2154 # PORT_after is set by start (eval)
build/csvsm-kbs-client rcar --port "$PORT_after" --chain "$CHAIN" --measurement "$M" --dump "$T/ev" >/dev/null
base=$(build/csvsm-verify --repeat 3000 --report "$T/ev/report.bin" --cert-table "$T/ev/certs.bin" \
	--trust-ark "$CHAIN/ark.pem" --nonce "$(cat "$T/ev/nonce64.hex")" --manifest "$T/ev/manifest.bin" \
	2>&1 >/dev/null | sed -n 's/.*, \([0-9.]*\) reports\/s per CPU-second.*/\1/p')
echo "csvsm-kbs on 127.0.0.1 (SQLite, 8 threads), $S s per step; ${BEFORE:+before: $BEFORE}"
echo "floor: csvsm-verify --repeat (warm chain cache, the appraisal alone): ${base} reports/s per CPU-second"
printf '%-28s %8s %9s %8s %8s %10s %12s %9s\n' step exch. "wall/s" p50ms p99ms "srv ms/ex" "ex/srv-CPU-s" "x floor"

# step LABEL DAEMON CLIENTS: one load step against one daemon, its CPU time measured
step() {
	local label=$1 name=$2 c=$3 pid port c0 c1 out
	eval "pid=\$PID_$name port=\$PORT_$name"
	c0=$(cpu "$pid")
	out=$(build/csvsm-kbs-client load --port "$port" --chain "$CHAIN" --measurement "$M" \
		--resource default/key/one --clients "$c" --seconds "$S" | grep -v '^first-error')
	c1=$(cpu "$pid")
	echo "$out" | awk -v l="$label" -v c0="$c0" -v c1="$c1" -v b="$base" '{
		for (i = 1; i < NF; i++) v[$i] = $(i + 1)
		ex = v["exchanges"]; rate = v["rate"]; sub("/s", "", rate); cpu = c1 - c0
		per = ex ? 1000 * cpu / ex : 0; eps = cpu > 0 ? ex / cpu : 0
		printf "%-28s %8d %9.1f %8.1f %8.1f %10.3f %12.1f %9.2f%s\n", l, ex, rate, v["p50"], v["p99"],
			per, eps, (b ? eps / b : 0), (v["errors"] > 0 ? "  (" v["errors"] " errors)" : "")
	}'
}
for c in 1 16 64; do
	for n in "${names[@]}"; do step "$n, $c client(s)" "$n" "$c"; done
done
if [ -n "$CRL" ]; then
	for n in "${names[@]}"; do step "$n with --crl, 16 clients" "${n}_crl" 16; done
fi
for n in "${names[@]}"; do
	eval "pid=\$PID_$n"
	echo "daemon memory, $n (after every step): $(mem "$pid")"
	kill -TERM "$pid" && wait "$pid" 2>/dev/null || true
	sed -n "s/^csvsm-kbs: stopped (\(.*\))/  $n: \1/p" "$T/$n.log"
	us=$(sed -n 's/.* appraisals, \([0-9.]*\) us of thread CPU each.*/\1/p' "$T/$n.log")
	[ -z "$us" ] || awk -v u="$us" -v b="$base" -v n="$n" 'BEGIN {
		printf "  %s, the appraisal inside the service (chain lookup, every check): %.1f appraisals per thread-CPU-second, %.2fx the floor\n", n, 1e6 / u, 1e6 / u / b }'
done
