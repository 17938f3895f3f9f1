/*
 * The SNP machine's hypervisor core (tests/snpm/hv/): svm.c (VMCBs, nested
 * page tables, exit loop), snp.c (SEV-SNP view, #VC, GHCB host side), io.c
 * (the guests' device view). Not in csvsm's image.
 */
#ifndef SIM_SVM_H
#define SIM_SVM_H

#include "arch/x86/svm.h"
#include "base/svsm_call.h"

struct memmap;

/*
 * The fields VMRUN's consistency checks read (APM vol. 2 §15.5.1), copied
 * before every VMRUN. When a check fails, QEMU's helper_vmrun has already
 * set HF_GUEST_MASK, and its #VMEXIT (do_vmexit) writes the CPU's state,
 * still the host's, into the save area: afterwards the VMCB no longer
 * shows what was rejected (docs/snp-machine.md, "Multi-threaded TCG").
 */
struct vmrun_checked {
	uint64_t cr0, cr3, cr4, efer, dr6, dr7, event_inj;
	uint32_t asid;
	uint16_t cs_attrib;
};

struct svm_vcpu {
	struct guest_gprs gprs; /* 0: swapped by svm_entry.S */
	uint64_t vmcb_pa;	/* 112 */
	uint64_t host_save_pa;	/* 120 */
	uint8_t *xsave;		/* 128: guest x87/SSE/AVX state (XSAVE area) */
	uint32_t fpu_saved;	/* 136: xsave holds the guest's state; the next entry restores it */
	struct vmcb *vmcb;
	uint64_t ghcb_msr; /* the guest's view of MSR 0xC0010130 */
	gpa_t ghcb_gpa;	   /* registered through the MSR protocol, 0 = none */
	struct guest_vcpu gv;
	uint64_t exits, msr_exits, npf_exits, vmgexits, svsm_calls;
	uint64_t npf_retries; /* faults that raced with a table update (npf_spurious) */
	uint64_t exit_tsc, host_cycles, guest_cycles; /* where an exit's round trip goes */
	gpa_t npf_last; /* the last retried fault's gpa and how often in a row */
	unsigned npf_streak;
	/* The last RMP violation KVM re-entered the guest on, and how often in a
	 * row it came back unchanged (handle_npf: KVM's livelock). */
	gpa_t rmp_last_gpa;
	uint64_t rmp_last_rip, rmp_last_err;
	unsigned rmp_streak;
	/* TLB shootdown (sim_flush_guest_tlb): set while in guest mode, and the
	 * flush generation it entered with (it flushed everything older). */
	volatile uint32_t in_guest;
	volatile uint64_t entry_gen;
	uint64_t seen_gen;
	/* The SNP machine (tests/snpm): each VMPL of a vCPU is a context of its
	 * own; an exit handler that switches VMPL names the next context here. */
	unsigned vmpl;
	struct hv_vcpu *hv;
	volatile uint32_t leave;  /* svm_guest_run returns at the next exit */
	uint64_t sev_features;	  /* machine: its VMSA's SEV_FEATURES (SEV_STATUS) */
	struct vmrun_checked pre; /* what the last VMRUN checked (vcpu_vmrun) */
};

struct hv_vcpu; /* the SNP machine's vCPU (tests/snpm/vmpl.c) */
/* Who prints the hypervisor's messages: "csvsm" (the sim) or "snpm" (the machine). */
extern const char *hv_tag;
/* Host address of guest-physical gpa (machine: RAM, or the launch image's backing), or HV_NO_HPA.
 */
#define HV_NO_HPA UINT64_MAX
uint64_t hv_hpa(gpa_t gpa);
/* The VMPL of the guest context this CPU runs now (3 when none). */
unsigned sim_cur_vmpl(void);
/* COM1 lines VMPL0 wrote and has not ended yet go out (the VM ends). */
void sim_uart_flush(void);
/* A hostile host: a fresh frame behind guest RAM page gpa, the old one kept (0 / -1). */
int sim_host_swap_frame(gpa_t gpa);
/* Machine: back [gpa, gpa + size) (2 MiB aligned, outside RAM) with host memory at hpa. */
int hv_back_add(gpa_t gpa, uint64_t size, uint8_t *hpa);
/* Is [gpa, gpa + len) memory (machine: backed; sim: guest RAM)? */
bool hv_is_mem(gpa_t gpa, uint64_t len);
/* Copy to/from guest-physical memory the host may touch (hv_is_mem), page by page. */
void hv_copy_to(gpa_t gpa, const void *src, size_t len);
void hv_copy_from(void *dst, gpa_t gpa, size_t len);
_Static_assert(offsetof(struct svm_vcpu, gprs) == 0, "svm_entry.S V_GPRS");
_Static_assert(offsetof(struct svm_vcpu, vmcb_pa) == 112, "svm_entry.S V_VMCB_PA");
_Static_assert(offsetof(struct svm_vcpu, host_save_pa) == 120, "svm_entry.S V_HOST_PA");
_Static_assert(offsetof(struct svm_vcpu, xsave) == 128, "svm_entry.S V_XSAVE");
_Static_assert(offsetof(struct svm_vcpu, fpu_saved) == 136, "svm_entry.S V_FPU_SAVED");

void svm_vmrun(struct svm_vcpu *v);
/* Save the current guest vCPU's FPU state before library code uses the FPU. */
void sim_fpu_enter(void);

/* Helpers of the exit handlers (sim_svm.c), for sim_snp.c. */
void inject_exception(struct svm_vcpu *v, unsigned vector, bool has_err, uint32_t err);
#include "mm/guest_walk.h"
/* Copy at a linear address as an implicit supervisor access of the guest
 * (descriptor tables, exception frames), with its page tables and nested
 * permissions; on a fault the exception is injected and false returned. */
bool linear_copy_sys(struct svm_vcpu *v, uint64_t la, void *buf, size_t n, bool write);
size_t fetch_insn(struct svm_vcpu *v, uint8_t *insn, size_t max);
/* Linear to guest-physical with the guest's permissions; a fault is injected. */
bool sim_translate(struct svm_vcpu *v, uint64_t la, enum gw_access acc, gpa_t *pa);
uint64_t reg_value(struct svm_vcpu *v, unsigned reg);
/* Host pointer to guest-physical bytes `vmpl` can reach (RAM or flash), or NULL. */
void *guest_phys(gpa_t gpa, size_t n, bool write, unsigned vmpl);
bool sim_msr_access(struct svm_vcpu *v, uint32_t msr, bool wr, uint64_t *val);

/* The core's set-up and run loop (sim_svm.c), for the front ends. */
struct guest_config;
void svm_host_init(const struct guest_config *gc);
void svm_cpu_enable(void);
struct svm_vcpu *svm_vcpu_alloc(void);
void svm_vcpu_fpu_reset(struct svm_vcpu *v);
const uint64_t *svm_npt_root(unsigned vmpl);
void vmcb_init(struct vmcb *v, const uint64_t *npt);
void vmcb_reset_state(struct svm_vcpu *v, uint32_t cpuid_sig);
/* Which of VMRUN's consistency checks `c` fails, or NULL if none the machine knows. */
const char *vmrun_rejected_why(const struct vmrun_checked *c);
/* snpm.vmrun_invalid=1: VMPL0's first VMRUN gets CR0.NW without CR0.CD (a self-test). */
extern bool hv_vmrun_invalid_once;
/* snpm.hv_nest=ADDR: a host that nests #HV injections into VMPL0 (svm.c). */
extern uint64_t hv_nest_addr;
/* Copy guest linear bytes as a supervisor read of v, with its page tables and its VMPL's
 * nested permissions; false if any is unreachable (nothing is injected). */
bool sim_peek_linear(struct svm_vcpu *v, uint64_t la, void *buf, size_t n);
/* Unmap `page` (UINT64_MAX: nothing) in VMPL0's nested table, slot 0 or 1; under the exit
 * lock. */
void sim_vmpl0_hole(unsigned slot, gpa_t page);

/*
 * snpm.redzone (redzone.c): a host that injects #HV at every instruction
 * boundary of a library routine and checks the red zone below RSP.
 */
struct redzone_range {
	uint64_t start, end;
};
#define REDZONE_VC_MAX 4
extern uint64_t redzone_start, redzone_end; /* the routine; 0: off */
extern struct redzone_range redzone_vc[REDZONE_VC_MAX];
extern unsigned redzone_n_vc;
void redzone_init(void);
bool redzone_exit(struct svm_vcpu *v);
void redzone_vc_delivering(struct svm_vcpu *v);
void redzone_after_vmgexit(struct svm_vcpu *v);
void redzone_report(void);
void vmcb_seg(struct vmcb_seg *sg, uint16_t sel, uint64_t base, uint32_t limit, uint16_t attr);
struct vmsa;
void vmcb_from_vmsa(struct svm_vcpu *v, const struct vmsa *m);
void vmsa_from_vmcb(struct vmsa *m, const struct svm_vcpu *v, uint64_t exit_code);
void svm_guest_run(struct svm_vcpu *v);
void hv_exits_lock(void);
void hv_exits_unlock(void);
void hv_send_nmi(uint32_t apic_id);

/*
 * The front end's part (the SNP machine's: tests/snpm/vmpl.c). Called
 * under the exit lock.
 */
/* GHCB AP creation (56421 §4.1.9) from context v: 0, or -1 refused. */
uint64_t ap_create(struct svm_vcpu *v, uint64_t info1, gpa_t vmsa, uint64_t sev_features);
/* v asks to run `vmpl` (GHCB MSR 0x016 when msr, or the RUN_VMPL exit): false refuses it. */
bool hv_run_vmpl(struct svm_vcpu *v, unsigned vmpl, bool msr);
/* The guest powered off or reset (guest_power_event): report and end the VM. */
__noreturn void hv_power_event(struct svm_vcpu *v);
/*
 * The guest would hang (a fault KVM re-enters on forever) or the machine
 * cannot follow what the host did: end the VM with "snpm: end: failure"
 * and QEMU exit status 5, apart from a termination (3) and success (1).
 */
__noreturn void hv_stop_hung(void);
/* The guest asked to terminate: the front end's report (the VM ends after it). */
void hv_guest_terminated(struct svm_vcpu *v);

/* The SEV-SNP guest view and the hypervisor side of the GHCB (sim_snp.c). */
void sim_snp_init(const struct memmap *mm);
/* Deliver #VC with `code` (the exit code) to an SNP guest, as the hardware would. */
void sim_snp_vc(struct svm_vcpu *v, uint64_t code);
/* A VMGEXIT (RIP already past it): the GHCB MSR protocol or the GHCB page. */
void sim_snp_vmgexit(struct svm_vcpu *v);
/* #UD in an SNP guest: PVALIDATE/RMPADJUST at its VMPL; false: not one of them. */
bool sim_snp_ud(struct svm_vcpu *v);
/* Counts of #VC delivered and events emulated without one, printed at power-off. */
void sim_snp_print_counts(void);
/* Counts since power-on: PVALIDATEs and RMPADJUSTs executed (all VMPLs; only
 * VMPL0 may PVALIDATE), the guest VMPLs' page-state-change exits and entries. */
struct sim_snp_counts {
	uint64_t pvalidate, rmpadjust, guest_psc_exits, guest_psc_entries;
	uint64_t csvsm_pages_revalidated; /* VMPL0 validated a page of csvsm's the host converted */
};
void sim_snp_get_counts(struct sim_snp_counts *out);
/* snpm.psc_refuse=: VMPL0's refused requests, and how much of the range is
 * validated now (printed at every ending). */
void sim_snp_print_psc_refuse(void);
/* The machine's #NPF answers (handle_npf) by kind, at power-off. */
void sim_npf_print_counts(void);
/* A page of csvsm's region the host converted to shared on a guest's C=0
 * access (issue 34 item 6), and how many there were. */
bool sim_csvsm_page_lost(gpa_t gpa);
unsigned sim_csvsm_pages_lost(void);
/* snpm.convert_csvsm=ADDR: the host converts csvsm's page holding gpa to
 * shared, as on a guest's C=0 read of it. 0, or -1 (not csvsm's, or lost). */
int sim_host_convert_csvsm(gpa_t gpa);

/* Guest device view (sim_io.c). */
struct sim_io_config {
	const uint8_t *probe; /* the guest's kernel (the probe), or NULL */
	uint32_t probe_size;
	const struct memmap *mm;
	/* The table fw_cfg etc/e820 serves (QEMU's struct e820_entry list). */
	const struct hvm_memmap_table_entry *e820;
	unsigned n_e820;
};
void sim_io_init(const struct sim_io_config *cfg);
/* Emulate one port access; *val in/out. Returns false when the guest must stop. */
bool sim_io_port(uint16_t port, unsigned size, bool in, uint32_t *val);
/* Emulate one guest MMIO access outside its RAM (default deny); *val in/out. */
bool sim_mmio(gpa_t gpa, unsigned size, bool write, uint64_t *val);
/* The refused device accesses by device ("snpm: refusals: ..."), printed at power-off. */
void sim_io_print_refusals(void);
/* The guest asked to power off / reset (sim_io.c sets it, the loop ends the VM). */
extern volatile int guest_power_event; /* 0 none, 1 shutdown, 2 reset */

/* Nested page tables from the RMP model (sim_svm.c). */
void sim_npt_sync(gpa_t gpa, uint64_t size);
/* platform_ops.flush_guest_tlb: every other guest vCPU leaves guest mode and
 * flushes before it runs again; returns once none can use a stale mapping. */
void sim_flush_guest_tlb(void);
/*
 * Revocations held until csvsm's flush (svm.c): a guest-side RMPADJUST or
 * PVALIDATE changed [gpa, gpa + size) from `before` to `after`; if that took
 * a permission away from any VMPL, the nested tables keep the old ones
 * until sim_guest_invlpgb. A host change releases the pages it changes
 * (sim_npt_release, before its sim_npt_sync).
 */
struct rmp_entry_info;
void sim_npt_hold(gpa_t gpa, uint64_t size, const struct rmp_entry_info *before,
		  const struct rmp_entry_info *after);
void sim_npt_release(gpa_t gpa, uint64_t size);
/* csvsm's INVLPGB (everything): held revocations take effect, then the shootdown. */
void sim_guest_invlpgb(void);
/* "snpm: tlb: ..." at power-off. */
void sim_npt_print_held(void);
/* snpm.drop_flush=1: INVLPGB does nothing (csvsm without its flushes, for a test). */
extern bool sim_ignore_invlpgb;

/* vmpl.c: HLT at VMPL0; the #HV doorbell NAE event; the audit of VMPL0's serving time. */
void hv_halt(struct svm_vcpu *v);
bool hv_doorbell_nae(struct svm_vcpu *v, uint64_t op, gpa_t gpa, uint64_t *out);
void hv_serving_audit(struct svm_vcpu *v);
/* snp.c: whether the host side may touch [gpa, gpa+len) (shared guest memory). */
bool sim_snp_host_may_touch(gpa_t gpa, uint64_t len);
extern bool snpm_run_vmpl_msr_only, snpm_nmi_vmpl0, snpm_no_multi_vmpl, snpm_create_race;
extern uint64_t snpm_hv_doorbell_refuse; /* mask of vCPU indexes whose SET fails */
extern uint64_t snpm_vmsa_busy, snpm_kvm_vmsa_features, snpm_delete_race_addr;
extern uint8_t snpm_irq_vmpl0;

#endif
