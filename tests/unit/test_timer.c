/*
 * Unit tests of csvsm's time arithmetic (include/base/cpu.h, used by
 * base/cpu.c timer_us): the TSC and the PIT it is calibrated against are
 * the host's (no SecureTSC), so a TSC below the boot reading, a huge
 * reading, a bogus calibration and readings that go back across vCPUs must
 * give sane, non-decreasing microseconds (issue 15 item 5).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <cmocka.h>

#include "base/cpu.h"

static void tsc_below_boot_is_zero(void **state)
{
	/* The old code computed (now - boot) * 1e6 / hz: a wrap to ~2^64. */
	assert_int_equal(timer_tsc_to_us(999, 1000, 1000000000ULL), 0);
	assert_int_equal(timer_tsc_to_us(0, ~0ULL, 1000000000ULL), 0);
	assert_int_equal(timer_tsc_to_us(5, 5, 0), 0);
}

static void no_overflow_in_the_product(void **state)
{
	/* 2^44 cycles at 3 GHz: about 98 minutes. (2^44 * 1e6 overflows 64 bits.) */
	uint64_t d = 1ULL << 44;
	assert_int_equal(timer_tsc_to_us(100 + d, 100, 3000000000ULL),
			 (uint64_t)((unsigned __int128)d * 1000000 / 3000000000ULL));
	assert_true(timer_tsc_to_us(100 + d, 100, 3000000000ULL) > 5800ULL * 1000000);
	assert_int_equal(timer_tsc_to_us(2000000000ULL, 0, 1000000000ULL), 2000000);
	/* The largest reading at the slowest believed clock still fits. */
	assert_true(timer_tsc_to_us(~0ULL, 0, TIMER_HZ_MIN) > 0);
}

static void implausible_calibration_not_believed(void **state)
{
	assert_int_equal(timer_hz_plausible(50), TIMER_HZ_DEFAULT);
	assert_int_equal(timer_hz_plausible(TIMER_HZ_MIN - 1), TIMER_HZ_DEFAULT);
	assert_int_equal(timer_hz_plausible(TIMER_HZ_MAX + 1), TIMER_HZ_DEFAULT);
	assert_int_equal(timer_hz_plausible(2450000000ULL), 2450000000ULL);
}

static void non_decreasing(void **state)
{
	uint64_t floor = 0;
	assert_int_equal(timer_monotonic(&floor, 10), 10);
	assert_int_equal(timer_monotonic(&floor, 7), 10); /* a vCPU whose TSC is behind */
	assert_int_equal(timer_monotonic(&floor, 12), 12);
	assert_int_equal(floor, 12);
}

static uint64_t shared_floor;
static void *racer(void *arg)
{
	uint64_t base = (uint64_t)(uintptr_t)arg, last = 0;
	for (uint64_t i = 0; i < 200000; i++) {
		uint64_t v = timer_monotonic(&shared_floor, base + i * 2);
		if (v < last)
			return (void *)1;
		last = v;
	}
	return NULL;
}

static void non_decreasing_across_threads(void **state)
{
	pthread_t t[2];
	void *r[2];
	pthread_create(&t[0], NULL, racer, (void *)(uintptr_t)0);
	pthread_create(&t[1], NULL, racer, (void *)(uintptr_t)1);
	pthread_join(t[0], &r[0]);
	pthread_join(t[1], &r[1]);
	assert_null(r[0]);
	assert_null(r[1]);
	assert_int_equal(shared_floor, 1 + 2 * 199999);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(tsc_below_boot_is_zero),
	    cmocka_unit_test(no_overflow_in_the_product),
	    cmocka_unit_test(implausible_calibration_not_believed),
	    cmocka_unit_test(non_decreasing),
	    cmocka_unit_test(non_decreasing_across_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
