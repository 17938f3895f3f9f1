#!/usr/bin/env bash
# QEMU end-to-end test (issue 3): csvsm pre-accepts memory, launches Debian's
# OVMF at VMPL2 with the probe as its kernel; the probe runs the SVSM
# conformance suite over VMGEXIT and powers off. Passes when the probe
# reports no failure, csvsm kept its secondary vCPUs (vcpu-check) and the VM
# ended with csvsm's success status.
set -u
cd "$(dirname "$0")/../.."
. tests/qemu/lib.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ ! -f "$OVMF_FD" ]; then echo "ok 1 # SKIP no $OVMF_FD"; exit 0; fi
QEMU_TIMEOUT=240

csvsm_qemu "$tmp/p.log" 4G 2 $(guest_args build/probe.efi)
summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$tmp/p.log" | tail -n1)
# Show the probe's own TAP lines as comments (the runner counts this script's).
sed -n 's/^\(not ok\|ok\) /# probe: \1 /p' "$tmp/p.log"
tap_check "probe ran to the end: $summary" test -n "$summary"
tap_check "probe reports 0 failed" grep -qE '^[0-9]+ passed, 0 failed' "$tmp/p.log"
npass=$(sed -n 's/^\([0-9]*\) passed.*/\1/p' <<<"$summary")
tap_check "probe passed at least 50 checks ($npass)" test "${npass:-0}" -ge 50
tap_check "guest powered off through ACPI" grep -q 'csvsm: guest powered off' "$tmp/p.log"
tap_check "csvsm still owns its other vCPU after the guest's INIT-SIPI-SIPI" \
	grep -q 'csvsm: vcpu-check: aps=1 responsive=1' "$tmp/p.log"
tap_check "csvsm ended with success status (QEMU exit $QEMU_RC)" test "$QEMU_RC" -eq 1
if grep -q 'FAULT\|PANIC' "$tmp/p.log"; then tap_fail "no csvsm fault or panic"; else tap_ok "no csvsm fault or panic"; fi
[ "$QEMU_RC" -eq 1 ] || tail -n 40 "$tmp/p.log" | sed 's/^/# /'

# The guest VMPL is an option: the same suite at VMPL1 (VMPCK0 only cleared).
csvsm_qemu "$tmp/v1.log" 4G 2 $(guest_args build/probe.efi) -append "csvsm.guest_vmpl=1"
summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$tmp/v1.log" | tail -n1)
tap_check "guest at VMPL1: the secrets page says so" grep -q 'guest_vmpl 1$' "$tmp/v1.log"
tap_check "guest at VMPL1: probe reports 0 failed ($summary)" grep -qE '^[0-9]+ passed, 0 failed' "$tmp/v1.log"
tap_check "guest at VMPL1: csvsm ended with success status (QEMU exit $QEMU_RC)" test "$QEMU_RC" -eq 1
