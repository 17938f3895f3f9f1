/*
 * csvsm's GDT and each vCPU's 64-bit TSS, which holds the IST stacks its
 * exceptions run on (src/cpu.c; the vectors: include/csvsm/exception.h).
 */
#ifndef CSVSM_TSS_H
#define CSVSM_TSS_H

#include "base/percpu.h"
#include "base/types.h"

/* The boot GDT's selectors (src/boot.S), kept, then a TSS descriptor per vCPU. */
#define GDT_SEL_CODE64	0x08
#define GDT_SEL_DATA	0x10
#define GDT_SEL_CODE32	0x18
#define GDT_TSS_FIRST	4 /* descriptor index of vCPU 0's TSS; 16 bytes each */
#define GDT_SEL_TSS(id) ((uint16_t)((GDT_TSS_FIRST + 2 * (id)) * 8))

/* AMD APM vol. 2 §12.2.5, Figure 12-8 "Long Mode TSS Format". */
struct tss {
	uint32_t rsvd0;
	uint64_t rsp[3];
	uint64_t rsvd1;
	uint64_t ist[7]; /* IST1..IST7: ist[EXC_IST_x - 1] */
	uint64_t rsvd2;
	uint16_t rsvd3;
	uint16_t iomap_base;
} __packed;
_Static_assert(sizeof(struct tss) == 104, "APM vol. 2 Figure 12-8: 104-byte long-mode TSS");
_Static_assert(__builtin_offsetof(struct tss, ist) == 0x24, "APM vol. 2 Figure 12-8: IST1 at 0x24");

/* Every vCPU's TSS, by vCPU id (the SNP machine's tests read it, `nm`). */
extern struct tss cpu_tss[MAX_CPUS];

/*
 * An AP's IST stacks from the page pool, each above an unmapped guard page;
 * by the boot vCPU before it starts the AP. The boot vCPU's own are in
 * .bss (cpu_load_tr).
 */
void cpu_ist_alloc(struct percpu *cpu);
/*
 * This vCPU's TSS descriptor in csvsm's GDT, the GDT loaded and TR set:
 * before the vCPU's first exception can arrive through the IDT (its gates
 * name IST stacks). Once per vCPU: src/boot.S ap_entry64 for an AP (its
 * first CPUID, a #VC, comes before ap_main), cpu_init_self for the boot vCPU.
 */
void cpu_load_tr(struct percpu *cpu);

#endif
