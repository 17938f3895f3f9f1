#!/usr/bin/env bash
# The persistent vTPM in sealed mode, end to end in the SNP machine
# (docs/vtpm.md "Persistence"). csvsm's image in sealed mode (csvsm-igvm
# --vtpm-mode sealed), its channel on the machine's COM4 (a unix socket),
# build/csvsm-proxy keeping the state, and build/vtpm-probe.efi as the
# guest, talking to the vTPM through the SVSM vTPM protocol at VMPL2.
#
#   boot 1  a fresh state file: csvsm manufactures and writes version 1; the
#           probe makes an NV index (a marker), a persistent ECC key, and a
#           counter it writes twice; the proxy tears the state write of the
#           second counter write (half the slot, then it kills QEMU and
#           itself: a host crash in the middle of a state write)
#   boot 2  the same file: the same EK byte for byte, the marker and the
#           persistent key there, the counter at 1 (the last state the host
#           confirmed: the torn write is gone)
#   boot 3  an altered blob (a ciphertext byte): refused at step 'open'
#   boot 4  a blob whose mode says kbs: refused at step 'open'
#   boot 5  another launch image (another measured command line), the same
#           state: another key, refused at step 'open'
#   then    what the proxy saw holds no plaintext state, key or seed
#           (tests/vtpm/scan.py); csvsm-measure --vtpm-mode names the mode
#
# Boots 3-5 end in csvsm before the guest runs: one vCPU and 2M backing
# (their refusals come before the guest and do not depend on
# pre-acceptance). The kbs mode's boots are tests/vtpm/kbs.sh. Builds
# nothing: `make` first.
set -u
cd "$(dirname "$0")/../.."
. tests/qemu/lib.sh
CHAIN=${CHAIN:-build/test-chain}
PROBE=${VTPM_PROBE:-build/vtpm-probe.efi}
PROXY=${PROXY:-build/csvsm-proxy}
IGVM_TOOL=${IGVM_TOOL:-build/csvsm-igvm}
MEASURE=${MEASURE:-build/csvsm-measure}
OVMF_FD=${OVMF_FD:-build/guests/OVMF.fd}
QEMU_TIMEOUT=${QEMU_TIMEOUT_VTPM:-900}
INSTANCE=637376736d2d76747061742d74657374 # "csvsm-vtpat-test"
MARKER="CSVSM-NV-MARKER:do-not-leak-0001"  # tests/vtpm/vtpm_probe.c
TEAR_AT=${TEAR_AT:-9} # the proxy's 9th STORE: the probe's second counter write (below)
tmp=$(mktemp -d)
proxy_pid=
cleanup() {
	[ -n "$proxy_pid" ] && kill "$proxy_pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

if [ ! -f "$CHAIN/psp-keys.bin" ]; then
	echo "ok 1 # SKIP no $CHAIN/psp-keys.bin (make build/test-chain/psp-keys.bin)"
	exit 0
fi
for f in "$SNPM_ELF" "$PROBE" "$PROXY" "$IGVM_TOOL" "$MEASURE" build/csvsm.elf "$OVMF_FD"; do
	if [ ! -f "$f" ]; then echo "not ok 1 - $f exists (build it with make)"; exit 1; fi
done
if ! python3 -c 'import cryptography' 2>/dev/null; then
	echo "not ok 1 - python3-cryptography is installed (make deps)"
	exit 1
fi
PSP_KEYS=$CHAIN/psp-keys.bin
t0=$(date +%s)

# The two launch images: the one under test and one that differs only in
# its measured command line (csvsm ignores the option; the measurement
# changes, so does the sealed key).
mkimg() { # mkimg OUT [--append ...]
	local out=$1
	shift
	"$IGVM_TOOL" --elf build/csvsm.elf --ovmf "$OVMF_FD" --entry-symbol snp_entry32 \
		--vtpm-mode sealed --vtpm-instance "$INSTANCE" "$@" -o "$out" >"$out.txt"
}
mkimg "$tmp/a.igvm" && mkimg "$tmp/b.igvm" --append "csvsm.vtpm-test=another-image" ||
	{ echo "not ok 1 - csvsm-igvm builds the sealed images"; exit 1; }
da=$("$MEASURE" --igvm "$tmp/a.igvm" --vtpm-mode sealed --vtpm-instance "$INSTANCE")
db=$("$MEASURE" --igvm "$tmp/b.igvm" --vtpm-mode sealed --vtpm-instance "$INSTANCE")
de=$("$MEASURE" --igvm "$tmp/a.igvm" --vtpm-mode ephemeral 2>/dev/null)
tap_check "csvsm-measure --vtpm-mode sealed gives the sealed image's digest (${da:0:16}...), and refuses to call it ephemeral" \
	test -n "$da" -a -z "$de"
tap_check "the second image measures differently (${db:0:16}...)" test -n "$db" -a "$da" != "$db"
# kbs mode: the image names the broker's key; another key is another image.
openssl ecparam -name secp384r1 -genkey -noout -out "$tmp/kbs.key" 2>/dev/null &&
	openssl ec -in "$tmp/kbs.key" -pubout -out "$tmp/kbs.pub" 2>/dev/null &&
	openssl ecparam -name secp384r1 -genkey -noout -out "$tmp/kbs2.key" 2>/dev/null &&
	openssl ec -in "$tmp/kbs2.key" -pubout -out "$tmp/kbs2.pub" 2>/dev/null
"$IGVM_TOOL" --elf build/csvsm.elf --ovmf "$OVMF_FD" --entry-symbol snp_entry32 --vtpm-mode kbs \
	--vtpm-instance "$INSTANCE" --vtpm-broker-key "$tmp/kbs.pub" -o "$tmp/k.igvm" >/dev/null
dk=$("$MEASURE" --igvm "$tmp/k.igvm" --vtpm-mode kbs --vtpm-instance "$INSTANCE" --vtpm-broker-key "$tmp/kbs.pub")
dk2=$("$MEASURE" --igvm "$tmp/k.igvm" --vtpm-mode kbs --vtpm-instance "$INSTANCE" --vtpm-broker-key "$tmp/kbs2.pub" 2>/dev/null)
tap_check "kbs image: csvsm-measure gives its digest with its broker key only (${dk:0:16}...)" \
	test -n "$dk" -a -z "$dk2" -a "$dk" != "$da"
nokey=$("$IGVM_TOOL" --elf build/csvsm.elf --ovmf "$OVMF_FD" --vtpm-mode kbs --vtpm-instance "$INSTANCE" \
	-o "$tmp/x.igvm" 2>&1 >/dev/null | head -n1)
tap_check "csvsm-igvm refuses a kbs image without the broker's key: $nokey" \
	test -n "$nokey" -a ! -e "$tmp/x.igvm"

# boot NAME IGVM STATE [proxy options...]: proxy on STATE, the machine with the probe
# (SMP=1: one vCPU and 2M backing, for a boot refused before the guest runs).
boot() {
	local name=$1 igvm=$2 state=$3 smp=${SMP_BOOT:-2} extra=()
	shift 3
	[ "$smp" = 1 ] && extra=(-append snpm.backing=2m)
	snpm_vtpm_proxy "$tmp/sock" "$state" "$tmp/$name.proxy" "$@"
	proxy_pid=$VTPM_PROXY_PID
	# shellcheck disable=SC2046
	CSVSM_IGVM=$igvm snpm_qemu "$tmp/$name.log" 2G "$smp" $(snpm_guest_args probe 2G "$smp" "$PROBE") \
		$(snpm_vtpm_args "$tmp/sock") "${extra[@]}"
	wait "$proxy_pid"
	PROXY_RC=$?
	proxy_pid=
	echo "# $name: QEMU exit $QEMU_RC, proxy exit $PROXY_RC, $(($(date +%s) - t0)) s so far"
}
# The probe prints hex with gnu-efi's Print, in capitals: compared in lower case.
probe_field() { sed -n "s/^vtpm-probe: $2 *//p" "$tmp/$1.log" | tr -d '\r' | tr A-F a-f | head -n1; }
ek_of() { probe_field "$1" 'ek sha256=[0-9A-Fa-f]* public=' | cut -d' ' -f1; }

# ---- boot 1: manufacture, make things, crash mid-write ----
boot b1 "$tmp/a.igvm" "$tmp/state" --test-tear-store "$TEAR_AT"
ek1=$(ek_of b1)
name1=$(probe_field b1 'persistent created name=')
tap_check "boot 1: csvsm found no state and manufactured (first boot), wrote version 1" \
	grep -q 'sealed state: none kept: manufactured (first boot), version 1 written through' "$tmp/b1.log"
tap_check "boot 1: the probe got an EK, made the NV marker and the persistent key" \
	test -n "$ek1" -a -n "$name1" -a -n "$(grep -m1 '^vtpm-probe: nv created data=' "$tmp/b1.log")"
tap_check "boot 1: the probe wrote the counter to 1 and was writing 2 when the VM died" \
	test "$(probe_field b1 'counter before=')" = 0 -a \
	-n "$(grep -m1 '^vtpm-probe: counter writing 2' "$tmp/b1.log")" -a \
	-z "$(grep -m1 '^vtpm-probe: counter after=' "$tmp/b1.log")"
tap_check "boot 1: the proxy tore state write $TEAR_AT mid-slot and the VM was killed (QEMU exit $QEMU_RC, proxy $PROXY_RC)" \
	grep -q "test: STORE $TEAR_AT torn" "$tmp/b1.proxy"
nstore=$(grep -c ': durable (generation' "$tmp/b1.proxy")
tap_check "boot 1: $nstore state writes confirmed before the torn one" test "$nstore" -eq $((TEAR_AT - 1))

# ---- boot 2: the same state back ----
boot b2 "$tmp/a.igvm" "$tmp/state"
ver2=$(sed -n 's/.*sealed state: opened and restored, version \([0-9]*\) written.*/\1/p' "$tmp/b2.log" | head -n1)
tap_check "boot 2: csvsm opened and restored the state (version written: ${ver2:-none})" test -n "$ver2"
tap_check "boot 2: the same EK, byte for byte (TPMT_PUBLIC, ${#ek1} hex digits)" \
	test -n "$ek1" -a "$(ek_of b2)" = "$ek1"
marker_hex=$(printf '%s' "$MARKER" | xxd -p | tr -d '\n')
tap_check "boot 2: the NV index made in boot 1 is there with its data" \
	test "$(probe_field b2 'nv present data=')" = "$marker_hex"
tap_check "boot 2: the persistent key made in boot 1 is there (same Name)" \
	test -n "$name1" -a "$(probe_field b2 'persistent present name=')" = "$name1"
tap_check "boot 2: the counter is 1, the last confirmed state (the torn write of 2 is gone)" \
	test "$(probe_field b2 'counter before=')" = 1
tap_check "boot 2: the probe ran to its end, the VM ended cleanly (QEMU exit $QEMU_RC)" \
	test "$QEMU_RC" -eq 1 -a -n "$(grep -m1 '^vtpm-probe: done' "$tmp/b2.log")"
grep -E '^vtpm-probe: (error|timing)|^csvsm: vtpm: (persist|refused)' "$tmp/b2.log" | sed 's/^/# /'

# ---- boots 3-5: refusals, each on a copy of the good state ----
"$PROXY" --state "$tmp/state" --export "$tmp/good.blob" ||
	echo "# cannot export the state"
refusal() { # refusal NAME IGVM BLOB "expected text"
	cp "$tmp/state" "$tmp/$1.state"
	if [ -n "$3" ]; then "$PROXY" --state "$tmp/$1.state" --import "$3" >/dev/null; fi
	SMP_BOOT=1 boot "$1" "$2" "$tmp/$1.state"
	local line
	line=$(grep -m1 "^csvsm: vtpm: refused at step" "$tmp/$1.log")
	tap_check "$1: refused at step 'open' ($4): ${line#csvsm: vtpm: }" \
		grep -q "^csvsm: vtpm: refused at step 'open': .*$4" "$tmp/$1.log"
	tap_check "$1: the guest never ran" test -z "$(grep -m1 '^vtpm-probe: start' "$tmp/$1.log")"
}
python3 - "$tmp/good.blob" "$tmp/altered.blob" "$tmp/mode.blob" <<'PY'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
a = bytearray(b); a[96 + 100] ^= 0x01           # one ciphertext bit
open(sys.argv[2], "wb").write(a)
m = bytearray(b); m[0x0C] = 2                    # mode field: kbs
open(sys.argv[3], "wb").write(m)
PY
refusal b3 "$tmp/a.igvm" "$tmp/altered.blob" "altered"
refusal b4 "$tmp/a.igvm" "$tmp/mode.blob" "another vTPM mode"
refusal b5 "$tmp/b.igvm" "" "another key"

# ---- what the host saw ----
meas=$(sed -n 's/^snpm: launch: measurement=\([0-9a-f]*\).*/\1/p' "$tmp/b2.log" | head -n1)
tap_check "the machine's launch measurement is csvsm-measure's (${meas:0:16}...)" test "$meas" = "$da"
"$PROXY" --state "$tmp/state" --export "$tmp/final.blob"
# What the proxy saw (its logs of every frame) and kept (the state file);
# not the console logs, where the guest prints its own marker.
python3 tests/vtpm/scan.py "$PSP_KEYS" "$meas" 0x30000 "$INSTANCE" "$tmp/final.blob" "$MARKER" \
	"$tmp"/b*.proxy "$tmp/state" >"$tmp/scan.tap"
tap_merge "$tmp/scan.tap" "scan: "
echo "# tests/vtpm/sealed.sh: 5 boots, $(($(date +%s) - t0)) s"
[ "$TAP_FAILS" -eq 0 ]
