/*
 * Per-vCPU set-up (timing, entropy and the per-CPU data are base services:
 * base/cpu.c). The Debian archives linked later read the
 * stack-protector canary at %fs:0x28 (glibc-abi-notes.md §3.3): every vCPU gets a TCB with a random
 * canary before any library code runs. Each vCPU also gets a TSS whose IST
 * stacks its NMI, #DF, #MC, #HV and #VC arrive on (include/csvsm/exception.h),
 * loaded before its IDT can deliver one.
 */
#include "arch/x86/insn.h"
#include "base/console.h"
#include "csvsm/cpu.h"
#include "csvsm/exception.h"
#include "csvsm/tss.h"
#include "base/string.h"
#include "mm/pgtable.h"
#include "mm/pool.h"
#include "src/entry.h" /* IST_STACK_SIZE, IST_STACK_GUARD */

struct tcb {
	struct tcb *self; /* %fs:0 */
	uint64_t rsvd[4];
	uint64_t canary; /* %fs:0x28 */
	uint64_t guard;	 /* %fs:0x30 */
	uint64_t pad[9];
};
_Static_assert(__builtin_offsetof(struct tcb, canary) == 0x28,
	       "glibc x86_64 TCB: canary at fs:0x28");
static struct tcb tcbs[MAX_CPUS];

struct tss cpu_tss[MAX_CPUS] __aligned(16);
static bool tr_loaded[MAX_CPUS];

/*
 * csvsm's GDT: src/boot.S's boot GDT (64-bit code, data, 32-bit code: the
 * same selectors, so CS and the data segments need no reload), then one
 * 16-byte TSS descriptor per vCPU (LTR marks it busy, so each vCPU needs
 * its own). The APs' GDTR is this table too: snp_prepare_aps copies the
 * boot vCPU's after cpu_init_self.
 */
static uint64_t gdt[GDT_TSS_FIRST + 2 * MAX_CPUS] __aligned(16) = {
    0, 0x00af9a000000ffffULL, 0x00cf92000000ffffULL, 0x00cf9a000000ffffULL};

#define IST_SLOT (IST_STACK_GUARD + IST_STACK_SIZE)
/* The boot vCPU's IST stacks, each above its guard: it sets them up before
 * it could allocate (the SNP machine and the libc smoke test load their IDT
 * before their page pool exists). */
static uint8_t boot_ist[EXC_IST_COUNT * IST_SLOT] __aligned(PAGE_SIZE);

static void ist_set(unsigned id, uint8_t *area, bool guard)
{
	for (unsigned k = 0; k < EXC_IST_COUNT; k++) {
		uint8_t *slot = area + (size_t)k * IST_SLOT;
		for (unsigned g = 0; guard && g < IST_STACK_GUARD; g += PAGE_SIZE)
			if (pgtable_set_guard((vaddr_t)(uintptr_t)(slot + g)) != 0)
				panic("vCPU %u: no guard page under IST stack %u", id, k + 1);
		/* The top: page-aligned, so the CPU's 16-byte alignment keeps it. */
		cpu_tss[id].ist[k] = (uint64_t)(uintptr_t)(slot + IST_SLOT);
	}
}

void cpu_ist_alloc(struct percpu *cpu)
{
	if (cpu->id >= MAX_CPUS)
		panic("vCPU %u: no TSS", cpu->id);
	ist_set(cpu->id, pool_alloc(EXC_IST_COUNT * IST_SLOT, PAGE_SIZE), true);
}

void cpu_load_tr(struct percpu *cpu)
{
	unsigned id = cpu->id;
	if (id >= MAX_CPUS)
		panic("vCPU %u: no TSS", id);
	struct tss *t = &cpu_tss[id];
	if (!t->ist[0]) {
		if (id != 0)
			panic("vCPU %u has no IST stacks", id);
		/* Guard pages need csvsm's page tables and pool: csvsm's boot
		 * vCPU has both by now (snp_boot_main step 2); the PVH programs
		 * built from these objects do not, and run without them. */
		ist_set(0, boot_ist, pool_size() != 0);
	}
	t->iomap_base = sizeof(*t); /* no I/O permission bitmap */
	_Static_assert(ARRAY_SIZE(cpu->ist_top) == EXC_IST_COUNT, "one top per IST stack");
	for (unsigned k = 0; k < EXC_IST_COUNT; k++)
		cpu->ist_top[k] = (vaddr_t)t->ist[k];
	/* APM vol. 2 §4.8.3, Figure 4-22 (64-bit TSS descriptor) and Table 4-6:
	 * type 9 (available 64-bit TSS), present, DPL 0. */
	uint64_t base = (uint64_t)(uintptr_t)t, limit = sizeof(*t) - 1;
	gdt[GDT_TSS_FIRST + 2 * id] = (limit & 0xFFFF) | (base & 0xFFFFFF) << 16 | 0x89ULL << 40 |
				      ((limit >> 16) & 0xF) << 48 | ((base >> 24) & 0xFF) << 56;
	gdt[GDT_TSS_FIRST + 2 * id + 1] = base >> 32;
	struct desc_ptr d = {.limit = sizeof(gdt) - 1, .base = (uint64_t)(uintptr_t)gdt};
	lgdt(&d);
	ltr(GDT_SEL_TSS(id));
	tr_loaded[id] = true;
}

void cpu_init_self(struct percpu *cpu)
{
	struct tcb *t = &tcbs[cpu->id];
	/* TR before the IDT: its gates name IST stacks. An AP loaded it in
	 * src/boot.S ap_entry64 (LTR again would #GP on the busy descriptor). */
	if (cpu->id >= MAX_CPUS || !tr_loaded[cpu->id])
		cpu_load_tr(cpu);
	idt_load(); /* then: on snp the CPUID below is a #VC */
	cpu->self = cpu;
	wrmsr(MSR_GS_BASE, (uint64_t)(uintptr_t)cpu);
	t->self = t;
	if (!random_bytes(&t->canary, sizeof(t->canary)))
		panic("no entropy for the stack canary");
	t->canary &= ~0xFFULL; /* glibc keeps a zero low byte to stop string overruns */
	wrmsr(MSR_FS_BASE, (uint64_t)(uintptr_t)t);
}
