/*
 * Per-vCPU set-up (timing, entropy and the per-CPU data are base services:
 * base/cpu.c). The Debian archives linked later read the
 * stack-protector canary at %fs:0x28 (glibc-abi-notes.md §3.3): every vCPU gets a TCB with a random
 * canary before any library code runs.
 */
#include "arch/x86/insn.h"
#include "base/console.h"
#include "csvsm/cpu.h"
#include "csvsm/exception.h"
#include "base/string.h"

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

void cpu_init_self(struct percpu *cpu)
{
	struct tcb *t = &tcbs[cpu->id];
	idt_load(); /* first: on snp the CPUID below is a #VC */
	cpu->self = cpu;
	wrmsr(MSR_GS_BASE, (uint64_t)(uintptr_t)cpu);
	t->self = t;
	if (!random_bytes(&t->canary, sizeof(t->canary)))
		panic("no entropy for the stack canary");
	t->canary &= ~0xFFULL; /* glibc keeps a zero low byte to stop string overruns */
	wrmsr(MSR_FS_BASE, (uint64_t)(uintptr_t)t);
}
