/* Base CPU services (base/cpu.c): per-CPU data, time since boot, entropy. */
#ifndef BASE_CPU_H
#define BASE_CPU_H

#include "base/percpu.h"
#include "base/types.h"

/*
 * TSC-based time since boot (calibrated against the PIT by timer_init).
 * Without SecureTSC both the TSC and the PIT are the host's: time is what
 * the host says, so it is only made safe to compute with (docs/vtpm.md,
 * "Time"): never negative when a TSC reads below the boot value (another
 * vCPU's offset, a host that sets it back), no overflow of the product,
 * non-decreasing across all vCPUs, and a calibration outside
 * [TIMER_HZ_MIN, TIMER_HZ_MAX] is not believed (1 GHz instead).
 */
void timer_init(void);
uint64_t timer_us(void);
uint64_t timer_tsc_hz(void);

#define TIMER_HZ_MIN	 100000000ULL	/* 100 MHz */
#define TIMER_HZ_MAX	 20000000000ULL /* 20 GHz */
#define TIMER_HZ_DEFAULT 1000000000ULL

/* Microseconds between TSC readings boot and now at hz: 0 when now < boot. */
static inline uint64_t timer_tsc_to_us(uint64_t now, uint64_t boot, uint64_t hz)
{
	if (now <= boot || !hz)
		return 0;
	unsigned __int128 us = (unsigned __int128)(now - boot) * 1000000U / hz;
	return us > ~0ULL ? ~0ULL : (uint64_t)us;
}

/* The calibration to use for a measured frequency. */
static inline uint64_t timer_hz_plausible(uint64_t hz)
{
	return hz >= TIMER_HZ_MIN && hz <= TIMER_HZ_MAX ? hz : TIMER_HZ_DEFAULT;
}

/* The later of a shared floor and now, which becomes the floor (all vCPUs). */
static inline uint64_t timer_monotonic(uint64_t *floor, uint64_t now)
{
	uint64_t prev = __atomic_load_n(floor, __ATOMIC_RELAXED);
	while (now > prev && !__atomic_compare_exchange_n(floor, &prev, now, true, __ATOMIC_RELAXED,
							  __ATOMIC_RELAXED))
		;
	return now > prev ? now : prev;
}

/* Entropy: RDRAND (RDSEED only where CPUID offers it). false = none available. */
bool random_available(void);
bool random_bytes(void *buf, size_t n);

#endif
