#!/usr/bin/env bash
# Pre-acceptance benchmark: runs build/csvsm-accept-bench (the executor on the
# host against the software RMP model and sim hypervisor, 64 GiB q35-shaped
# map) natively and under valgrind --tool=callgrind, and compares it with the
# acceptance floor: 512 PVALIDATE + 512 RMPADJUST per GiB and
# ceil(2M pages / 253) page-state-change round trips.
#
# Two hypervisors side by side:
#   floor  - handles a whole 253-entry PSC descriptor per exit, 1 vCPU
#   sim    - a host that stops every 64 page-state entries (csvsm.sim_psc_limit=64), 2 vCPUs
# each with 2 MiB backing (2M RMP entries) and with 4K backing (-4k).
# Instructions are callgrind Ir for the executor only (client requests),
# split into csvsm's own code and the model of PVALIDATE/RMPADJUST/host PSC,
# which on hardware is one instruction / the hypervisor.
# Prints TAP lines. Usage: bench/accept.sh [GiB]   (build with
# `make build/csvsm-accept-bench` first)
set -u
cd "$(dirname "$0")/.."
BIN=build/csvsm-accept-bench
GIB=${1:-64}
n=0
tap() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fi; }

if [ ! -x "$BIN" ]; then
	echo "not ok 1 - $BIN missing: run make build/csvsm-accept-bench"
	exit 1
fi
have_cg=1
command -v valgrind >/dev/null && command -v callgrind_annotate >/dev/null || have_cg=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

run() { # name, args...
	local name=$1; shift
	echo "# === $name hypervisor: $*"
	"$BIN" --gib "$GIB" "$@" >"$tmp/$name.txt"
	local rc=$?
	sed 's/^/# /' "$tmp/$name.txt"
	tap $rc "$name: executor accepted every page once, counts match accept_predict"
	local units ratio_pv ratio_ra ratio_psc
	units=$(sed -n 's/^units_2m=//p' "$tmp/$name.txt")
	read -r ratio_pv ratio_ra ratio_psc < <(sed -n 's/^ratio: *pvalidate=\([0-9.]*\) rmpadjust=\([0-9.]*\) psc_calls=\([0-9.]*\)/\1 \2 \3/p' "$tmp/$name.txt")
	# PVALIDATE/RMPADJUST: within 2% of the floor (the low 1 MiB and the
	# edges of csvsm's region are 4K pages)
	awk -v r="$ratio_pv" 'BEGIN{exit !(r <= 1.02)}'; tap $? "$name: PVALIDATE ratio to floor $ratio_pv <= 1.02"
	awk -v r="$ratio_ra" 'BEGIN{exit !(r <= 1.02)}'; tap $? "$name: RMPADJUST ratio to floor $ratio_ra <= 1.02"
	echo "# $name: PSC round trips ratio to floor: $ratio_psc"
	if [ "$have_cg" = 1 ]; then
		valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$tmp/cg.$name" \
			"$BIN" --gib "$GIB" "$@" >/dev/null 2>"$tmp/cg.$name.err"
		local f="$tmp/cg.$name.1"
		[ -f "$f" ] || f="$tmp/cg.$name"
		local total model
		total=$(sed -n 's/^totals: //p' "$f" | head -1)
		model=$(callgrind_annotate --inclusive=yes --threshold=100 --auto=no "$f" 2>/dev/null |
			awk '$0 !~ /=>/ && /:(b_pvalidate|b_rmpadjust|b_ghcb_call) \[/{gsub(",","",$1); s+=$1} END{print s+0}')
		if [ -n "$total" ] && [ "$total" -gt 0 ]; then
			awk -v t="$total" -v m="$model" -v u="$units" 'BEGIN{
				printf "# instructions per 2 MiB accepted: total %.0f = csvsm %.0f + RMP/hypervisor model %.0f\n",
					t/u, (t-m)/u, m/u }'
			tap 0 "$name: callgrind measured $total instructions for $units x 2 MiB"
		else
			tap 1 "$name: callgrind produced no totals"
		fi
	else
		echo "# valgrind not installed: no instruction counts"
	fi
}

run floor --vcpus 1 --psc-limit 253
run sim --vcpus 2 --psc-limit 64
# The host's 4K backing (guest_memfd, the SNP machine's default): the floor
# is then 512 PVALIDATE + 512 RMPADJUST per 2 MiB; csvsm adds the one 2M
# PVALIDATE that finds the size mismatch (ratio 513/512).
run floor-4k --vcpus 1 --psc-limit 253 --backing 4k
run sim-4k --vcpus 2 --psc-limit 64 --backing 4k
