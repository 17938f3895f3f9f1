#!/usr/bin/env bash
# csvsm-kbs under load on loopback (docs/kbs.md "Benchmark"): full RCAR
# exchanges (auth, attest with csvsm's SVSM evidence, the resource opened
# with the TEE key) per second, and p50/p99 of the server-side latency (the
# three requests; the client's evidence generation on the PSP model is not
# counted), with 1, 16 and 64 clients, and the daemon's memory (VmRSS,
# VmHWM) after each. Baseline, measured in the same run: csvsm-verify
# --repeat on one of those reports (the appraisal alone, warm chain), so
# the ratio says what the protocol, the registry and the JOSE cost on top.
# The client runs on the same 2 cores: the numbers are a floor.
#   bash bench/kbs.sh [SECONDS per step, default 8]
set -eu
cd "$(dirname "$0")/.."
S=${1:-8}
CHAIN=build/test-chain
T=$(mktemp -d)
PID=
trap '[ -n "$PID" ] && kill "$PID" 2>/dev/null; wait 2>/dev/null; rm -rf "$T"' EXIT
M=$(printf 'c5%.0s' $(seq 48))
cat >"$T/p.json" <<EOF2
{"version": 1, "snp": {"policy": "0x30000", "measurement": "$M"}, "svsm": {}}
EOF2
printf 's3cret' >"$T/s"
build/csvsm-kbs put-secret --db "sqlite:$T/r.db" default/key/one --rule affirming --file "$T/s" >/dev/null
build/csvsm-kbs serve --policy "$T/p.json" --db "sqlite:$T/r.db" --listen 127.0.0.1:0 --insecure-http \
	--trust-ark "$CHAIN/ark.pem" --port-file "$T/port" --threads 8 --max-seconds 900 --max-conn-per-ip 256 2>"$T/log" &
PID=$!
for _ in $(seq 1 100); do [ -s "$T/port" ] && break; sleep 0.05; done
P=$(cat "$T/port")
mem() { awk '/^VmRSS|^VmHWM/ {printf "%s %s kB  ", $1, $2}' /proc/"$PID"/status; }
echo "csvsm-kbs on 127.0.0.1:$P (SQLite, 8 threads), $S s per step; idle: $(mem)"
mkdir -p "$T/ev"
build/csvsm-kbs-client rcar --port "$P" --chain "$CHAIN" --measurement "$M" --dump "$T/ev" >/dev/null
base=$(build/csvsm-verify --repeat 300 --report "$T/ev/report.bin" --cert-table "$T/ev/certs.bin" \
	--trust-ark "$CHAIN/ark.pem" --nonce "$(cat "$T/ev/nonce64.hex")" --manifest "$T/ev/manifest.bin" \
	2>&1 >/dev/null | sed -n 's/.*, \([0-9.]*\) reports\/s/\1/p')
echo "baseline: csvsm-verify --repeat (the appraisal alone, one core): ${base} appraisals/s"
for c in 1 16 64; do
	out=$(build/csvsm-kbs-client load --port "$P" --chain "$CHAIN" --measurement "$M" \
		--resource default/key/one --clients "$c" --seconds "$S")
	rate=$(echo "$out" | sed -n 's/.* rate \([0-9.]*\)\/s.*/\1/p')
	echo "$out" | grep -v '^first-error' | sed "s/\$/  ($(awk -v r="$rate" -v b="$base" 'BEGIN{printf "%.2f", b ? r / b : 0}')x the baseline)/"
	echo "  daemon memory after $c clients: $(mem)"
done
