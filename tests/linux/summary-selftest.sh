#!/usr/bin/env bash
# Self-test of the guest summary's rule (issue 34 item 7) without a boot:
#   - /init's own TAP counting (the marked part of tests/linux/init, run
#     here under the host's sh) counts a skip apart, never as a pass;
#   - tests/linux/linux.sh's checks of that summary (tests/linux/summary.sh)
#     turn each guest skip into a TAP skip and fail the run on one unless
#     ALLOW_SKIP=1, and fail a summary that counts a skip as a pass (the
#     old /init);
#   - tests/run.sh, given those lines, counts the skip as a skip and fails
#     unless ALLOW_SKIP=1: linux.sh's verdict and run.sh's agree.
# The inner checks' TAP lines are captured, never printed as this script's.
set -u
cd "$(dirname "$0")/../.."
. tests/qemu/lib.sh
. tests/linux/summary.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# 1. /init's counting, as the guest runs it (busybox sh there; POSIX sh here).
sed -n '/^# --- TAP counting/,/^# --- end of TAP counting/p' tests/linux/init >"$tmp/count.sh"
tap_check "the TAP counting part of /init found ($(grep -c '()' "$tmp/count.sh") functions)" \
	grep -q '^tap_summary()' "$tmp/count.sh"
sh -c ". '$tmp/count.sh'; n=0 pass=0 fail=0 skipped=0
	ok snp 'an ok check'; skip ram 'no csvsm_mem_kib= given'; nok vtpm 'a failed check'; ok vmpl 'another'
	tap_summary" >"$tmp/guest.log" 2>&1
sum=$(grep '^linux-guest: ' "$tmp/guest.log")
tap_check "/init counts 2 ok, 1 not ok and 1 skip as '2 passed, 1 failed, 1 skipped' (got '$sum')" \
	test "$sum" = "linux-guest: 2 passed, 1 failed, 1 skipped"
tap_check "/init prints its skip as a TAP skip ($(grep -c '# SKIP' "$tmp/guest.log") line)" \
	grep -qE '^ok 2 - ram: # SKIP no csvsm_mem_kib= given$' "$tmp/guest.log"

# 2. linux.sh's checks on a guest that skipped one check and failed none.
{
	echo "ok 1 - snp: an ok check"
	echo "ok 2 - ram: # SKIP no csvsm_mem_kib= given"
	echo "1..2"
	echo "linux-guest: 1 passed, 0 failed, 1 skipped"
} >"$tmp/skip.log"
inner() { # inner LOG SUMMARY [ALLOW_SKIP]: the checks' TAP lines, in a subshell
	(TAP_N=0 TAP_FAILS=0 ALLOW_SKIP=${3:-0} guest_summary_checks "$1" "$2")
}
inner "$tmp/skip.log" "linux-guest: 1 passed, 0 failed, 1 skipped" >"$tmp/a.tap"
inner "$tmp/skip.log" "linux-guest: 1 passed, 0 failed, 1 skipped" 1 >"$tmp/b.tap"
sed 's/^/#   /' "$tmp/a.tap"
tap_check "a guest skip: one TAP skip line and one failure without ALLOW_SKIP ($(grep -ciE '^ok .*# *skip' "$tmp/a.tap") skip, $(grep -c '^not ok' "$tmp/a.tap") failure)" \
	test "$(grep -ciE '^ok .*# *skip' "$tmp/a.tap")" = 1 -a "$(grep -c '^not ok' "$tmp/a.tap")" = 1
tap_check "a guest skip with ALLOW_SKIP=1: the TAP skip line, no failure ($(grep -c '^not ok' "$tmp/b.tap") failures)" \
	test "$(grep -ciE '^ok .*# *skip' "$tmp/b.tap")" = 1 -a "$(grep -c '^not ok' "$tmp/b.tap")" = 0
# The old /init counted the skip as a pass: "2 passed, 0 failed".
inner "$tmp/skip.log" "linux-guest: 2 passed, 0 failed, 0 skipped" 1 >"$tmp/c.tap"
tap_check "a summary that counts a skip as a pass fails the check, even with ALLOW_SKIP=1" \
	grep -q "^not ok [0-9]* - /init's summary counts its TAP lines" "$tmp/c.tap"
# A guest without skips: no skip line, no failure.
grep -v 'SKIP' "$tmp/skip.log" | sed 's/1 passed, 0 failed, 1 skipped/1 passed, 0 failed, 0 skipped/' >"$tmp/clean.log"
inner "$tmp/clean.log" "linux-guest: 1 passed, 0 failed, 0 skipped" >"$tmp/d.tap"
tap_check "a guest without skips: all ok ($(grep -c '^ok' "$tmp/d.tap") ok, $(grep -c '^not ok' "$tmp/d.tap") not ok)" \
	test "$(grep -c '^not ok' "$tmp/d.tap")" = 0 -a "$(grep -ciE '# *skip' "$tmp/d.tap")" = 0

# 3. tests/run.sh on those lines: the same verdicts.
printf 'cat %q\n' "$tmp/b.tap" >"$tmp/unit.sh"
ALLOW_SKIP=0 bash tests/run.sh "$tmp/unit.sh" >"$tmp/r0.out" 2>&1
r0=$?
ALLOW_SKIP=1 bash tests/run.sh "$tmp/unit.sh" >"$tmp/r1.out" 2>&1
r1=$?
s0=$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$tmp/r0.out")
s1=$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$tmp/r1.out")
tap_check "tests/run.sh counts the guest skip as a skip and fails without ALLOW_SKIP ('$s0', status $r0)" \
	test "$s0" = "1 passed, 0 failed, 1 skipped" -a "$r0" -ne 0
tap_check "... and passes with ALLOW_SKIP=1 ('$s1', status $r1)" \
	test "$s1" = "1 passed, 0 failed, 1 skipped" -a "$r1" -eq 0
echo "$((TAP_N - TAP_FAILS)) passed, $TAP_FAILS failed"
[ "$TAP_FAILS" -eq 0 ]
