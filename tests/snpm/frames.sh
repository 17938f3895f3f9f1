#!/usr/bin/env bash
# Frames apart from GPAs (issue 17 item 2, issue 15 finding 2 end to end):
# the SNP machine's RMP model is indexed by frame, and a hostile host
# (snpm.frame_swap=1) answers the guest firmware's first page-state change
# to private of memory that is already private and validated (memory csvsm
# pre-accepted, which OVMF asks for again before it validates it through
# csvsm) by RMPUPDATE of a fresh frame behind the GPA, keeping the old frame
# assigned and validated. If csvsm validated the GPA now, the GPA would have
# two validated frames and the host could switch between them (fork,
# rollback) with no #VC. csvsm must end the VM instead, before validating:
# the machine then counts one validated frame for the GPA (the old one).
# Checks: the attack ran (the machine's swap line, the guest's page-state
# change of that GPA), csvsm's tampering panic names it, the machine's
# frame count, the failure ending; bad option values are refused.
set -u
cd "$(dirname "$0")/../.."
. tests/qemu/lib.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
snpm_need build/probe.efi
QEMU_TIMEOUT=240

log=$tmp/s.log
# shellcheck disable=SC2046
snpm_qemu "$log" 2G 1 $(snpm_guest_args probe 2G 1 build/probe.efi) -append "snpm.frame_swap=1"
swap=$(grep -m1 '^snpm: hostile: frame swap: GPA ' "$log")
echo "# ${swap:-no swap line}"
gpa=$(sed -n 's/^snpm: hostile: frame swap: GPA \(0x[0-9a-f]*\) .*/\1/p' "$log" | head -n1)
tap_check "the attack ran: the host swapped the frame behind a validated GPA (${gpa:-none})" test -n "$gpa"
gpa=${gpa:-0x0}
pan=$(grep -m1 'host tampering: GPA ' "$log")
echo "# ${pan:-no tampering panic}"
pgpa=$(sed -n 's/.*host tampering: GPA \(0x[0-9a-f]*\) (+\(0x[0-9a-f]*\)).*/\1 \2/p' "$log" | head -n1)
set -- ${pgpa:-0x1 0x0}
tap_check "csvsm ended the VM for that GPA instead of validating it ($1 +$2 covers $gpa)" \
	test $(($1)) -le $((gpa)) -a $((gpa)) -lt $(($1 + $2))
# The panic comes after the swap, not from anything before it.
pline=$(grep -n -m1 'host tampering' "$log" | cut -d: -f1)
sline=$(grep -n -m1 'frame swap: GPA' "$log" | cut -d: -f1)
tap_check "the panic follows the swap in the log (lines ${sline:-none}, ${pline:-none})" \
	test "${pline:-0}" -gt "${sline:-0}"
tap_check "the GPA has one validated frame at the end (the old one): $(grep -m1 "^snpm: frames: GPA $gpa " "$log" | cut -c1-80)" \
	grep -q "^snpm: frames: GPA $gpa has 1 validated frame(s)$" "$log"
tap_check "no GPA was validated twice ($(grep -m1 '^snpm: frames: swapped=' "$log"))" \
	grep -q '^snpm: frames: swapped=1 validated-twice=0$' "$log"
tap_check "the VM ended with failure status (QEMU exit 3, got $QEMU_RC; last: '$(tail -n1 "$log" | cut -c1-60)')" \
	test "$QEMU_RC" -eq 3 -a "$(tail -n1 "$log")" = "snpm: end: failure"
[ "$QEMU_RC" -eq 3 ] || tail -n 20 "$log" | sed 's/^/# /'

for bad in 0 zz 41; do
	snpm_qemu "$tmp/b$bad.log" 2G 1 -append "snpm.frame_swap=$bad"
	tap_check "snpm.frame_swap=$bad refused with failure status and why (QEMU exit $QEMU_RC)" \
		test "$QEMU_RC" -eq 3 -a "$(grep -c 'bad snpm.frame_swap= value' "$tmp/b$bad.log")" -ge 1
done
[ "$TAP_FAILS" -eq 0 ]
