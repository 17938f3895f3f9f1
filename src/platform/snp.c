/*
 * The snp platform: real SEV-SNP hardware, csvsm at VMPL0. PVALIDATE and
 * RMPADJUST are the instructions; the hypervisor is reached with VMGEXIT
 * through the GHCB MSR (0xC0010130) or this vCPU's GHCB page; secondary
 * vCPUs are started by building a VMSA, marking it with RMPADJUST and asking
 * the hypervisor to run it (GHCB AP creation). There is no SNP hardware in
 * development: everything below the instruction layer is unit-tested with
 * the host fake (tests/fake/insn_fake.c).
 *
 * Sources: AMD pub. 56421 §2.3 (MSR protocol), §4.1.9 (AP creation); APM
 * vol. 3 PVALIDATE/RMPADJUST; Linux arch/x86/coco/sev/core.c
 * (snp_set_vmsa, wakeup_cpu_via_vmgexit, vmgexit_ap_control,
 * snp_alloc_vmsa_page), arch/x86/boot/startup/sev-shared.c
 * (sev_es_terminate, svsm_perform_msr_protocol); coconut-svsm
 * kernel/src/cpu/vmsa.rs init_svsm_vmsa; shared/reference/snp-svsm-interfaces.md §4, §5.
 */
#include "snp/snp.h"
#include "snp/ghcb.h"
#include "arch/x86/insn.h"
#include "csvsm/boot.h"
#include "base/console.h"
#include "csvsm/cpu.h"
#include "base/percpu.h"
#include "base/platform.h"
#include "base/secret.h"
#include "base/string.h"
#include "mm/pgtable.h"
#include "src/entry.h" /* BOOT_STACK_SIZE, AP_STACK_SIZE, IST_STACK_SIZE */

/* Reset values every VMSA starts from (APM vol. 2 table 14-1; coconut init_svsm_vmsa). */
#define VMSA_RFLAGS_RESET 0x2ULL
#define VMSA_DR6_RESET	  0xFFFF0FF0ULL
#define VMSA_DR7_RESET	  0x400ULL
#define VMSA_PAT_RESET	  0x0007040600070406ULL
#define VMSA_MXCSR_RESET  0x1F80u
#define VMSA_FTW_RESET	  0x5555u /* coconut init_svsm_vmsa x87_ftw */
#define VMSA_FCW_RESET	  0x0040u /* coconut init_svsm_vmsa x87_fcw */

static int snp_pvalidate(vaddr_t va, unsigned size, bool validate, bool *unchanged)
{
	return pvalidate_insn(va, size, validate, unchanged);
}

static int snp_rmpadjust(vaddr_t va, unsigned size, uint64_t attrs)
{
	return rmpadjust_insn(va, size, attrs);
}

/*
 * RMPADJUST does not invalidate translations other CPUs cache: after taking
 * access away, broadcast the invalidation and wait for it to complete
 * everywhere (coconut-svsm flush_tlb_global_sync after RMPADJUST revocation).
 */
static void snp_flush_guest_tlb(void)
{
	invlpgb_all_global();
	tlbsync();
}

/*
 * Linux svsm_perform_msr_protocol saves and restores the GHCB MSR around an
 * MSR-protocol call, so a registered GHCB GPA survives. Callers run with
 * interrupts disabled (reference §4.6: nothing between the write and VMGEXIT).
 */
uint64_t snp_ghcb_msr_call(uint64_t request)
{
	uint64_t saved = rdmsr(MSR_GHCB), resp;

	wrmsr(MSR_GHCB, request);
	vmgexit();
	resp = rdmsr(MSR_GHCB);
	wrmsr(MSR_GHCB, saved);
	return resp;
}

/*
 * GHCB page life cycle, per vCPU (56421 §2.3.1 and §2.5; Linux
 * arch/x86/coco/sev/core.c setup_ghcb / snp_register_ghcb_early):
 *   0 -> 1  the page is made shared: PVALIDATE rescind, then page-state
 *           change to shared (reference §4.4 order for "shared"); any vCPU
 *           may do it, the RMP is global;
 *   1 -> 2  the vCPU that owns it checks the protocol version and the
 *           hypervisor features and registers the GPA (mandatory under SNP)
 *           from its own GHCB MSR.
 * The boot vCPU's page is set up by platform_snp.setup (snp_setup), an
 * AP's page is made shared by start_ap before the AP runs, and the AP
 * registers it on its first GHCB call. The page must be shared before the
 * first byte is written to it, and mapped without the C-bit (mm/).
 */
enum { GHCB_PRIVATE = 0, GHCB_SHARED = 1, GHCB_REGISTERED = 2 };
static uint8_t snp_ghcb_state[MAX_CPUS];

static int snp_ghcb_make_shared(struct percpu *cpu)
{
	bool unchanged;
	int rc;

	if (snp_ghcb_state[cpu->id] != GHCB_PRIVATE)
		return 0;
	if (!cpu->ghcb || !IS_ALIGNED(cpu->ghcb_gpa, PAGE_SIZE))
		return -1;
	rc = pvalidate_insn((vaddr_t)(uintptr_t)cpu->ghcb, RMP_PG_SIZE_4K, false, &unchanged);
	if (rc != PVALIDATE_OK)
		return -1; /* "unchanged" (already rescinded) is fine */
	if (ghcb_msr_psc_check(snp_ghcb_msr_call(ghcb_msr_psc_req(cpu->ghcb_gpa, PSC_OP_SHARED))))
		return -1;
	/* Mapped without the C-bit only now: nothing was written to it as private. */
	if (pgtable_set_shared((vaddr_t)(uintptr_t)cpu->ghcb, true))
		return -1;
	snp_ghcb_state[cpu->id] = GHCB_SHARED;
	return 0;
}

static int snp_ghcb_register(struct percpu *cpu)
{
	if (ghcb_msr_sev_info_check(snp_ghcb_msr_call(ghcb_msr_sev_info_req()), NULL))
		return -1;
	if (ghcb_msr_hv_features_check(snp_ghcb_msr_call(ghcb_msr_hv_features_req()), NULL))
		return -1;
	/* Registration leaves the GHCB GPA in the MSR (snp_ghcb_msr_call would restore the old
	 * value). */
	wrmsr(MSR_GHCB, ghcb_msr_reg_gpa_req(cpu->ghcb_gpa));
	vmgexit();
	if (ghcb_msr_reg_gpa_check(rdmsr(MSR_GHCB), cpu->ghcb_gpa))
		return -1;
	wrmsr(MSR_GHCB, cpu->ghcb_gpa);
	snp_ghcb_state[cpu->id] = GHCB_REGISTERED;
	return 0;
}

int snp_ghcb_init(struct percpu *cpu)
{
	if (!cpu || cpu->id >= MAX_CPUS)
		return -1;
	if (snp_ghcb_state[cpu->id] == GHCB_REGISTERED)
		return 0;
	if (snp_ghcb_make_shared(cpu))
		return -1;
	return snp_ghcb_register(cpu);
}

bool snp_ghcb_usable(const struct percpu *cpu)
{
	return cpu && cpu->ghcb && cpu->id < MAX_CPUS && snp_ghcb_state[cpu->id] != GHCB_PRIVATE;
}

/*
 * The GHCB the caller filled goes to the hypervisor. A vCPU whose GHCB
 * cannot be registered cannot talk to the hypervisor at all: terminate
 * (DESIGN.md: a hypervisor that breaks the protocol is an attack).
 */
void snp_ghcb_call(struct percpu *cpu, struct ghcb *ghcb)
{
	if (ghcb != cpu->ghcb || cpu->id >= MAX_CPUS)
		panic("snp: GHCB %p is not cpu %u's", (void *)ghcb, cpu->id);
	if (snp_ghcb_state[cpu->id] == GHCB_PRIVATE)
		panic("snp: cpu %u used its GHCB before snp_ghcb_init", cpu->id);
	if (snp_ghcb_state[cpu->id] == GHCB_SHARED && snp_ghcb_register(cpu))
		platform_snp.terminate(false, GHCB_TERM_SET_GEN, GHCB_TERM_GEN_REQ);
	wrmsr(MSR_GHCB, cpu->ghcb_gpa);
	vmgexit();
}

/* platform_ops.setup: the boot vCPU's GHCB (allocated by then) is made shared and registered. */
static int snp_setup(const struct memmap *mm, const char *cmdline, size_t cmdline_len)
{
	return snp_ghcb_init(this_cpu());
}

/*
 * A 64-bit VMSA for a VMPL0 csvsm AP, following coconut init_svsm_vmsa:
 * flat 64-bit CS (attr 0x29B) and data (0xC93) segments, the BSP's
 * CR0/CR3/CR4/EFER, GDTR and IDTR, reset values for the rest. EFER.SVME must
 * be set in every SEV-ES/SNP VMSA (Linux wakeup_cpu_via_vmgexit sets
 * EFER_SVME; VMRUN consistency checks, APM vol. 2 §15.5.1).
 */
void snp_build_ap_vmsa(struct vmsa *v, const struct snp_ap_context *ctx)
{
	const struct vmsa_seg code = {
	    .selector = ctx->cs_sel,
	    .attrib = VMSA_ATTR_CODE64,
	    .limit = 0xFFFFFFFFu,
	    .base = 0,
	};
	const struct vmsa_seg data = {
	    .selector = ctx->ds_sel,
	    .attrib = VMSA_ATTR_DATA,
	    .limit = 0xFFFFFFFFu,
	    .base = 0,
	};

	memset(v, 0, sizeof(*v));
	v->cs = code;
	v->es = v->ss = v->ds = v->fs = v->gs = data;
	/* GS base = the AP's struct percpu (this_cpu() reads %gs:0) for a #VC before cpu_init_self.
	 */
	v->gs.base = ctx->rdi;
	v->gdtr.base = ctx->gdtr_base;
	v->gdtr.limit = ctx->gdtr_limit;
	v->idtr.base = ctx->idtr_base;
	v->idtr.limit = ctx->idtr_limit;
	v->cr0 = ctx->cr0;
	v->cr3 = ctx->cr3;
	v->cr4 = ctx->cr4;
	v->efer = ctx->efer | VMSA_EFER_SVME;
	v->rip = ctx->rip;
	v->rsp = ctx->rsp;
	v->rdi = ctx->rdi;
	v->rflags = VMSA_RFLAGS_RESET;
	v->dr6 = VMSA_DR6_RESET;
	v->dr7 = VMSA_DR7_RESET;
	v->g_pat = ctx->g_pat ? ctx->g_pat : VMSA_PAT_RESET;
	v->xcr0 = 1;
	v->mxcsr = VMSA_MXCSR_RESET;
	v->x87_ftw = VMSA_FTW_RESET;
	v->x87_fcw = VMSA_FCW_RESET;
	v->vmpl = 0;
	v->cpl = 0;
	v->sev_features = ctx->sev_features;
}

/*
 * VMSA pages for the APs. An SNP erratum makes a VMSA page that is 2 MiB
 * aligned raise spurious RMP #PFs (Linux snp_alloc_vmsa_page, coconut
 * allocate_new_vmsa): one spare page lets every vCPU skip the (at most one,
 * 65 pages < 2 MiB) aligned page of the array.
 */
static struct vmsa snp_vmsa_pages[MAX_CPUS + 1] __aligned(4096);

struct vmsa *snp_ap_vmsa_page(unsigned id)
{
	unsigned idx = id;

	if (id >= MAX_CPUS)
		panic("snp: vCPU %u has no VMSA page", id);
	for (unsigned i = 0; i <= id; i++)
		if (IS_ALIGNED((vaddr_t)(uintptr_t)&snp_vmsa_pages[i], PAGE_SIZE_2M)) {
			idx = id + 1;
			break;
		}
	return &snp_vmsa_pages[idx];
}

static struct snp_ap_context snp_ap_template;
static bool snp_ap_template_set;

void snp_set_ap_context(const struct snp_ap_context *tmpl)
{
	snp_ap_template = *tmpl;
	snp_ap_template_set = true;
}

/*
 * Mark or unmark a VMSA page. At VMPL0 RMPADJUST must target a less
 * privileged VMPL for the VMSA bit to be set, Linux snp_set_vmsa uses
 * target VMPL1 without permissions: attrs = 1 | RMPADJUST_VMSA_PAGE_BIT.
 */
static int snp_set_vmsa(struct vmsa *v, bool make)
{
	return rmpadjust_insn((vaddr_t)(uintptr_t)v, RMP_PG_SIZE_4K,
			      1 | (make ? RMPADJUST_VMSA : 0));
}

/*
 * Start `cpu` at csvsm's AP entry: VMSA, RMPADJUST(VMSA), then GHCB AP
 * creation (CREATE, VMPL0, its APIC ID) through the calling vCPU's GHCB.
 * csvsm is identity-mapped (base/types.h), so the VMSA GPA is its address.
 */
static int snp_start_ap(struct percpu *cpu)
{
	struct percpu *self = this_cpu();
	struct snp_ap_context ctx;
	struct vmsa *v;

	if (!snp_ap_template_set || !self || !self->ghcb || cpu == self)
		return -1;
	ctx = snp_ap_template;
	ctx.rsp = cpu->stack_top;
	ctx.rdi = (uint64_t)(uintptr_t)cpu;
	if (!ctx.sev_features)
		ctx.sev_features = rdmsr(MSR_SEV_STATUS) >> 2; /* reference §4.5 */

	/* The AP's GHCB page becomes shared now; the AP registers it itself on first use. */
	if (cpu->id >= MAX_CPUS || (cpu->ghcb && snp_ghcb_make_shared(cpu)))
		return -1;
	v = snp_ap_vmsa_page(cpu->id);
	snp_build_ap_vmsa(v, &ctx);
	if (snp_set_vmsa(v, true))
		return -1;
	if (ghcb_ap_create_fill(self->ghcb, SVM_VMGEXIT_AP_CREATE, 0, cpu->apic_id,
				(gpa_t)(uintptr_t)v, ctx.sev_features))
		panic("snp: AP creation arguments");
	snp_ghcb_call(self, self->ghcb);
	if (ghcb_ap_create_check(self->ghcb)) {
		/* The hypervisor refused: make the page an ordinary page again. */
		if (snp_set_vmsa(v, false))
			panic("snp: cannot clear the VMSA bit of cpu %u's VMSA", cpu->id);
		return -1;
	}
	return 0;
}

/* Zero a vCPU's IST stacks but the one this runs on, if any (a termination
 * before the vCPU's stack_top was set runs where it was raised). */
static void ist_wipe(const struct percpu *cpu)
{
	vaddr_t sp = (vaddr_t)(uintptr_t)__builtin_frame_address(0);
	for (unsigned k = 0; k < ARRAY_SIZE(cpu->ist_top); k++) {
		vaddr_t top = cpu->ist_top[k];
		if (top && !(sp >= top - IST_STACK_SIZE && sp < top))
			memzero_explicit((void *)(uintptr_t)(top - IST_STACK_SIZE), IST_STACK_SIZE);
	}
}

/* The termination request through the MSR protocol; a hypervisor that returns gets asked again. */
static __noreturn void snp_terminate_loop(uint64_t req)
{
	/* Off every IST stack now (secret_end_on_clean_stack runs this at the
	 * top of the vCPU's own stack): zero them too (issue 34 item 3). */
	if (rdmsr(MSR_GS_BASE))
		ist_wipe(this_cpu());
	for (;;) {
		wrmsr(MSR_GHCB, req);
		vmgexit();
	}
}

_Static_assert(BOOT_STACK_SIZE == AP_STACK_SIZE, "snp_terminate: one stack size for every vCPU");

static __noreturn void snp_terminate(bool success, unsigned reason_set, unsigned reason_code)
{
	uint64_t req = success ? ghcb_msr_term_req(GHCB_TERM_SET_GEN, GHCB_TERM_GEN_REQ)
			       : ghcb_msr_term_req(reason_set, reason_code);

	secret_wipe_all();
	irq_disable();
	/* Then this vCPU's stack, which holds the frames of the library code
	 * it ran or was interrupted in (issue 34 item 3); the request is sent
	 * from a fresh frame at its top (src/smp.c sets every stack_top). */
	struct percpu *cpu = rdmsr(MSR_GS_BASE) ? this_cpu() : NULL;
	vaddr_t top = cpu ? cpu->stack_top : 0;
	secret_end_on_clean_stack(top ? top - AP_STACK_SIZE : 0, top, snp_terminate_loop, req);
}

static void snp_ghcb_call_op(struct percpu *cpu, struct ghcb *ghcb)
{
	snp_ghcb_call(cpu, ghcb);
}

/*
 * Pages csvsm shares with the hypervisor (guest-request request, response
 * and certificate pages): rescind, page-state change to shared, map
 * without the C-bit (reference §4.4). 0 or -1.
 */
int snp_share_pages(void *va, unsigned npages)
{
	for (unsigned i = 0; i < npages; i++) {
		vaddr_t p = (vaddr_t)(uintptr_t)va + (vaddr_t)i * PAGE_SIZE;
		bool unchanged;
		if (pvalidate_insn(p, RMP_PG_SIZE_4K, false, &unchanged) != PVALIDATE_OK)
			return -1;
		if (ghcb_msr_psc_check(
			snp_ghcb_msr_call(ghcb_msr_psc_req((gpa_t)p, PSC_OP_SHARED))))
			return -1;
		if (pgtable_set_shared(p, true))
			return -1;
	}
	return 0;
}

static int snp_psp_setup(const struct guest_launch *gl)
{
	if (snp_share_pages((void *)(uintptr_t)gl->req_gpa, 1) ||
	    snp_share_pages((void *)(uintptr_t)gl->resp_gpa, 1) ||
	    snp_share_pages((void *)(uintptr_t)gl->data_gpa, gl->data_npages))
		panic("snp: the guest-request pages could not be shared");
	return 0;
}

const struct platform_ops platform_snp = {
    .name = "snp",
    .setup = snp_setup,
    .pvalidate = snp_pvalidate,
    .rmpadjust = snp_rmpadjust,
    .flush_guest_tlb = snp_flush_guest_tlb,
    .ghcb_msr_call = snp_ghcb_msr_call,
    .ghcb_call = snp_ghcb_call_op,
    .start_ap = snp_start_ap,
    .psp_setup = snp_psp_setup,
    .launch_guest = snp_launch_guest,
    .terminate = snp_terminate,
};
