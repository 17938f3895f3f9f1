#!/usr/bin/env bash
# QEMU test: csvsm refuses a corrupted memory map cleanly (issue 2). A
# sim-only override on the PVH command line (csvsm.test_memmap=) replaces
# QEMU's map; csvsm must print a refusal, end with a failure status, and
# never fault or hang.
set -u
cd "$(dirname "$0")/../.."
. tests/qemu/lib.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
QEMU_TIMEOUT=60

refuse() { # name map expected-reason
	csvsm_qemu "$tmp/m.log" 2G 1 -append "csvsm.test_memmap=$2"
	tap_check "$1: refused ($(grep -m1 'memmap: refused' "$tmp/m.log" | sed 's/.*refused: //'))" \
		grep -q "memmap: refused: .*$3" "$tmp/m.log"
	tap_check "$1: failure status, not a fault or hang (QEMU exit $QEMU_RC)" test "$QEMU_RC" -eq 3
	if grep -q 'FAULT' "$tmp/m.log"; then tap_fail "$1: no fault dump"; else tap_ok "$1: no fault dump"; fi
}

refuse "overlapping RAM" "0:9fc00:1,100000:7ff00000:1,20000000:1000000:1" "overlap"
refuse "unaligned RAM" "0:9fc00:1,100123:7ff00000:1" "align"
refuse "csvsm region not RAM" "0:9fc00:1,100000:7bf00000:1,7c000000:4000000:2" "csvsm"
refuse "wrapping entry" "0:9fc00:1,fffffffffffff000:2000:1" "wrap"
refuse "malformed override" "0:9fc00:1,zz" "malformed"

# A good override is accepted: the same map QEMU gives for -m 2G, as text.
csvsm_qemu "$tmp/g.log" 2G 1 -append "csvsm.test_memmap=0:9fc00:1,100000:7ff00000:1"
tap_check "well-formed override accepted and memory accepted (QEMU exit $QEMU_RC)" \
	grep -q 'accept-check: pages=[1-9][0-9]* missing=0 double=0' "$tmp/g.log"
