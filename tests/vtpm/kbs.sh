#!/usr/bin/env bash
# The persistent vTPM in kbs mode, end to end in the SNP machine (docs/vtpm.md
# "Persistence"; issue 33): csvsm's image in kbs mode (csvsm-igvm --vtpm-mode
# kbs, naming csvsm-kbs's token key), csvsm-kbs with the instance registered
# and an EK CA (tests/vtpm/kbs-env.sh), build/csvsm-proxy keeping the state
# and relaying to it, build/vtpm-probe.efi as the guest.
#
#   b1  first boot: the registry's consent, csvsm manufactures, csvsm-kbs
#       certifies the EK (NV 0x01C00002, the guest reads it; openssl verify on
#       the host), the guest is refused the platform hierarchy; the probe makes
#       an NV index, a persistent key, a data object sealed to PCR0 (unsealed),
#       a counter it writes twice; the proxy tears the state write of the
#       second counter write and kills the VM (a crash mid-write)
#   --  the owner releases the crashed VM's lease (csvsm-kbs vtpm-release)
#   b2  the same state: the same EK byte for byte and the same EK certificate,
#       the NV index, the persistent key, the sealed object unsealed under the
#       same PCR0, the counter at 1 (the torn write gone)
#   b3  a clone, started from the same state while b2 runs: no key (409)
#   b4  rollback: the host offers b1's state after b2 changed it: refused
#   b5  an altered blob, b6 another instance's, b7 another mode's: refused
#   b8  another launch image (not in the owner's policy): no key released
#   b9  the broker unreachable: three attempts, then refused at step 'key'
#   b10 the same state under another OVMF the policy admits: the same EK, the
#       sealed object does not unseal (PCR0 differs)
#   then  what the proxy saw holds no plaintext state, key or seed
#
# b3-b9 end in csvsm before the guest runs: 2G, one vCPU, 2M backing (the
# refusals do not depend on pre-acceptance). Builds nothing: `make` first.
set -u
cd "$(dirname "$0")/../.."
. tests/qemu/lib.sh
. tests/vtpm/kbs-env.sh
CHAIN=${CHAIN:-build/test-chain}
PROBE=${VTPM_PROBE:-build/vtpm-probe.efi}
PROXY=${PROXY:-build/csvsm-proxy}
OVMF_FD=${OVMF_FD:-build/guests/OVMF.fd}
OVMF_OTHER=${OVMF_OTHER:-build/guests/OVMF-forky.fd}
QEMU_TIMEOUT=${QEMU_TIMEOUT_VTPM:-900}
INSTANCE=637376736d2d76747061742d6b627331 # "csvsm-vtpat-kbs1"
MARKER="CSVSM-NV-MARKER:do-not-leak-0001" # tests/vtpm/vtpm_probe.c
TEAR_AT=${TEAR_AT:-9} # the proxy's 9th STORE: the probe's second counter write
tmp=$(mktemp -d)
proxy_pid= b2_pid=
cleanup() {
	[ -n "$proxy_pid" ] && kill "$proxy_pid" 2>/dev/null
	[ -n "$b2_pid" ] && kill "$b2_pid" 2>/dev/null
	vtpm_kbs_stop
	rm -rf "$tmp"
}
trap cleanup EXIT

for f in "$SNPM_ELF" "$PROBE" "$PROXY" build/csvsm-kbs build/csvsm.elf "$OVMF_FD" "$CHAIN/psp-keys.bin"; do
	if [ ! -f "$f" ]; then echo "not ok 1 - $f exists (build it with make)"; exit 1; fi
done
t0=$(date +%s)
release() { "$VTPM_KBS_BIN" vtpm-release --db "sqlite:$tmp/registry.db" "$INSTANCE" >/dev/null; }

vtpm_kbs_keys "$tmp" || { echo "not ok 1 - the broker's keys"; exit 1; }
vtpm_kbs_image "$tmp" "$tmp/a.igvm" "$INSTANCE" "$OVMF_FD" && ma=$VTPM_KBS_MEAS &&
	vtpm_kbs_image "$tmp" "$tmp/b.igvm" "$INSTANCE" "$OVMF_FD" --append "csvsm.vtpm-test=another-image" &&
	mb=$VTPM_KBS_MEAS || { echo "not ok 1 - csvsm-igvm builds the kbs images"; exit 1; }
mo=
if [ -f "$OVMF_OTHER" ] && vtpm_kbs_image "$tmp" "$tmp/o.igvm" "$INSTANCE" "$OVMF_OTHER"; then mo=$VTPM_KBS_MEAS; fi
vtpm_kbs_start "$tmp" "$INSTANCE" "$ma" ${mo:+"$mo"} || { echo "not ok 1 - csvsm-kbs starts"; exit 1; }
tap_check "csvsm-kbs runs with the instance registered; the policy admits the image (${ma:0:16}...)${mo:+ and the other OVMF (${mo:0:16}...)}, not the other command line's (${mb:0:16}...)" \
	test -n "$VTPM_KBS_PORT" -a "$ma" != "$mb"
KBS_URL="http://127.0.0.1:$VTPM_KBS_PORT"

# boot NAME IGVM STATE MEM SMP [proxy options...]: proxy on STATE, the machine with the probe.
boot() {
	local name=$1 igvm=$2 state=$3 mem=$4 smp=$5
	shift 5
	local sock="$tmp/$name.sock" extra=()
	[ "$smp" = 1 ] && extra=(-append snpm.backing=2m)
	snpm_vtpm_proxy "$sock" "$state" "$tmp/$name.proxy" "$@"
	local pp=$VTPM_PROXY_PID
	[ "$name" = b3 ] || proxy_pid=$pp
	# shellcheck disable=SC2046
	CSVSM_IGVM=$igvm snpm_qemu "$tmp/$name.log" "$mem" "$smp" $(snpm_guest_args probe "$mem" "$smp" "$PROBE") \
		$(snpm_vtpm_args "$sock") "${extra[@]}"
	wait "$pp"
	PROXY_RC=$?
	[ "$name" = b3 ] || proxy_pid=
	echo "# $name: QEMU exit $QEMU_RC, proxy exit $PROXY_RC, $(($(date +%s) - t0)) s so far"
}
probe_field() { sed -n "s/^vtpm-probe: $2 *//p" "$tmp/$1.log" | tr -d '\r' | tr A-F a-f | head -n1; }
ek_of() { probe_field "$1" 'ek sha256=[0-9A-Fa-f]* public=' | cut -d' ' -f1; }
cert_of() { probe_field "$1" 'ekcert bytes=[0-9]* sha256=' | cut -d' ' -f1; }
refused_at() { # refused_at NAME STEP TEXT: csvsm's refusal, and the guest never ran
	local line
	line=$(grep -m1 "^csvsm: vtpm: refused at step" "$tmp/$1.log")
	tap_check "$1: $3: ${line#csvsm: vtpm: }" grep -q "^csvsm: vtpm: refused at step '$2': .*$4" "$tmp/$1.log"
	tap_check "$1: the guest never ran" test -z "$(grep -m1 '^vtpm-probe: start' "$tmp/$1.log")"
}

# ---- b1: the first boot, crashed mid-write ----
boot b1 "$tmp/a.igvm" "$tmp/state" 2G 2 --kbs-url "$KBS_URL" --test-tear-store "$TEAR_AT"
cp "$tmp/state" "$tmp/state.b1"
ek1=$(ek_of b1)
cert1=$(cert_of b1)
tap_check "b1: csvsm-kbs consented to the first manufacture; csvsm manufactured and committed version 1" \
	grep -q 'kbs state: none kept: manufactured (first boot), version 1 written through' "$tmp/b1.log"
tap_check "b1: csvsm got the EK certificate ($(sed -n 's/^csvsm: vtpm: ek_cert_bytes=\([0-9]*\).*/\1/p' "$tmp/b1.log") bytes) and the guest read the same at NV 0x01C00002" \
	test -n "$cert1" -a "$cert1" = "$(sed -n 's/^csvsm: vtpm: ek_cert_bytes=[0-9]* ek_cert_sha256=\([0-9a-f]*\).*/\1/p' "$tmp/b1.log")"
probe_field b1 'ekcert bytes=[0-9]* sha256=[0-9A-Fa-f]* der=' | xxd -r -p >"$tmp/ek.der"
openssl x509 -inform der -in "$tmp/ek.der" -out "$tmp/ek.pem" 2>/dev/null
v=$(openssl verify -CAfile "$tmp/ekca.pem" "$tmp/ek.pem" 2>&1)
tap_check "b1: openssl verify on the host: the guest's EK certificate chains to csvsm-kbs's EK CA ($v)" \
	test "$v" = "$tmp/ek.pem: OK"
python3 - "$tmp/ek.der" "$(probe_field b1 'ek sha256=[0-9A-Fa-f]* public=')" >"$tmp/ekm" 2>&1 <<'PY'
import subprocess, sys
der, tpmt = open(sys.argv[1], "rb").read(), bytes.fromhex(sys.argv[2])
mod = subprocess.run(["openssl", "x509", "-inform", "der", "-noout", "-modulus"], input=der,
                     capture_output=True).stdout.decode().strip().split("=")[1].lower()
print("same" if mod == tpmt[-256:].hex() else "differs")
PY
tap_check "b1: the certificate's public key is the guest's EK (template L-1 modulus)" grep -qx same "$tmp/ekm"
tap_check "b1: the guest is refused the platform hierarchy (TPM2_HierarchyControl: $(probe_field b1 'platform rc='), TPM_RC_HIERARCHY)" \
	test "$(probe_field b1 'platform rc=')" = 0x185
tap_check "b1: the probe made the NV index, the persistent key and the PCR0-sealed object, and unsealed it" \
	test -n "$(probe_field b1 'nv created data=')" -a -n "$(probe_field b1 'persistent created name=')" \
	-a -n "$(grep -m1 '^vtpm-probe: sealed created' "$tmp/b1.log")" -a -n "$(probe_field b1 'unseal ok data=')"
tap_check "b1: the probe was writing the counter's 2 when the proxy tore state write $TEAR_AT and killed the VM" \
	test -n "$(grep -m1 '^vtpm-probe: counter writing 2' "$tmp/b1.log")" -a \
	-z "$(grep -m1 '^vtpm-probe: counter after=' "$tmp/b1.log")" -a -n "$(grep -m1 "test: STORE $TEAR_AT torn" "$tmp/b1.proxy")"

# ---- b2 (and b3, a clone of its state, while it runs) ----
release
cp "$tmp/state" "$tmp/state.b3"
boot b2 "$tmp/a.igvm" "$tmp/state" 2G 2 --kbs-url "$KBS_URL" >"$tmp/b2.out" &
b2_pid=$!
for _ in $(seq 600); do grep -q '^vtpm-probe: start' "$tmp/b2.log" 2>/dev/null && break; kill -0 "$b2_pid" 2>/dev/null || break; sleep 1; done
tap_check "b2 runs its guest (the lease is b2's now)" grep -q '^vtpm-probe: start' "$tmp/b2.log"
boot b3 "$tmp/a.igvm" "$tmp/state.b3" 2G 1 --kbs-url "$KBS_URL"
refused_at b3 key "a clone while b2 runs: no key" "HTTP 409: the lease of csvsm_vtpm:$INSTANCE is held by another TEE key"
wait "$b2_pid"
b2_pid=
cat "$tmp/b2.out"
tap_check "b2: opened the state b1's crash left, restored it, wrote version $(sed -n 's/.*kbs state: opened and restored, version \([0-9]*\).*/\1/p' "$tmp/b2.log") through" \
	grep -q 'kbs state: opened and restored' "$tmp/b2.log"
tap_check "b2: the same EK, byte for byte, and the same EK certificate" \
	test -n "$ek1" -a "$(ek_of b2)" = "$ek1" -a -n "$cert1" -a "$(cert_of b2)" = "$cert1"
marker_hex=$(printf '%s' "$MARKER" | xxd -p | tr -d '\n')
tap_check "b2: the NV index, the persistent key (same Name) and the sealed object of b1" \
	test "$(probe_field b2 'nv present data=')" = "$marker_hex" -a \
	"$(probe_field b2 'persistent present name=')" = "$(probe_field b1 'persistent created name=')" \
	-a -n "$(grep -m1 '^vtpm-probe: sealed present' "$tmp/b2.log")"
tap_check "b2: the sealed object unseals under PolicyPCR (the same OVMF, the same PCR0): the same secret" \
	test -n "$(probe_field b2 'unseal ok data=')" -a "$(probe_field b2 'unseal ok data=')" = "$(probe_field b1 'unseal ok data=')"
tap_check "b2: the counter is 1, the last committed state (the torn write of 2 is gone); the probe ran to its end" \
	test "$(probe_field b2 'counter before=')" = 1 -a -n "$(grep -m1 '^vtpm-probe: done' "$tmp/b2.log")"
grep -E '^csvsm: vtpm: (persist|refused)' "$tmp/b2.log" | sed 's/^/# /'

# ---- b4-b7: the host offers other states ----
"$PROXY" --state "$tmp/state" --export "$tmp/good.blob" && "$PROXY" --state "$tmp/state.b1" --export "$tmp/b1.blob"
python3 - "$tmp/good.blob" "$tmp" <<'PY'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
def put(name, f):
    x = bytearray(b); f(x); open(sys.argv[2] + "/" + name, "wb").write(x)
put("altered.blob", lambda x: x.__setitem__(96 + 100, x[96 + 100] ^ 1))   # one ciphertext bit
put("instance.blob", lambda x: x.__setitem__(0x10, x[0x10] ^ 1))         # another instance
put("mode.blob", lambda x: x.__setitem__(0x0C, 1))                        # sealed mode
PY
hostile() { # hostile NAME BLOB STEP TEXT
	release
	cp "$tmp/state" "$tmp/$1.state"
	"$PROXY" --state "$tmp/$1.state" --import "$2" >/dev/null
	boot "$1" "$tmp/a.igvm" "$tmp/$1.state" 2G 1 --kbs-url "$KBS_URL"
	refused_at "$1" "$3" "the host offers $5" "$4"
}
hostile b4 "$tmp/b1.blob" open "rollback: the state is version [0-9]*, the registry's [0-9]*" "b1's state after b2 changed it"
hostile b5 "$tmp/altered.blob" open "altered" "a blob with one bit changed"
hostile b6 "$tmp/instance.blob" open "another instance" "another instance's blob"
hostile b7 "$tmp/mode.blob" open "another vTPM mode" "a sealed-mode blob"

# ---- b8: another launch image; b9: the broker unreachable ----
release
cp "$tmp/state" "$tmp/b8.state"
boot b8 "$tmp/b.igvm" "$tmp/b8.state" 2G 1 --kbs-url "$KBS_URL"
refused_at b8 key "another launch image: the appraisal fails, no key" "HTTP 403"
cp "$tmp/state" "$tmp/b9.state"
boot b9 "$tmp/a.igvm" "$tmp/b9.state" 2G 1 --kbs-url "http://127.0.0.1:9"
refused_at b9 key "the broker unreachable" "csvsm-kbs is unreachable through the host (the host could not reach it, 3 attempts)"
tap_check "b9: the proxy relayed three attempts and nothing else (no FETCH, no STORE)" \
	test "$(grep -c '^[0-9.]* <- RELAY ' "$tmp/b9.proxy")" -eq 3 -a \
	"$(grep -c '^[0-9.]* <- \(FETCH\|STORE\) ' "$tmp/b9.proxy")" -eq 0

# ---- b10: another OVMF the policy admits ----
if [ -n "$mo" ]; then
	release
	boot b10 "$tmp/o.igvm" "$tmp/state" 2G 2 --kbs-url "$KBS_URL"
	tap_check "b10: another OVMF, the same state: the same EK; PCR0 differs (csvsm measured the other OVMF)" \
		test "$(ek_of b10)" = "$ek1" -a "$(sed -n 's/^csvsm: vtpm: pcr0_sha256=//p' "$tmp/b10.log")" != \
		"$(sed -n 's/^csvsm: vtpm: pcr0_sha256=//p' "$tmp/b2.log")"
	tap_check "b10: the object sealed to b1's PCR0 does not unseal ($(grep -m1 '^vtpm-probe: unseal' "$tmp/b10.log"))" \
		grep -qi '^vtpm-probe: unseal refused rc=0x99d' "$tmp/b10.log"
else
	tap_fail "b10: another OVMF ($OVMF_OTHER, make deps) for the sealed object's PCR0"
fi

# ---- what the host saw ----
"$PROXY" --state "$tmp/state" --export "$tmp/final.blob"
root=$(python3 -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
print(c.execute("SELECT state_key FROM kbs_instances WHERE id = ?", ("csvsm_vtpm:" + sys.argv[2],)).fetchone()[0])' \
	"$tmp/registry.db" "$INSTANCE")
python3 tests/vtpm/scan.py --kbs-root "$root" "$INSTANCE" "$tmp/final.blob" "$MARKER" \
	"$tmp"/b*.proxy "$tmp/state" >"$tmp/scan.tap"
tap_merge "$tmp/scan.tap" "scan: "
echo "# tests/vtpm/kbs.sh: $(($(date +%s) - t0)) s"
[ "$TAP_FAILS" -eq 0 ]
