/*
 * Secondary vCPUs: the boot vCPU starts them through the platform (snp: a
 * VMSA and GHCB AP creation; the SNP machine: INIT-SIPI-SIPI),
 * each sets itself up and then waits for work. smp_run_on_all() runs a
 * function on every online vCPU (the boot vCPU included) and waits for all.
 */
#include "arch/x86/insn.h"
#include "base/console.h"
#include "csvsm/cpu.h"
#include "csvsm/tss.h"
#include "base/platform.h"
#include "mm/pgtable.h"
#include "mm/pool.h"

#include "src/entry.h" /* AP_STACK_SIZE, AP_STACK_GUARD */

static void (*volatile smp_work)(struct percpu *);
static volatile uint32_t smp_done;
uint32_t (*smp_apic_id_of)(unsigned i);

__noreturn void ap_main(struct percpu *cpu);

__noreturn void ap_main(struct percpu *cpu)
{
	cpu_init_self(cpu);
	__atomic_store_n(&cpu->online, 1, __ATOMIC_RELEASE);
	for (uint32_t seen = 0;;) {
		while (__atomic_load_n(&cpu->go, __ATOMIC_ACQUIRE) == seen)
			cpu_relax();
		seen = cpu->go;
		smp_work(cpu);
		__atomic_fetch_add(&smp_done, 1, __ATOMIC_RELEASE);
	}
}

unsigned smp_start_aps(unsigned wanted)
{
	if (wanted > MAX_CPUS)
		wanted = MAX_CPUS;
	cpu_count = 1;
	/* The boot vCPU's stack (src/boot.S), which the snp terminate zeroes. */
	extern uint8_t boot_stack[];
	percpus[0].stack_top = (vaddr_t)(uintptr_t)(boot_stack + BOOT_STACK_SIZE);
	for (unsigned i = 1; i < wanted; i++) {
		struct percpu *cpu = &percpus[i];
		cpu->id = i;
		/* QEMU numbers a single socket's APIC IDs 0..n-1; snp reads the MADT. */
		cpu->apic_id = smp_apic_id_of ? smp_apic_id_of(i) : i;
		/* Guard pages under each AP stack: the pool hands out pages in
		 * order, so without them an overflow would run into the previous
		 * vCPU's GHCB, shared with the host (issue 15 item 5). With them the
		 * overflow faults; the #PF cannot be pushed there either, and the
		 * #DF that follows arrives on the vCPU's #DF IST stack (APM vol. 2
		 * §8.2.9), which dumps and ends the VM: nothing leaks. */
		uint8_t *stack = pool_alloc(AP_STACK_GUARD + AP_STACK_SIZE, PAGE_SIZE);
		for (unsigned g = 0; g < AP_STACK_GUARD; g += PAGE_SIZE)
			if (pgtable_set_guard((vaddr_t)(uintptr_t)(stack + g)) != 0)
				panic("vCPU %u: no guard pages for its stack", i);
		cpu->stack_top = (vaddr_t)(uintptr_t)(stack + AP_STACK_GUARD + AP_STACK_SIZE);
		/* Its IST stacks, before it starts: it loads TR from its first
		 * instructions (src/boot.S ap_entry64). */
		cpu_ist_alloc(cpu);
		cpu->ghcb = pool_alloc(PAGE_SIZE, PAGE_SIZE);
		cpu->ghcb_gpa = (gpa_t)(uintptr_t)cpu->ghcb;
		if (platform->start_ap(cpu) != 0) {
			con_printf("csvsm: vCPU %u did not start; continuing with %u\n", i,
				   cpu_count);
			break;
		}
		uint64_t t0 = timer_us(), spins = 0;
		while (!__atomic_load_n(&cpu->online, __ATOMIC_ACQUIRE)) {
			/* 2 s of the host's TSC, or a bounded number of tries when
			 * the host's time stands still. */
			if (timer_us() - t0 > 2000000 || ++spins > 2000000000ULL) {
				con_printf("csvsm: vCPU %u did not come online in 2 s; continuing "
					   "with %u\n",
					   i, cpu_count);
				return cpu_count;
			}
			cpu_relax();
		}
		cpu_count++;
	}
	return cpu_count;
}

void smp_run_on_all(void (*fn)(struct percpu *))
{
	smp_work = fn;
	__atomic_store_n(&smp_done, 0, __ATOMIC_RELEASE);
	for (unsigned i = 1; i < cpu_count; i++)
		__atomic_fetch_add(&percpus[i].go, 1, __ATOMIC_RELEASE);
	fn(&percpus[0]);
	while (__atomic_load_n(&smp_done, __ATOMIC_ACQUIRE) != cpu_count - 1)
		cpu_relax();
}

void smp_dispatch_aps(void (*fn)(struct percpu *))
{
	smp_work = fn;
	for (unsigned i = 1; i < cpu_count; i++)
		__atomic_fetch_add(&percpus[i].go, 1, __ATOMIC_RELEASE);
}
