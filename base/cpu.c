/*
 * Base CPU services every layer may use: the per-CPU data (GS points at the
 * vCPU's struct percpu), TSC time since boot and RDRAND/RDSEED entropy.
 */
#include "arch/x86/insn.h"
#include "base/cpu.h"
#include "base/string.h"

struct percpu percpus[MAX_CPUS];
unsigned cpu_count = 1;

struct percpu *this_cpu(void)
{
	return read_gs0();
}

/* ---- TSC timing, calibrated against PIT channel 2 ---- */
static uint64_t tsc_hz = TIMER_HZ_DEFAULT, tsc_boot, us_floor;

void timer_init(void)
{
	const uint32_t pit_hz = 1193182, ms = 20, count = pit_hz * ms / 1000;
	tsc_boot = rdtsc();
	outb(0x61, (uint8_t)((inb(0x61) & ~0x02) | 0x01));
	outb(0x43, 0xB0); /* channel 2, lobyte/hibyte, mode 0 */
	outb(0x42, (uint8_t)count);
	outb(0x42, (uint8_t)(count >> 8));
	uint64_t t0 = rdtsc();
	for (uint64_t spins = 0; !(inb(0x61) & 0x20); spins++)
		if (spins > 100000000ULL)
			return; /* no PIT: keep the 1 GHz default */
	uint64_t t1 = rdtsc();
	if (t1 > t0 && t1 - t0 <= ~0ULL / (1000 / ms))
		tsc_hz = timer_hz_plausible((t1 - t0) * (1000 / ms));
}

uint64_t timer_tsc_hz(void)
{
	return tsc_hz;
}
uint64_t timer_us(void)
{
	return timer_monotonic(&us_floor, timer_tsc_to_us(rdtsc(), tsc_boot, tsc_hz));
}

/* ---- entropy ---- */
bool random_available(void)
{
	struct cpuid_regs r;
	cpuid(1, &r);
	return r.ecx & (1u << 30);
}

static bool have_rdseed(void)
{
	struct cpuid_regs r;
	cpuid_count(7, 0, &r);
	return r.ebx & (1u << 18);
}

bool random_bytes(void *buf, size_t n)
{
	uint8_t *p = buf;
	bool seed = have_rdseed();
	if (!random_available())
		return false;
	while (n) {
		uint64_t v;
		int tries = 0;
		while (!(seed ? rdseed64(&v) : rdrand64(&v)))
			if (++tries > 100) /* the vendor's retry guidance is 10 for RDRAND */
				return false;
		size_t k = n < 8 ? n : 8;
		memcpy(p, &v, k);
		p += k;
		n -= k;
	}
	return true;
}
