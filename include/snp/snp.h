/*
 * The snp platform (src/platform/snp.c) and platform detection
 * (src/platform/detect.c): helpers other csvsm code and the unit tests call
 * directly, beyond the `platform_snp` ops table of base/platform.h.
 */
#ifndef SNP_SNP_H
#define SNP_SNP_H

#include "base/types.h"
#include "snp/vmsa.h"

struct ghcb;
struct percpu;

/*
 * Register state a secondary vCPU starts with: csvsm's 64-bit AP entry,
 * with the BSP's paging, GDT and IDT. snp_set_ap_context() takes a template
 * (rsp/rdi ignored); start_ap fills rsp = cpu->stack_top and rdi = the
 * struct percpu * of the AP (first C argument of the AP entry, SysV ABI).
 */
struct snp_ap_context {
	uint64_t rip; /* AP entry, 64-bit code */
	uint64_t rsp;
	uint64_t rdi;
	uint64_t cr0, cr3, cr4, efer;
	uint64_t gdtr_base;
	uint64_t idtr_base;
	uint16_t gdtr_limit;
	uint16_t idtr_limit;
	uint16_t cs_sel;       /* 64-bit code selector in that GDT */
	uint16_t ds_sel;       /* flat data selector (ES/SS/DS/FS/GS) */
	uint64_t g_pat;	       /* 0 = use the reset value 0x0007040600070406 */
	uint64_t sev_features; /* SEV_STATUS >> 2 (reference §4.5) */
};

/* Fill a zeroed-or-not VMSA page for a VMPL0 AP (all other fields zero). */
void snp_build_ap_vmsa(struct vmsa *v, const struct snp_ap_context *ctx);
/* Record the AP start template; called once by the boot vCPU before start_ap. */
void snp_set_ap_context(const struct snp_ap_context *tmpl);
/* The template from the boot vCPU's own state (csvsm's APs run at VMPL0 as it
 * does; src/snp_boot.c). */
void snp_prepare_aps(uint64_t sev_features);
/* VMGEXIT with `cpu`'s GHCB page (MSR_GHCB = cpu->ghcb_gpa). */
void snp_ghcb_call(struct percpu *cpu, struct ghcb *ghcb);
/*
 * Make cpu's GHCB page shared (PVALIDATE rescind + MSR page-state change),
 * check SEV_INFO (version 2) and the HV features (SNP, MULTI_VMPL), and
 * register its GPA. Must run on `cpu` itself, before anything is written to
 * the page. platform_snp.setup does it for the boot vCPU. 0 or -1.
 */
int snp_ghcb_init(struct percpu *cpu);
/* The page is shared (registration, if still missing, happens on the next call). */
bool snp_ghcb_usable(const struct percpu *cpu);
/* One MSR-protocol round trip; the previous MSR_GHCB value is restored. */
uint64_t snp_ghcb_msr_call(uint64_t request);
/* The VMSA page start_ap uses for vCPU `id` (never 2 MiB aligned, SNP erratum). */
struct vmsa *snp_ap_vmsa_page(unsigned id);

/*
 * Detection (src/platform/detect.c). CPUID is checked before MSR
 * 0xC0010131 is read, because reading it without SEV #GPs under QEMU TCG.
 * Under SEV-ES/SNP every CPUID raises #VC: call these only once the #VC
 * handler can serve CPUID (vc_init done), or decide by the entry path.
 */
bool snp_platform_detect(void); /* SEV_STATUS bit 2 (SNP), read only when CPUID offers SEV */

/* Rescind, page-state change to shared, map without the C-bit: 0 or -1. */
int snp_share_pages(void *va, unsigned npages);
/* Start the guest firmware at its VMPL and serve it (src/guest_snp.c). */
struct guest_launch;
/* Weak: the host library has no guest launch (platform_snp.launch_guest is NULL there). */
__noreturn void snp_launch_guest(const struct guest_launch *gl) __attribute__((weak));

#endif
