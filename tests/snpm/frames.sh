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
# Checks, for a 4K request and for a 2M request with 4K and with 2M
# backing (snpm.frame_swap_2m=1): the attack ran (the machine's swap line),
# csvsm found the frame (its PVALIDATE of the 4K page; for the 2M block, the
# RMP check of its own zeroing store, #VC 0x404: issue 36, csvsm serves the
# block from its record) and its tampering panic names the GPA, the
# machine's frame count, the failure ending; bad option values are refused.
set -u
cd "$(dirname "$0")/../.."
. tests/qemu/lib.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
snpm_need build/probe.efi
QEMU_TIMEOUT=240

# Three runs: the firmware's first re-validation of a pre-accepted page
# (a 4K entry: csvsm's PVALIDATE finds the new frame, host_swapped_page),
# and its first of a 2M block, with 4K RMP entries (the default backing) and
# with 2M entries (a hugepage host; the swap's PSMASH leaves 4K entries):
# csvsm serves the block from its record (issue 36), and the RMP check of its
# zeroing store meets the new frame in the middle of the block (#VC 0x404 to
# csvsm, src/vc.c), with no PVALIDATE that could validate it.
for run in "4k frame_swap pvalidate" "4k frame_swap_2m store" "2m frame_swap_2m store"; do
set -- $run
backing=$1 opt=$2 how=$3 tag="$1 $2"
log=$tmp/s-$backing-$opt.log
# shellcheck disable=SC2046
snpm_qemu "$log" 2G 1 $(snpm_guest_args probe 2G 1 build/probe.efi) -append "snpm.$opt=1 snpm.backing=$backing"
swap=$(grep -m1 '^snpm: hostile: frame swap: GPA ' "$log")
echo "# $tag: ${swap:-no swap line}"
gpa=$(sed -n 's/^snpm: hostile: frame swap: GPA \(0x[0-9a-f]*\) .*/\1/p' "$log" | head -n1)
tap_check "$tag: the attack ran: the host swapped the frame behind a validated GPA (${gpa:-none})" test -n "$gpa"
gpa=${gpa:-0x0}
pan=$(grep -m1 'host tampering: GPA ' "$log")
echo "# $tag: ${pan:-no tampering panic}"
pgpa=$(sed -n 's/.*host tampering: GPA \(0x[0-9a-f]*\) (+\(0x[0-9a-f]*\)).*/\1 \2/p' "$log" | head -n1)
set -- ${pgpa:-0x1 0x0}
tap_check "$tag: csvsm ended the VM for that GPA instead of validating it ($1 +$2 covers $gpa)" \
	test $(($1)) -le $((gpa)) -a $((gpa)) -lt $(($1 + $2))
if [ "$how" = store ]; then
	tap_check "$tag: the 2M block was served from the record: csvsm's zeroing store met the new frame (#VC 0x404 to csvsm at $gpa)" \
		grep -qE "^snpm: VMPL0 write at gpa ${gpa%???}[0-9a-f]{3} .*private page not validated: #VC 0x404 \(PAGE_NOT_VALIDATED\) to csvsm" "$log"
else
	tap_check "$tag: found by csvsm's PVALIDATE of the 4K page, which it rescinded again" \
		grep -q "host tampering: GPA $gpa (+0x1000), .*(the new frame rescinded again: done)" "$log"
fi
# The panic comes after the swap, not from anything before it.
pline=$(grep -n -m1 'host tampering' "$log" | cut -d: -f1)
sline=$(grep -n -m1 'frame swap: GPA' "$log" | cut -d: -f1)
tap_check "$tag: the panic follows the swap in the log (lines ${sline:-none}, ${pline:-none})" \
	test "${pline:-0}" -gt "${sline:-0}"
tap_check "$tag: the GPA has one validated frame at the end (the old one): $(grep -m1 "^snpm: frames: GPA $gpa " "$log" | cut -c1-80)" \
	grep -q "^snpm: frames: GPA $gpa has 1 validated frame(s)$" "$log"
tap_check "$tag: no GPA was validated twice ($(grep -m1 '^snpm: frames: swapped=' "$log"))" \
	grep -q '^snpm: frames: swapped=1 validated-twice=0$' "$log"
tap_check "$tag: the VM ended with failure status (QEMU exit 3, got $QEMU_RC; last: '$(tail -n1 "$log" | cut -c1-60)')" \
	test "$QEMU_RC" -eq 3 -a "$(tail -n1 "$log")" = "snpm: end: failure"
[ "$QEMU_RC" -eq 3 ] || tail -n 20 "$log" | sed 's/^/# /'
done

for bad in 0 zz 41; do
	snpm_qemu "$tmp/b$bad.log" 2G 1 -append "snpm.frame_swap=$bad"
	tap_check "snpm.frame_swap=$bad refused with failure status and why (QEMU exit $QEMU_RC)" \
		test "$QEMU_RC" -eq 3 -a "$(grep -c 'bad snpm.frame_swap= value' "$tmp/b$bad.log")" -ge 1
done
snpm_qemu "$tmp/b2m.log" 2G 1 -append "snpm.frame_swap_2m=0"
tap_check "snpm.frame_swap_2m=0 refused with failure status and why (QEMU exit $QEMU_RC)" \
	test "$QEMU_RC" -eq 3 -a "$(grep -c 'bad snpm.frame_swap_2m= value' "$tmp/b2m.log")" -ge 1
[ "$TAP_FAILS" -eq 0 ]
