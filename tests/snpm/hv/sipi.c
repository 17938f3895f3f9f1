/*
 * The SNP machine's own secondary CPUs: INIT-SIPI-SIPI into the real-mode
 * trampoline of tests/snpm/model/pvh_entry.S copied below 1 MiB, which
 * enters ap_entry64 with this CPU's stack and percpu.
 */
#include "arch/x86/insn.h"
#include "csvsm/cpu.h"
#include "base/percpu.h"
#include "base/string.h"
#include "sipi.h"

#define TRAMPOLINE_BASE 0x8000
#define LAPIC_ICR_LO	0x300
#define LAPIC_ICR_HI	0x310
#define ICR_INIT	0x00004500u /* INIT, level assert, edge */
#define ICR_SIPI	0x00004600u /* start-up */
#define ICR_BUSY	(1u << 12)

extern const uint8_t tramp_start[], tramp_end[], tramp_cr3[], tramp_stack[], tramp_arg[];

static volatile uint32_t *lapic(unsigned reg)
{
	uint64_t base = rdmsr(MSR_APIC_BASE) & ~0xFFFULL;
	return (volatile uint32_t *)(uintptr_t)(base + reg);
}

static void lapic_icr(uint32_t apic_id, uint32_t cmd)
{
	*lapic(LAPIC_ICR_HI) = apic_id << 24;
	*lapic(LAPIC_ICR_LO) = cmd;
	for (int i = 0; i < 1000000 && (*lapic(LAPIC_ICR_LO) & ICR_BUSY); i++)
		cpu_relax();
}

static void delay_us(uint64_t us)
{
	uint64_t t0 = timer_us();
	while (timer_us() - t0 < us)
		cpu_relax();
}

/* Intel SDM vol. 3 §8.4.4.1 INIT-SIPI-SIPI; the vector is the page number. */
int sipi_start_ap(struct percpu *cpu)
{
	size_t len = (size_t)(tramp_end - tramp_start);
	uint8_t *t = (uint8_t *)(uintptr_t)TRAMPOLINE_BASE;
	memcpy(t, tramp_start, len);
	*(uint64_t *)(t + (tramp_cr3 - tramp_start)) = read_cr3();
	*(uint64_t *)(t + (tramp_stack - tramp_start)) = cpu->stack_top;
	*(uint64_t *)(t + (tramp_arg - tramp_start)) = (uint64_t)(uintptr_t)cpu;
	lapic_icr(cpu->apic_id, ICR_INIT);
	delay_us(10000);
	for (int i = 0; i < 2; i++) {
		lapic_icr(cpu->apic_id, ICR_SIPI | (TRAMPOLINE_BASE >> 12));
		delay_us(200);
	}
	return 0;
}

/* Called once every AP is up: the trampoline page is guest memory. */
void sipi_trampoline_scrub(void)
{
	memzero_explicit((void *)(uintptr_t)TRAMPOLINE_BASE, (size_t)(tramp_end - tramp_start));
}
