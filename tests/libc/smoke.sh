#!/usr/bin/env bash
# Boots build/libc-smoke.elf (tests/libc/smoke_main.c) under QEMU TCG and
# checks its serial log: the glibc-ABI layer with Debian's libtpms.a,
# libcrypto.a and libmbedcrypto.a (manufacture, Startup, GetRandom,
# PCR_Read/Extend, restart from NV, mbedTLS SHA-256). Prints TAP lines.
# QEMU's isa-debug-exit status is (code << 1) | 1: 1 = pass, 3 = a check
# failed, 5 = panic.
set -u
cd "$(dirname "$0")/../.."
ELF=build/libc-smoke.elf
TIMEOUT=${SMOKE_TIMEOUT:-60}
n=0
tap() { n=$((n + 1)); if [ "$1" = ok ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fi; }

if ! make -s "$ELF" >/dev/null; then
	echo "not ok 1 - libc-smoke: build failed"
	exit 1
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
start=$(date +%s.%N)
timeout "$TIMEOUT" qemu-system-x86_64 -machine q35 -accel tcg -cpu EPYC -m 2G -nodefaults \
	-net none -display none -serial "file:$log" -no-reboot \
	-device isa-debug-exit,iobase=0xf4,iosize=0x04 -kernel "$ELF" 2>/dev/null
rc=$?
wall=$(echo "$(date +%s.%N) - $start" | bc 2>/dev/null || echo "?")
tr -d '\r' <"$log" | sed 's/^/# /'
cp "$log" "$log.pass"
trap 'rm -f "$log" "$log.pass"' EXIT

# One TAP line per check the image made, then the overall verdict.
while IFS= read -r line; do
	case "$line" in
	"smoke: ok   "*) tap ok "libc-smoke: ${line#smoke: ok   }" ;;
	"smoke: FAIL "*) tap fail "libc-smoke: ${line#smoke: FAIL }" ;;
	esac
done < <(tr -d '\r' <"$log")

if grep -q "PANIC" "$log"; then
	tap fail "libc-smoke: panic: $(tr -d '\r' <"$log" | grep -A1 PANIC | tail -1)"
fi
if [ "$rc" -eq 124 ]; then
	tap fail "libc-smoke: timed out after ${TIMEOUT}s"
elif [ "$rc" -eq 1 ] && grep -q "^smoke: PASSED" "$log"; then
	tap ok "libc-smoke: image passed, QEMU exit status 1, ${wall}s wall"
else
	tap fail "libc-smoke: QEMU exit status $rc (1 = pass, 3 = check failed, 5 = panic)"
fi
grep -q "^smoke: ok   TPMLIB_MainInit (manufacture)" "$log" ||
	tap fail "libc-smoke: the TPM was never manufactured"
grep -q "^smoke: FAIL" "$log" && fail=1
# Library output (issue 34 item 5, smoke_main.c test_library_output): the
# format text and constants, byte counts for the rest, never the secret.
lib_out() { # description, then a command
	local d=$1
	shift
	if "$@"; then tap ok "libc-smoke: library output: $d"; else tap fail "libc-smoke: library output: $d"; fail=1; fi
}
clean=$(tr -d '\r' <"$log")
lib_out "printf shows its format text, unexpanded" grep -qxF 'smoke: lib-output: printf %s %d' <<<"$clean"
lib_out "fprintf the same" grep -qxF 'smoke: lib-output: fprintf %s' <<<"$clean"
lib_out "write and fputs of memory show only a count ($(grep -c 'bytes of library output not shown' <<<"$clean") lines)" \
	test "$(grep -cE '^\[libc: 27 bytes of library output not shown\]' <<<"$clean")" -ge 2 # "SMOKE" "SECRET" + 16 hex digits
lib_out "puts of a constant shows it" grep -qxF 'smoke: lib-output: a constant line' <<<"$clean"
lib_out "perror of memory shows a placeholder" grep -q '^(a string from memory: not shown): ' <<<"$clean"
lib_out "the secret never reaches the console ($(grep -c SMOKESECRET <<<"$clean") lines hold it)" \
	bash -c '! grep -q SMOKESECRET "$1"' _ "$log"

# Negative boots: the layer must stop the image, not carry on.
#   rand: rand() outside _plat__GetEntropy(0)'s srand+2 pattern (weak-entropy fallback)
#   double-free: heap misuse
for mode in rand double-free; do
	timeout "$TIMEOUT" qemu-system-x86_64 -machine q35 -accel tcg -cpu EPYC -m 2G -nodefaults \
		-net none -display none -serial "file:$log" -no-reboot \
		-device isa-debug-exit,iobase=0xf4,iosize=0x04 -kernel "$ELF" -append "$mode" 2>/dev/null
	mrc=$?
	why=$(tr -d '\r' <"$log" | grep -o 'PANIC.*' | head -1)
	if [ "$mrc" -eq 5 ] && [ -n "$why" ]; then
		tap ok "libc-smoke ($mode): panics as required: ${why#PANIC on vCPU 0: }"
	else
		tap fail "libc-smoke ($mode): expected a panic (QEMU status 5), got status $mrc"
		tr -d '\r' <"$log" | sed 's/^/# /'
		fail=1
	fi
done
[ "${fail:-0}" -eq 0 ] && [ "$rc" -eq 1 ] && grep -q "^smoke: PASSED" "$log.pass"
