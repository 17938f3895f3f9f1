# /init's summary by tests/run.sh's rule (issue 34 item 7), for
# tests/linux/linux.sh (sourced after tests/qemu/lib.sh, whose TAP helpers it
# uses) and its self-test (tests/linux/summary-selftest.sh).
#
# guest_summary_checks LOG SUMMARY: /init's summary line must count its own
# TAP lines in LOG, each skip apart and never as a pass; each guest skip is
# a TAP skip line here (tests/run.sh counts it as a skip), and a skip fails
# the run unless ALLOW_SKIP=1, as in tests/run.sh.
guest_summary_checks() {
	local log=$1 summary=$2 g_ok g_fail g_skip l
	g_skip=$(grep -ciE '^ok [0-9]+ - .*# *skip' "$log")
	g_ok=$(($(grep -cE '^ok [0-9]+ - ' "$log") - g_skip))
	g_fail=$(grep -cE '^not ok [0-9]+ - ' "$log")
	tap_check "/init's summary counts its TAP lines: $g_ok ok, $g_fail not ok, $g_skip skips ('${summary:-none}')" \
		test "$summary" = "linux-guest: $g_ok passed, $g_fail failed, $g_skip skipped"
	while IFS= read -r l; do
		TAP_N=$((TAP_N + 1))
		echo "ok $TAP_N - guest check skipped: ${l#ok * - } # SKIP"
	done < <(grep -iE '^ok [0-9]+ - .*# *skip' "$log")
	if [ "$g_skip" -ne 0 ] && [ "${ALLOW_SKIP:-0}" != 1 ]; then
		tap_fail "the guest skipped $g_skip check(s): a skip fails the run unless ALLOW_SKIP=1 (tests/run.sh)"
	fi
}
