/* Per-vCPU data: identity, stack, GHCB, and the acceptance share. */
#ifndef BASE_PERCPU_H
#define BASE_PERCPU_H

#include "base/types.h"

#define MAX_CPUS 64

/* %gs:0 holds the vCPU's struct percpu once this MSR is set (0 before: an
 * AP's first instructions). AMD APM vol. 2 §4.5.3. */
#define MSR_GS_BASE 0xC0000101u

struct ghcb;

struct percpu {
	struct percpu *self; /* %gs:0 on the image */
	unsigned id;	     /* 0 = boot vCPU */
	uint32_t apic_id;
	struct ghcb *ghcb; /* this vCPU's GHCB page */
	gpa_t ghcb_gpa;
	vaddr_t stack_top;
	/* Tops of its IST stacks (src/cpu.c cpu_load_tr; 0: none), each
	 * IST_STACK_SIZE (src/entry.h): a terminating vCPU zeroes them. */
	vaddr_t ist_top[5];
	volatile uint32_t online; /* set by the vCPU itself once in 64-bit C code */
	volatile uint32_t go;	  /* set by the BSP to hand work to an AP */
	/* pre-acceptance work done by this vCPU */
	uint64_t accept_bytes;
	uint64_t accept_pvalidate_2m, accept_pvalidate_4k, accept_rmpadjust, accept_psc_calls;
	uint64_t accept_fallbacks;
};

extern struct percpu percpus[MAX_CPUS];
extern unsigned cpu_count;

struct percpu *this_cpu(void);

#endif
