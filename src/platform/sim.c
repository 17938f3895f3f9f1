/*
 * The sim platform: SEV-SNP simulated on plain x86 under QEMU TCG.
 * PVALIDATE/RMPADJUST are the software RMP model (mm/rmp.c), the hypervisor
 * side of the GHCB is a software model (src/platform/sim_hv.c), APs start by
 * INIT-SIPI-SIPI into a real-mode trampoline, and the VM ends through QEMU's
 * isa-debug-exit device (exit status 1 = success, 3 = failure).
 * Nothing here weakens a check: the model returns the hardware's codes.
 */
#include "arch/x86/insn.h"
#include "csvsm/console.h"
#include "csvsm/cpu.h"
#include "csvsm/platform.h"
#include "csvsm/sim_hv.h"
#include "csvsm/string.h"
#include "mm/rmp.h"

#define TRAMPOLINE_BASE 0x8000
#define LAPIC_ICR_LO    0x300
#define LAPIC_ICR_HI    0x310
#define ICR_INIT        0x00004500u /* INIT, level assert, edge */
#define ICR_SIPI        0x00004600u /* start-up */
#define ICR_BUSY        (1u << 12)
#define DEBUG_EXIT_PORT 0xF4

extern const uint8_t tramp_start[], tramp_end[], tramp_cr3[], tramp_stack[], tramp_arg[];

static int sim_pvalidate(vaddr_t va, unsigned size, bool validate, bool *unchanged)
{
	/* csvsm identity-maps memory, so the virtual address is the GPA. */
	return rmp_pvalidate((gpa_t)va, size, validate, unchanged);
}

static int sim_rmpadjust(vaddr_t va, unsigned size, uint64_t attrs)
{
	return rmp_adjust((gpa_t)va, size, attrs);
}

static uint64_t sim_ghcb_msr_call(uint64_t request) { return sim_hv_msr_protocol(request); }

static void sim_ghcb_call(struct percpu *cpu, struct ghcb *ghcb) { sim_hv_ghcb_exit(cpu, ghcb); }

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
static int sim_start_ap(struct percpu *cpu)
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
void sim_trampoline_scrub(void)
{
	memzero_explicit((void *)(uintptr_t)TRAMPOLINE_BASE, (size_t)(tramp_end - tramp_start));
}

static __noreturn void sim_terminate(bool success, unsigned reason_set, unsigned reason_code)
{
	if (!success)
		con_printf("csvsm: terminating with failure (reason set %u code 0x%x)\n", reason_set,
			   reason_code);
	/* QEMU exits with (value << 1) | 1: 0 -> 1 (success), 1 -> 3 (failure). */
	outl(DEBUG_EXIT_PORT, success ? 0 : 1);
	for (;;) {
		irq_disable();
		cpu_halt();
	}
}

const struct platform_ops platform_sim = {
	.name = "sim",
	.pvalidate = sim_pvalidate,
	.rmpadjust = sim_rmpadjust,
	.ghcb_msr_call = sim_ghcb_msr_call,
	.ghcb_call = sim_ghcb_call,
	.start_ap = sim_start_ap,
	.terminate = sim_terminate,
};
