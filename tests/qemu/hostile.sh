#!/usr/bin/env bash
# QEMU test (issue 8): the hostile guest (build/hostile.efi, tests/guest/
# hostile.c) attacks csvsm's isolation as an outside review did: interrupt
# delivery to csvsm's CPUs through the IOAPIC and the local APIC, the CMOS
# shutdown byte and BIOS resume path, fw_cfg selector bits, PCI
# configuration through ECAM, a stale TLB entry on another vCPU, string I/O
# against page permissions, DESTROY after REMAP_CA. Each attack is a TAP
# check inside the guest; this script asserts they all failed to get
# through and nothing escaped the VM.
#
# Then the key-wipe check (issue 8 item 7): the launch places a secrets page
# whose VMPCKs this script knows; build/guest/hostile-term.efi asks csvsm to
# terminate through the GHCB MSR protocol; QEMU runs without its exit
# device so the machine stays up after csvsm's termination path, and QMP
# dumps csvsm's memory: none of VMPCK0..3 and none of the simulated PSP's
# private key may be left in it.
#
# PLATFORM=snpm (tests/snpm/hostile.sh): the attacks in the SNP machine, the
# hostile guest an SEV-SNP guest of trixie's OVMF at VMPL2 under csvsm's snp
# platform; string I/O is then the guest firmware's own #VC emulation (those
# two checks are skipped in the guest). A guest's termination request ends
# the VM at the host there, as on hardware, without csvsm's termination path;
# the key-wipe check instead has a hostile host refuse the guest's boot VMSA
# (snpm.refuse_boot_vmsa=1), so csvsm panics with every key loaded, and the
# machine then searches all VMPL0-only memory for VMPCK0..3 (`snpm:
# key-scan:`); the same scan at the guest's launch, while csvsm holds its one
# copy of VMPCK0, is the control that the scan finds a key where there is one.
set -u
cd "$(dirname "$0")/../.."
. tests/qemu/lib.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ ! -f "$OVMF_FD" ]; then echo "ok 1 # SKIP no $OVMF_FD"; exit 0; fi
for f in build/hostile.efi build/guest/hostile-term.efi; do
	if [ ! -f "$f" ]; then echo "not ok 1 - $f exists (build it with make)"; exit 1; fi
done
QEMU_TIMEOUT=240
PLATFORM=${PLATFORM:-sim}

# ---- 1. the attacks (three vCPUs: csvsm parks two, the guest creates vCPUs on them) ----
if [ "$PLATFORM" = snpm ]; then
	# shellcheck disable=SC2046
	snpm_qemu "$tmp/h.log" 2G 3 $(snpm_guest_args probe 2G 3 build/hostile.efi)
else
	csvsm_qemu "$tmp/h.log" 4G 3 $(guest_args build/hostile.efi)
fi
log=$tmp/h.log
summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n1)
sed -n 's/^\(not ok\|ok\) /# hostile: \1 /p' "$log"
tap_check "hostile guest ran to the end: $summary" test -n "$summary"
tap_check "every attack was refused (0 failed)" grep -qE '^[0-9]+ passed, 0 failed' "$log"
npass=$(sed -n 's/^\([0-9]*\) passed.*/\1/p' <<<"$summary")
tap_check "hostile guest made at least 30 checks ($npass)" test "${npass:-0}" -ge 30
if grep -q 'HOSTILE-ESCAPED' "$log"; then
	tap_fail "no guest code ran outside the VM (HOSTILE-ESCAPED printed)"
else
	tap_ok "no guest code ran outside the VM"
fi
if [ "$PLATFORM" = snpm ]; then
	tap_check "the hostile guest ran as an SEV-SNP guest (SEV_STATUS 0x7)" grep -q '^# SEV-SNP guest: SEV_STATUS 0x7' "$log"
	tap_check "the guest powered off at the end (machine)" grep -q '^snpm: guest powered off' "$log"
else
	tap_check "csvsm still owns its vCPUs at power-off" grep -q 'csvsm: vcpu-check: aps=2 responsive=2' "$log"
fi
tap_check "csvsm ended with success status (QEMU exit $QEMU_RC)" test "$QEMU_RC" -eq 1
if grep -q 'FAULT\|PANIC' "$log"; then tap_fail "no csvsm fault or panic"; else tap_ok "no csvsm fault or panic"; fi
[ "$QEMU_RC" -eq 1 ] || tail -n 30 "$log" | sed 's/^/# /'
if [ "$PLATFORM" = snpm ]; then
	snpm_qemu "$tmp/k.log" 2G 2 -append "snpm.key_scan_at_launch=1 snpm.stop_at_launch=1"
	ks=$(grep -m1 "^snpm: key-scan: at the guest's launch" "$tmp/k.log")
	echo "# $ks"
	tap_check "control: at the guest's launch csvsm's memory holds exactly one copy of VMPCK0 and none of VMPCK1..3" \
		test "$(field vmpck0 "$ks")" = 1 -a "$(field vmpck1 "$ks")" = 0 -a "$(field vmpck2 "$ks")" = 0 -a "$(field vmpck3 "$ks")" = 0
	snpm_qemu "$tmp/t.log" 2G 2 -append "snpm.refuse_boot_vmsa=1"
	grep -E '^snpm: refusing|PANIC|^snpm: guest requested termination' "$tmp/t.log" | sed 's/^/# /'
	tap_check "a host that refuses the guest's boot VMSA: csvsm panics and asks to terminate" \
		grep -q "^snpm: guest requested termination (reason set 1 code 255) on vCPU 0" "$tmp/t.log"
	tap_check "the VM ended with failure status (QEMU exit $QEMU_RC)" test "$QEMU_RC" -eq 3
	ks=$(grep -m1 '^snpm: key-scan: VMPL0 terminated' "$tmp/t.log")
	echo "# $ks"
	tap_check "after csvsm's termination path, VMPL0-only memory ($(field pages "$ks") pages) holds none of VMPCK0..3" \
		test "$(field pages "$ks")" -gt 0 -a "$(field vmpck0 "$ks")" = 0 -a "$(field vmpck1 "$ks")" = 0 \
		-a "$(field vmpck2 "$ks")" = 0 -a "$(field vmpck3 "$ks")" = 0
	[ "$TAP_FAILS" -eq 0 ]
	exit
fi

# ---- 2. what csvsm's memory holds after its termination path ----
if ! command -v python3 >/dev/null; then echo "ok $((TAP_N + 1)) # SKIP no python3"; exit 0; fi
log=$tmp/t.log
secrets=$tmp/t.secrets
# shellcheck disable=SC2046
"$QEMU" -machine "$QEMU_MACHINE" -accel tcg -cpu "$QEMU_CPU" -m 4G -smp 2 -nodefaults -net none \
	-display none -no-reboot -serial "file:$log" -qmp "unix:$tmp/qmp.sock,server=on,wait=off" \
	-kernel "$CSVSM_ELF" $(launch_args "$secrets") $(guest_args build/guest/hostile-term.efi) \
	2>"$log.stderr" &
qpid=$!
for _ in $(seq 1 240); do
	grep -q 'csvsm: terminating' "$log" 2>/dev/null && break
	kill -0 "$qpid" 2>/dev/null || break
	sleep 0.5
done
sed -i -e 's/\r//g' "$log"
base=$(sed -n 's/.*# svsm_base \(0x[0-9A-Fa-f]*\) svsm_size \(0x[0-9A-Fa-f]*\).*/\1/p' "$log" | head -n1)
size=$(sed -n 's/.*# svsm_base \(0x[0-9A-Fa-f]*\) svsm_size \(0x[0-9A-Fa-f]*\).*/\2/p' "$log" | head -n1)
sgpa=$(sed -n 's/.*secrets page \(0x[0-9a-f]*\), CA.*/\1/p' "$log" | head -n1)
tap_check "the guest asked csvsm to terminate and csvsm's termination path ran" \
	grep -q 'csvsm: guest requested termination' "$log"
dumped=0
if grep -q 'csvsm: terminating' "$log" && [ -n "$base" ] && [ -n "$size" ] && [ -n "$sgpa" ]; then
	python3 - "$tmp/qmp.sock" "$base" "$size" "$tmp/csvsm.mem" "$sgpa" "$tmp/guest-secrets.mem" <<'EOF' && dumped=1
import json, socket, sys
sock, base, size, out, sgpa, sout = sys.argv[1:7]
s = socket.socket(socket.AF_UNIX)
s.connect(sock)
f = s.makefile('rw')
def cmd(c, **a):
    f.write(json.dumps({'execute': c, 'arguments': a} if a else {'execute': c}) + '\n')
    f.flush()
    while True:
        r = json.loads(f.readline())
        if 'return' in r or 'error' in r:
            if 'error' in r:
                sys.exit('qmp %s: %s' % (c, r['error']))
            return r
json.loads(f.readline())
cmd('qmp_capabilities')
cmd('pmemsave', val=int(base, 16), size=int(size, 16), filename=out)
cmd('pmemsave', val=int(sgpa, 16), size=4096, filename=sout)
cmd('quit')
EOF
fi
kill "$qpid" 2>/dev/null
wait "$qpid" 2>/dev/null
tap_check "csvsm's memory [$base, +$size) and the guest's secrets page dumped through QMP" test "$dumped" = 1
if [ "$dumped" = 1 ]; then
	python3 - "$secrets" "$tmp/csvsm.mem" "$tmp/guest-secrets.mem" "$PSP_KEYS" <<'EOF' >"$tmp/keys.txt"
import os, sys
sec, mem, guest, keys = sys.argv[1:5]
s = open(sec, 'rb').read()
m = open(mem, 'rb').read()
g = open(guest, 'rb').read()
vmpck = [s[0x20 + 32 * i:0x40 + 32 * i] for i in range(4)]
print('guest', ' '.join(str(int(g[0x20 + 32 * i:0x40 + 32 * i] == vmpck[i])) for i in range(4)))
print('csvsm', ' '.join(str(m.count(k)) for k in vmpck))
if os.path.exists(keys):
    k = open(keys, 'rb').read()
    print('pspkey', m.count(k[0x60:0x60 + 48]), m.count(k[:32]))
EOF
	sed 's/^/# /' "$tmp/keys.txt"
	tap_check "the launch's keys are the ones in use: the guest's copy holds VMPCK2 and VMPCK3, not VMPCK0/1" \
		grep -q '^guest 0 0 1 1$' "$tmp/keys.txt"
	tap_check "after termination csvsm's memory holds none of VMPCK0..3" \
		grep -q '^csvsm 0 0 0 0$' "$tmp/keys.txt"
	if [ -f "$PSP_KEYS" ]; then
		tap_check "after termination csvsm's memory holds neither the PSP's private key nor its key blob" \
			grep -q '^pspkey 0 0$' "$tmp/keys.txt"
	fi
fi
