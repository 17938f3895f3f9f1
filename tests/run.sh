#!/usr/bin/env bash
# Runs every test given (cmocka binaries and test scripts), counts the cases
# and ends with the line "N passed, N failed". cmocka binaries report their
# own case counts; scripts print TAP lines ("ok ..." / "not ok ...").
set -u
pass=0; fail=0; failed_units=()
for t in "$@"; do
	echo "=== $t"
	log=$(mktemp)
	if [[ "$t" == *.sh ]]; then bash "$t" >"$log" 2>&1; rc=$?; else "$t" >"$log" 2>&1; rc=$?; fi
	cat "$log"
	p=$(grep -oE '^\[  PASSED  \] [0-9]+' "$log" | awk '{s+=$4} END{print s+0}')
	f=$(grep -oE '^\[  FAILED  \] [0-9]+' "$log" | awk '{s+=$4} END{print s+0}')
	p=$((p + $(grep -cE '^ok ' "$log")))
	f=$((f + $(grep -cE '^not ok ' "$log")))
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
	if [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then
		# a unit that reported nothing counts by its exit status
		if [ "$rc" -eq 0 ]; then p=1; else f=1; fi
	fi
	[ "$f" -ne 0 ] && failed_units+=("$t")
	pass=$((pass + p)); fail=$((fail + f))
	rm -f "$log"
done
for u in "${failed_units[@]:-}"; do [ -n "$u" ] && echo "FAILED: $u"; done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
