/* Base CPU services (base/cpu.c): per-CPU data, time since boot, entropy. */
#ifndef BASE_CPU_H
#define BASE_CPU_H

#include "base/percpu.h"
#include "base/types.h"

/* TSC-based time since boot (calibrated against the PIT by timer_init). */
void timer_init(void);
uint64_t timer_us(void);
uint64_t timer_tsc_hz(void);

/* Entropy: RDRAND (RDSEED only where CPUID offers it). false = none available. */
bool random_available(void);
bool random_bytes(void *buf, size_t n);

#endif
