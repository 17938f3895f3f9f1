#!/usr/bin/env bash
# The persistent vTPM's cost, sealed and kbs mode against ephemeral (the
# baseline), measured in one run (docs/vtpm.md "Persistence", "Numbers"):
#  1. Instructions on csvsm's side (valgrind --tool=callgrind on
#     build/bench/vtpm_bench: the same libtpms and persistence code as the
#     image, the host in memory and its own work subtracted): the vTPM's
#     start-up, ephemeral vs sealed and kbs first boot and restore (kbs:
#     csvsm's side of the key release, the EK certificate, the commits; the
#     broker, kbs/jose.c, in memory and subtracted), and one NV-changing
#     command (TPM2_NV_Write) without and with write-through (and commit).
#  2. The SNP machine: csvsm with build/vtpm-probe.efi, five boots (the
#     ephemeral image, the sealed image on a new state and again, the kbs
#     image with csvsm-kbs on loopback on a new state and again): the vTPM phase's time in csvsm's dashboard, the channel's
#     round trips, GHCB I/O exits and bytes (csvsm's "persist" line), the
#     probe's TSC cycles for one TPM2_NV_Write and one TPM2_GetRandom, and
#     the state's size. Times under TCG: compare within this run only.
# Usage: bench/vtpm_bench.sh (make all first). ITERS (callgrind repeats, 3),
# SKIP_MACHINE=1 for part 1 alone.
set -u
cd "$(dirname "$0")/.."
. tests/qemu/lib.sh
B=build/bench/vtpm_bench
ITERS=${ITERS:-3}
T=$(mktemp -d)
proxy_pid=
cleanup() {
	[ -n "$proxy_pid" ] && kill "$proxy_pid" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
[ -x "$B" ] || { echo "vtpm_bench: build $B first (make all)"; exit 1; }

echo "== 1. instructions on csvsm's side (callgrind, mean of $ITERS; the host's work subtracted)"
"$B" 1 | sed 's/^/   /'
for s in boot_ephemeral boot_sealed_first boot_sealed_restore boot_kbs_first boot_kbs_restore nv_ephemeral nv_sealed nv_kbs; do
	valgrind --tool=callgrind --toggle-collect="measured_$s" --callgrind-out-file="$T/cg.$s" \
		"$B" "$ITERS" >/dev/null 2>"$T/vg.$s" || { cat "$T/vg.$s"; exit 1; }
	callgrind_annotate --inclusive=yes --threshold=100 "$T/cg.$s" >"$T/an.$s" 2>/dev/null
done
python3 - "$T" "$ITERS" <<'PY'
import re, sys
d, it = sys.argv[1], int(sys.argv[2])
# A function's inclusive count: callgrind_annotate may list it more than
# once (code inlined from a header is filed under that header, with or
# without the object's name, and as the "=> file:fn (Nx)" call edge); the
# largest of these is the whole of it.
def ir(step, fn):
    best = 0
    for line in open(f"{d}/an.{step}"):
        m = re.match(r'\s*([\d,]+) \([^)]*\)\s+(?:=> )?\S*:(\S+)(?: \[.*\]| \(\d+x\))?\s*$', line)
        if m and m.group(2) == fn:
            best = max(best, int(m.group(1).replace(',', '')))
    return best
def own(step):
    return (ir(step, "measured_" + step) - ir(step, "host_work")) // it
be, bf, br = own("boot_ephemeral"), own("boot_sealed_first"), own("boot_sealed_restore")
kf, kr = own("boot_kbs_first"), own("boot_kbs_restore")
ne, ns, nk = own("nv_ephemeral"), own("nv_sealed"), own("nv_kbs")
print(f"   {'step':44} {'Ir':>14} {'vs ephemeral':>14}")
print(f"   {'vTPM start, ephemeral (baseline)':44} {be:14,} {'1.00x':>14}")
print(f"   {'vTPM start, sealed, first boot (manufacture)':44} {bf:14,} {bf / be:13.2f}x")
print(f"   {'vTPM start, sealed, restore':44} {br:14,} {br / be:13.2f}x")
print(f"   {'vTPM start, kbs, first boot (+ EK cert.)':44} {kf:14,} {kf / be:13.2f}x")
print(f"   {'vTPM start, kbs, restore':44} {kr:14,} {kr / be:13.2f}x")
print(f"   {'TPM2_NV_Write, ephemeral (baseline)':44} {ne:14,} {'1.00x':>14}")
print(f"   {'TPM2_NV_Write, sealed (write-through)':44} {ns:14,} {ns / ne:13.2f}x  (+{ns - ne:,})")
print(f"   {'TPM2_NV_Write, kbs (write-through, commit)':44} {nk:14,} {nk / ne:13.2f}x  (+{nk - ne:,})")
PY
[ "${SKIP_MACHINE:-0}" = 1 ] && exit 0

echo "== 2. the SNP machine: boots with build/vtpm-probe.efi (TCG; one run)"
PSP_KEYS=build/test-chain/psp-keys.bin
QEMU_TIMEOUT=${BENCH_TIMEOUT:-900}
INSTANCE=62656e63682d76747061742d30303031
build/csvsm-igvm --elf build/csvsm.elf --ovmf build/guests/OVMF.fd --entry-symbol snp_entry32 \
	--vtpm-mode sealed --vtpm-instance "$INSTANCE" -o "$T/sealed.igvm" >/dev/null || exit 1
. tests/vtpm/kbs-env.sh
mkdir -p "$T/kbs"
vtpm_kbs_keys "$T/kbs" && vtpm_kbs_image "$T/kbs" "$T/kbs.igvm" "$INSTANCE" &&
	vtpm_kbs_start "$T/kbs" "$INSTANCE" "$VTPM_KBS_MEAS" || { echo "csvsm-kbs did not start"; exit 1; }
trap 'cleanup; vtpm_kbs_stop' EXIT
run() { # run NAME IGVM [STATE [proxy options]]
	local args=() t0
	if [ -n "${3:-}" ]; then
		snpm_vtpm_proxy "$T/sock" "$3" "$T/$1.proxy" "${@:4}"
		proxy_pid=$VTPM_PROXY_PID
		read -r -a args <<<"$(snpm_vtpm_args "$T/sock")"
	fi
	t0=$(date +%s)
	# shellcheck disable=SC2046
	CSVSM_IGVM=$2 snpm_qemu "$T/$1.log" 2G 2 $(snpm_guest_args probe 2G 2 build/vtpm-probe.efi) "${args[@]}"
	[ -n "$proxy_pid" ] && wait "$proxy_pid"
	proxy_pid=
	echo "   $1: QEMU exit $QEMU_RC, $(($(date +%s) - t0)) s wall"
}
run ephemeral build/csvsm.igvm
run sealed-first "$T/sealed.igvm" "$T/state"
run sealed-restore "$T/sealed.igvm" "$T/state"
run kbs-first "$T/kbs.igvm" "$T/kstate" --kbs-url "http://127.0.0.1:$VTPM_KBS_PORT"
"$VTPM_KBS_BIN" vtpm-release --db "sqlite:$T/kbs/registry.db" "$INSTANCE" >/dev/null
run kbs-restore "$T/kbs.igvm" "$T/kstate" --kbs-url "http://127.0.0.1:$VTPM_KBS_PORT"
python3 - "$T" <<'PY'
import re, sys
d = sys.argv[1]
def get(name):
    log = open(f"{d}/{name}.log", errors="replace").read()
    r = {}
    m = re.search(r"platform +snp, TSC (\d+) MHz", log); r["mhz"] = int(m.group(1)) if m else 0
    m = re.search(r"vtpm +init (\d+) ms, measure \d+ KiB (\d+) ms, EK (\d+) ms, total (\d+) ms", log)
    r["init"], r["total"] = (int(m.group(1)), int(m.group(4))) if m else (0, 0)
    m = re.search(r"csvsm: vtpm: persist when=boot (.*)", log)
    r["p"] = dict(kv.split("=") for kv in m.group(1).split()) if m else {}
    m = re.search(r"vtpm-probe: timing getrandom_cycles=(\d+) nv_write_cycles=(\d+),(\d+)", log)
    r["gr"], r["nv1"], r["nv2"] = (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else (0, 0, 0)
    r["done"] = "vtpm-probe: done" in log
    return r
rs = {n: get(n) for n in ("ephemeral", "sealed-first", "sealed-restore", "kbs-first", "kbs-restore")}
e = rs["ephemeral"]
def us(r, c): return c / r["mhz"] if r["mhz"] else float("nan")
print(f"   {'boot':16} {'probe ok':>8} {'vtpm init ms':>13} {'vtpm total ms':>14} {'round trips':>11} {'I/O exits':>10} {'wire bytes out/in':>18} {'state B':>8} {'sealed B':>9}")
for n, r in rs.items():
    p = r["p"]
    print(f"   {n:16} {str(r['done']):>8} {r['init']:13} {r['total']:14} {p.get('calls', '-'):>11} {p.get('exits', '-'):>10} "
          f"{p.get('tx_wire', '-') + '/' + p.get('rx_wire', '-'):>18} {p.get('state_bytes', '-'):>8} {p.get('sealed_bytes', '-'):>9}")
for m in ("sealed", "kbs"):
    print(f"   vTPM start in csvsm, {m} / ephemeral: first boot {rs[m + '-first']['init'] / max(e['init'], 1):.2f}x, "
          f"restore {rs[m + '-restore']['init'] / max(e['init'], 1):.2f}x (the init step; measurement and EK are the same work)")
print(f"   {'guest command':30} {'ephemeral us':>13} {'sealed us':>10} {'ratio':>7} {'kbs us':>10} {'ratio':>7}")
s, k = rs["sealed-restore"], rs["kbs-restore"]
for key, name in (("gr", "TPM2_GetRandom (no NV change)"), ("nv1", "TPM2_NV_Write, 1st"), ("nv2", "TPM2_NV_Write, 2nd")):
    a, b, c = us(e, e[key]), us(s, s[key]), us(k, k[key])
    print(f"   {name:30} {a:13.0f} {b:10.0f} {b / a if a else float('nan'):7.2f} {c:10.0f} {c / a if a else float('nan'):7.2f}")
PY
