/*
 * sim platform internals: csvsm as an AMD-SVM host for the guest firmware
 * (sim_svm.c: VMCB, nested page tables, exit loop; sim_io.c: the guest's
 * device view). Not used by the snp platform.
 */
#ifndef SIM_SVM_H
#define SIM_SVM_H

#include "arch/x86/svm.h"
#include "csvsm/svsm_call.h"

struct memmap;

struct svm_vcpu {
	struct guest_gprs gprs; /* 0: swapped by svm_entry.S */
	uint64_t vmcb_pa;	/* 112 */
	uint64_t host_save_pa;	/* 120 */
	uint8_t *xsave;		/* 128: guest x87/SSE/AVX state, switched by svm_entry.S */
	struct vmcb *vmcb;
	uint64_t ghcb_msr; /* the guest's view of MSR 0xC0010130 */
	gpa_t ghcb_gpa;	   /* registered through the MSR protocol, 0 = none */
	struct guest_vcpu gv;
	uint64_t exits, io_exits, msr_exits, npf_exits, vmgexits, svsm_calls;
	/* TLB shootdown (sim_flush_guest_tlb): set while in guest mode, and the
	 * flush generation it entered with (it flushed everything older). */
	volatile uint32_t in_guest;
	volatile uint64_t entry_gen;
	uint64_t seen_gen;
};
_Static_assert(offsetof(struct svm_vcpu, gprs) == 0, "svm_entry.S V_GPRS");
_Static_assert(offsetof(struct svm_vcpu, vmcb_pa) == 112, "svm_entry.S V_VMCB_PA");
_Static_assert(offsetof(struct svm_vcpu, host_save_pa) == 120, "svm_entry.S V_HOST_PA");
_Static_assert(offsetof(struct svm_vcpu, xsave) == 128, "svm_entry.S V_XSAVE");

void svm_vmrun(struct svm_vcpu *v);

/* Guest device view (sim_io.c). */
struct sim_io_config {
	const uint8_t *probe; /* the guest's kernel (the probe), or NULL */
	uint32_t probe_size;
	const struct memmap *mm;
};
void sim_io_init(const struct sim_io_config *cfg);
/* Emulate one port access; *val in/out. Returns false when the guest must stop. */
bool sim_io_port(uint16_t port, unsigned size, bool in, uint32_t *val);
/* Emulate one guest MMIO access outside its RAM (default deny); *val in/out. */
bool sim_mmio(gpa_t gpa, unsigned size, bool write, uint64_t *val);
/* The ECAM window the guest's configuration accesses go through (0: none). */
gpa_t sim_io_ecam_base(void);
/* The guest asked to power off / reset (sim_io.c sets it, the loop ends the VM). */
extern volatile int sim_guest_power_event; /* 0 none, 1 shutdown, 2 reset */

/* Nested page tables from the RMP model (sim_svm.c). */
void sim_npt_sync(gpa_t gpa, uint64_t size);
/* platform_ops.flush_guest_tlb: every other guest vCPU leaves guest mode and
 * flushes before it runs again; returns once none can use a stale mapping. */
void sim_flush_guest_tlb(void);

#endif
