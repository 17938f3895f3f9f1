#!/usr/bin/env bash
# make run-kbs: csvsm-kbs on 127.0.0.1:${KBS_PORT:-8080} (plain HTTP,
# loopback only) with a test policy for csvsm's own launch in the SNP
# machine: the MEASUREMENT csvsm-measure computes for build/csvsm.igvm, the
# test chain's root (build/test-chain/ark.pem) trusted, csvsm's SVSM
# evidence required, and one resource, default/test/secret, released on an
# affirming appraisal. State in build/kbs-run/ (registry.db, policy.json).
set -eu
cd "$(dirname "$0")/.."
D=build/kbs-run
mkdir -p "$D"
meas=$(build/csvsm-measure --igvm build/csvsm.igvm)
cat >"$D/policy.json" <<EOF2
{"version": 1,
 "comment": "make run-kbs: csvsm's launch in the SNP machine (csvsm-measure --igvm build/csvsm.igvm)",
 "snp": {"policy": "0x30000", "vmpl": 0, "measurement": "$meas"},
 "svsm": {}}
EOF2
build/csvsm-kbs validate-policy "$D/policy.json"
[ -f "$D/secret" ] || head -c 24 /dev/urandom | base64 >"$D/secret"
build/csvsm-kbs put-secret --db "sqlite:$D/registry.db" default/test/secret --rule affirming --file "$D/secret"
exec build/csvsm-kbs serve --policy "$D/policy.json" --db "sqlite:$D/registry.db" \
	--listen "127.0.0.1:${KBS_PORT:-8080}" --insecure-http --trust-ark build/test-chain/ark.pem
