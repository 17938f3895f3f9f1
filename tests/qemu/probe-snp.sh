#!/usr/bin/env bash
# The probe as an SEV-SNP guest application (issue 9, "OVMF-only"): trixie's
# SVSM-aware OVMF runs at VMPL2 as an SNP guest (CPUID page, #VC, its own
# GHCB, PVALIDATE through csvsm) and starts the probe, which finds SNP active
# and makes its calls through the firmware's registered GHCB. Passes when
# the probe reports no failure, says it ran as an SNP guest, csvsm served
# #VC events and the firmware's PVALIDATEs, and the VM ended with csvsm's
# success status.
set -u
cd "$(dirname "$0")/../.."
OVMF_FD=${SNP_OVMF_FD:-build/guests/OVMF.fd}
. tests/qemu/lib.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ ! -f "$OVMF_FD" ]; then tap_fail "$OVMF_FD exists (run 'make deps')"; exit 1; fi
QEMU_TIMEOUT=300

csvsm_qemu "$tmp/p.log" 4G 2 $(guest_args build/probe.efi)
summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$tmp/p.log" | tail -n1)
sed -n 's/^\(not ok\|ok\) /# probe: \1 /p' "$tmp/p.log"
tap_check "probe ran to the end as an SNP guest: $summary" test -n "$summary"
tap_check "probe reports 0 failed" grep -qE '^[0-9]+ passed, 0 failed' "$tmp/p.log"
npass=$(sed -n 's/^\([0-9]*\) passed.*/\1/p' <<<"$summary")
tap_check "probe passed at least 80 checks ($npass)" test "${npass:-0}" -ge 80
tap_check "the probe saw SEV-SNP active (SEV_STATUS 0x7) and used the firmware's GHCB" \
	grep -q '^# SEV-SNP guest: SEV_STATUS 0x7, the firmware.s GHCB at' "$tmp/p.log"
vc=$(grep '^csvsm: snp-view:' "$tmp/p.log" | tail -n1)
echo "# $vc"
tap_check "csvsm delivered #VC for CPUID, port I/O and MMIO" \
	grep -qE 'vc cpuid=[1-9][0-9]* ioio=[1-9][0-9]* msr=[0-9]+ mmio=[1-9]' <<<"$vc"
tap_check "OVMF probed for VMPL0 with RMPADJUST (emulated at its VMPL)" grep -qE 'rmpadjust=[1-9]' <<<"$vc"
pval=$(grep '^csvsm: pvalidate-entries:' "$tmp/p.log" | tail -n1)
echo "# $pval"
tap_check "OVMF's PVALIDATEs were served from the pre-accepted record" \
	test "$(( $(field preaccepted_4k "$pval") + $(field preaccepted_2m "$pval") ))" -gt 0
tap_check "csvsm ended with success status (QEMU exit $QEMU_RC)" test "$QEMU_RC" -eq 1
if grep -q 'FAULT\|PANIC' "$tmp/p.log"; then tap_fail "no csvsm fault or panic"; else tap_ok "no csvsm fault or panic"; fi
[ "$QEMU_RC" -eq 1 ] || tail -n 40 "$tmp/p.log" | sed 's/^/# /'
[ "$TAP_FAILS" -eq 0 ]
