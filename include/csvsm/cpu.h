/* CPU set-up, firmware-config and SMP helpers of the image (src/cpu.c, src/smp.c). */
#ifndef CSVSM_CPU_H
#define CSVSM_CPU_H

#include "base/cpu.h"
#include "base/types.h"
#include "base/percpu.h"

#define MSR_FS_BASE   0xC0000100u
#define MSR_GS_BASE   0xC0000101u
#define MSR_EFER      0xC0000080u
#define MSR_APIC_BASE 0x1Bu
#define EFER_SVME     (1ULL << 12)

/* Per-vCPU set-up run by each vCPU on itself: GS = percpu, FS = TCB, IDT. */
void cpu_init_self(struct percpu *cpu);

/* QEMU fw_cfg, port interface only (no DMA). */
bool fw_cfg_present(void);
uint16_t fw_cfg_read16(uint16_t key);
/* Finds a named file; returns its key and size. */
bool fw_cfg_find(const char *name, uint16_t *key, uint32_t *size);
void fw_cfg_read(uint16_t key, void *buf, uint32_t len);
/* Reads the named file into buf (at most max bytes; DMA when offered). false if absent/too big. */
/* Bulk read of a key (DMA when offered). */
void fw_cfg_read_key(uint16_t key, void *buf, uint32_t len);
bool fw_cfg_load_file(const char *name, void *buf, uint32_t max, uint32_t *size);

/* SMP bring-up (src/smp.c). */
unsigned smp_start_aps(unsigned wanted);
/* The APIC ID of vCPU i (snp: from the host's MADT); NULL: i (QEMU numbers 0..n-1). */
extern uint32_t (*smp_apic_id_of)(unsigned i);
void smp_run_on_all(void (*fn)(struct percpu *));
/* Hand fn to every AP without waiting (fn may never return). */
void smp_dispatch_aps(void (*fn)(struct percpu *));

#endif
