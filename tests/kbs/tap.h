/*
 * TAP lines for tests/kbs's test programs (kbs-registry-test,
 * kbs-appraise-test), which tests/kbs/kbs.sh runs: "ok N - ...", and a last
 * line "P passed, F failed" (tap_done's return value is the exit status).
 */
#ifndef TESTS_KBS_TAP_H
#define TESTS_KBS_TAP_H

#include <stdarg.h>
#include <stdio.h>

static int tap_n, tap_failed;

static void tap(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3), unused));
static void tap(int ok, const char *fmt, ...)
{
	va_list ap;
	printf("%s %d - ", ok ? "ok" : "not ok", ++tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	tap_failed += !ok;
}

static int tap_done(void) __attribute__((unused));
static int tap_done(void)
{
	printf("%d passed, %d failed\n", tap_n - tap_failed, tap_failed);
	return tap_failed != 0;
}

#endif
