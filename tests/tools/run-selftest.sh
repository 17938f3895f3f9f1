#!/usr/bin/env bash
# tests/run.sh counts what it claims (issue 15 item 6): fake units in a
# temporary directory, each run through tests/run.sh alone, with its exit
# status and its summary line ("N passed, N failed, N skipped") checked:
#   a TAP skip ("ok 1 - x # SKIP", "1..0 # SKIP") is a skip, not a pass,
#   and fails the run unless ALLOW_SKIP=1; a unit that prints nothing and
#   exits 0 fails; a missing unit fails; a cmocka binary's skipped cases
#   (a real one, built here with cc and -lcmocka) are skips; a unit that
#   prints "ok" but exits non-zero fails; plain passes pass.
# The nested runs' output is shown as comments only, so that the TAP lines
# of the fakes are never counted by an outer tests/run.sh (and no description
# here holds a "#", which that runner would read as a directive). TAP.
set -u
cd "$(dirname "$0")/../.."
RUN=${RUN:-tests/run.sh} # RUN= names another runner (to show this test fails on a broken one)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0 fails=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
nok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $*"; }

# The fakes.
printf '#!/bin/sh\necho "ok 1 - x # SKIP no fixture"\n' >"$tmp/skip.sh"
printf '#!/bin/sh\necho "1..0 # SKIP nothing to test here"\n' >"$tmp/plan-skip.sh"
printf '#!/bin/sh\nexit 0\n' >"$tmp/empty.sh"
printf '#!/bin/sh\necho "ok 1 - a"\necho "ok 2 - b"\n' >"$tmp/pass.sh"
printf '#!/bin/sh\necho "ok 1 - a"\nexit 2\n' >"$tmp/ok-but-exit2.sh"
printf '#!/bin/sh\necho "ok 1 - a"\necho "not ok 2 - b"\nexit 1\n' >"$tmp/not-ok.sh"
cat >"$tmp/cmocka.c" <<'EOF'
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
static void passes(void **state) { assert_true(1); }
static void also_passes(void **state) { assert_int_equal(2, 2); }
static void skips(void **state) { skip(); }
int main(void)
{
	const struct CMUnitTest t[] = {cmocka_unit_test(passes), cmocka_unit_test(skips),
				       cmocka_unit_test(also_passes)};
	return cmocka_run_group_tests(t, NULL, NULL);
}
EOF
if ! cc -o "$tmp/test_cmocka" "$tmp/cmocka.c" -lcmocka 2>"$tmp/cc.err"; then
	sed 's/^/# cc: /' "$tmp/cc.err"
	nok "a cmocka test binary builds (cc ... -lcmocka)"
fi

# check "what" WANT_RC "WANT_SUMMARY" [ALLOW_SKIP value or -] UNIT...
check() {
	local what=$1 want_rc=$2 want=$3 allow=$4 out rc got
	shift 4
	if [ "$allow" = - ]; then
		out=$(env -u ALLOW_SKIP bash "$RUN" "$@" 2>&1)
	else
		out=$(ALLOW_SKIP=$allow bash "$RUN" "$@" 2>&1)
	fi
	rc=$?
	got=$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' <<<"$out" | tail -n1)
	if [ "$rc" -eq "$want_rc" ] && [ "$got" = "$want" ]; then
		ok "$what: exit $rc, '$got'"
	else
		nok "$what: want exit $want_rc and '$want', got exit $rc and '${got:-no summary}'"
		sed 's/^/#   /' <<<"$out"
	fi
}

check "a TAP 'ok ... SKIP' case is a skip and fails the run" 1 "0 passed, 0 failed, 1 skipped" - "$tmp/skip.sh"
check "... and passes with ALLOW_SKIP=1, still counted as a skip" 0 "0 passed, 0 failed, 1 skipped" 1 "$tmp/skip.sh"
check "ALLOW_SKIP=0 does not allow skips" 1 "0 passed, 0 failed, 1 skipped" 0 "$tmp/skip.sh"
check "a '1..0 SKIP' plan is a skip and fails the run" 1 "0 passed, 0 failed, 1 skipped" - "$tmp/plan-skip.sh"
check "a unit that prints nothing and exits 0 fails" 1 "0 passed, 1 failed, 0 skipped" - "$tmp/empty.sh"
check "... also with ALLOW_SKIP=1" 1 "0 passed, 1 failed, 0 skipped" 1 "$tmp/empty.sh"
check "a missing unit (a build artefact not built) fails" 1 "0 passed, 1 failed, 0 skipped" - "$tmp/not-built"
check "... also with ALLOW_SKIP=1" 1 "0 passed, 1 failed, 0 skipped" 1 "$tmp/not-built"
check "a unit printing 'ok' that exits non-zero fails" 1 "1 passed, 1 failed, 0 skipped" - "$tmp/ok-but-exit2.sh"
check "a 'not ok' case fails" 1 "1 passed, 1 failed, 0 skipped" - "$tmp/not-ok.sh"
check "plain TAP passes pass" 0 "2 passed, 0 failed, 0 skipped" - "$tmp/pass.sh"
if [ -x "$tmp/test_cmocka" ]; then
	"$tmp/test_cmocka" 2>&1 | sed 's/^/# cmocka: /'
	check "a cmocka binary's [  SKIPPED ] case is a skip and fails the run" 1 \
		"2 passed, 0 failed, 1 skipped" - "$tmp/test_cmocka"
	check "... and passes with ALLOW_SKIP=1" 0 "2 passed, 0 failed, 1 skipped" 1 "$tmp/test_cmocka"
fi
check "the counts add up over units; one missing unit fails the whole run" 1 \
	"2 passed, 1 failed, 0 skipped" 1 "$tmp/pass.sh" "$tmp/not-built"
check "one skip among passes fails the whole run" 1 "2 passed, 0 failed, 1 skipped" - \
	"$tmp/pass.sh" "$tmp/skip.sh"
echo "1..$n"
[ "$fails" -eq 0 ]
