/* CPU set-up and SMP helpers of the image (src/cpu.c, src/smp.c). */
#ifndef CSVSM_CPU_H
#define CSVSM_CPU_H

#include "base/cpu.h"
#include "base/types.h"
#include "base/percpu.h"

#define MSR_FS_BASE   0xC0000100u
#define MSR_EFER      0xC0000080u
#define MSR_APIC_BASE 0x1Bu
#define EFER_SVME     (1ULL << 12)

/* Per-vCPU set-up run by each vCPU on itself: GS = percpu, FS = TCB, IDT. */
void cpu_init_self(struct percpu *cpu);

/* SMP bring-up (src/smp.c). */
unsigned smp_start_aps(unsigned wanted);
/* The APIC ID of vCPU i (snp: from the host's MADT); NULL: i (QEMU numbers 0..n-1). */
extern uint32_t (*smp_apic_id_of)(unsigned i);
void smp_run_on_all(void (*fn)(struct percpu *));
/* Hand fn to every AP without waiting (fn may never return). */
void smp_dispatch_aps(void (*fn)(struct percpu *));

#endif
