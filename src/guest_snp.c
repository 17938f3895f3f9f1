/*
 * The guest on SEV-SNP: csvsm at VMPL0 starts the firmware the launch
 * loaded at the guest VMPL and serves it from then on (reference §1, §4.5;
 * coconut-svsm kernel/src/svsm.rs launch_fw and its request loop).
 *
 * Launch (platform_snp.launch_guest):
 *  - the firmware image and every page the launch validated for it (its
 *    pre-validated scratch, secrets, CPUID and calling-area pages) are
 *    granted to the guest VMPL (RMPADJUST); its RAM was granted when it was
 *    pre-accepted;
 *  - the boot vCPU's guest VMSA: the x86 reset state (real mode at
 *    0xFFFFFFF0) with the guest's SEV features, on a page of csvsm's that
 *    is not 2 MiB aligned (SNP erratum), marked a VMSA for the guest VMPL,
 *    then given to the hypervisor with GHCB AP creation at that VMPL;
 *  - every vCPU then runs the request loop: RUN_VMPL(guest VMPL); when the
 *    hypervisor returns, the guest asked for VMPL0 (or its vCPU stopped):
 *    the call's registers are in the guest's VMSA, csvsm serves it there
 *    (src/requests.c) and runs the guest again.
 * Which guest VMSA belongs to a vCPU: the boot vCPU's is csvsm's own; an
 * AP's is the one the guest registered with CREATE_VCPU for that APIC ID.
 */
#include "arch/x86/insn.h"
#include "csvsm/boot.h"
#include "base/console.h"
#include "csvsm/cpu.h"
#include "csvsm/hv_doorbell.h"
#include "csvsm/igvm_boot.h"
#include "base/platform.h"
#include "base/secret.h"
#include "base/string.h"
#include "base/svsm_call.h"
#include "csvsm/vcpu.h"
#include "mm/guest_mem.h"
#include "mm/pgtable.h"
#include "mm/pool.h"
#include "snp/ghcb.h"
#include "snp/snp.h"
#include "snp/vmsa.h"

#define VMSA_ATTR_REAL_CODE 0x9B /* present, code, readable, accessed */
#define VMSA_ATTR_REAL_DATA 0x93
#define VMSA_ATTR_LDT	    0x82
#define VMSA_ATTR_TSS	    0x8B

const struct csvsm_igvm_boot_block *snp_boot_block_copy(void);

static struct vmsa *bsp_guest_vmsa;

static void grant(gpa_t gpa, uint64_t size, unsigned vmpl)
{
	for (gpa_t g = ALIGN_DOWN(gpa, PAGE_SIZE); g < gpa + size; g += PAGE_SIZE)
		if (rmpadjust_insn((vaddr_t)g, RMP_PG_SIZE_4K, vmpl | RMPADJUST_RWX))
			panic("snp: RMPADJUST of firmware page 0x%llx for VMPL%u failed",
			      (unsigned long long)g, vmpl);
}

/* The x86 reset state (APM vol. 2 §14.1.3) at the guest VMPL, for its boot vCPU. */
static void build_reset_vmsa(struct vmsa *v, unsigned vmpl, uint64_t sev_features)
{
	const struct vmsa_seg data = {
	    .selector = 0, .attrib = VMSA_ATTR_REAL_DATA, .limit = 0xFFFF, .base = 0};
	memset(v, 0, sizeof(*v));
	v->cs = (struct vmsa_seg){
	    .selector = 0xF000, .attrib = VMSA_ATTR_REAL_CODE, .limit = 0xFFFF, .base = 0xFFFF0000};
	v->es = v->ss = v->ds = v->fs = v->gs = data;
	v->gdtr.limit = v->idtr.limit = 0xFFFF;
	v->ldtr = (struct vmsa_seg){.attrib = VMSA_ATTR_LDT, .limit = 0xFFFF};
	v->tr = (struct vmsa_seg){.attrib = VMSA_ATTR_TSS, .limit = 0xFFFF};
	v->rip = 0xFFF0;
	v->rflags = 0x2;
	v->cr0 = 0x60000010; /* CD | NW | ET */
	v->efer = VMSA_EFER_SVME;
	v->dr6 = 0xFFFF0FF0;
	v->dr7 = 0x400;
	v->g_pat = 0x0007040600070406ULL;
	v->xcr0 = 1;
	v->mxcsr = 0x1F80;
	v->x87_fcw = 0x37F;
	v->vmpl = (uint8_t)vmpl;
	v->sev_features = sev_features;
}

/* A VMSA page of csvsm's that is not 2 MiB aligned (SNP erratum, Linux snp_alloc_vmsa_page). */
static struct vmsa *alloc_vmsa_page(void)
{
	struct vmsa *v = pool_alloc(PAGE_SIZE, PAGE_SIZE);
	if (IS_ALIGNED((vaddr_t)(uintptr_t)v, PAGE_SIZE_2M))
		v = pool_alloc(PAGE_SIZE, PAGE_SIZE);
	return v;
}

/*
 * The guest VMSA this vCPU serves, or NULL: the boot vCPU's (csvsm's own
 * page), or the one the guest made for it, marked in use until
 * serve_end() so that a DELETE_VCPU from another vCPU answers FAIL_INUSE
 * instead of handing the page back while csvsm reads and writes it.
 */
static struct vmsa *serve_begin(struct percpu *cpu, struct guest_vcpu *gv, gpa_t *served)
{
	*served = 0;
	if (cpu->id == 0)
		return bsp_guest_vmsa;
	gpa_t vmsa;
	if (!vcpu_serve_begin(cpu->apic_id, gv, &vmsa)) /* gv->caa too (src/vcpu.c) */
		return NULL;
	*served = vmsa;
	return (struct vmsa *)guest_mem_ptr(vmsa);
}

/*
 * Whether this vCPU's guest VMPL has run on it: then its plane vCPU exists
 * at the host and holds a VMSA it ran. The boot vCPU's is csvsm's own,
 * given to the host at launch; an AP's guest VMPL has run once VMPL0 finds
 * a request of it in its VMSA. Before that the planes KVM may not have
 * created that plane vCPU at all (the guest registers a VMSA with
 * CREATE_VCPU before its AP creation): a RUN_VMPL for it is an error, and
 * the MSR form's ends the VM (series v1 PATCH 58/60 __sev_snp_run_vmpl
 * returns -EINVAL, which sev_handle_vmgexit_msr_protocol passes out of
 * KVM_RUN). Plane vCPUs are never destroyed, so the mark stays.
 */
static bool guest_ran[MAX_CPUS];

/*
 * The service ends and, in the same hold of the state lock, csvsm decides
 * whether to run the guest VMPL again (src/vcpu.c vcpu_serve_end_run): only
 * a vCPU whose guest VMPL has run here, and never one whose VMSA a
 * DELETE_VCPU has begun to take away (the guest destroyed it at the host
 * first: a RUN_VMPL of that plane would stall the vCPU, PATCH 58/60).
 */
static bool serve_end(struct percpu *cpu, gpa_t served)
{
	if (cpu->id == 0)
		return true; /* csvsm's own guest VMSA: never deleted */
	bool run = vcpu_serve_end_run(served, cpu->apic_id);
	return run && guest_ran[cpu->id];
}

/*
 * Copy once: the guest's other vCPUs cannot write its VMSA (RMP VMSA bit).
 * The exit is consumed here, served or not: the hardware writes
 * guest_exit_code at the guest VMPL's next exit, so a later return to VMPL0
 * that the guest did not ask for (a HLT woken by the host, a refused
 * RUN_VMPL) finds no VMGEXIT and serves nothing stale (the AMD linux-svsm
 * and coconut loops serve only on guest_exit_code == VMGEXIT, 0x403).
 */
static bool serve(struct guest_vcpu *gv, struct vmsa *v)
{
	uint64_t exit_code = v->guest_exit_code;
	v->guest_exit_code = 0;
	if (exit_code != VMSA_EXIT_VMGEXIT)
		return false;
	struct svsm_regs r = {v->rax, v->rcx, v->rdx, v->r8, v->r9};
	if (!svsm_request(gv, &r))
		return true;
	v->rax = r.rax;
	v->rcx = r.rcx;
	v->rdx = r.rdx;
	v->r8 = r.r8;
	v->r9 = r.r9;
	return true;
}

/*
 * Make the guest VMSA unrunnable while csvsm serves it (hostile review of
 * the #HV change, M1). Clearing EFER.SVME in the page is not enough by
 * itself: a host that VMRUNs the page on another CPU before the store holds
 * its state in that CPU and writes it back at #VMEXIT, SVME set. So after
 * the store, an RMPADJUST of the page with the attributes it already has:
 * hardware refuses it with FAIL_INUSE while any CPU runs the VMSA (APM
 * vol. 2 §15.36.12 "VMSA ... in use"; the machine models it,
 * tests/snpm/model/rmp.c rmp_vmsa_in_use). Once it succeeds and SVME still
 * reads clear, no VMRUN was running the page at the store or has ended
 * since, and every later VMRUN fails its consistency check on SVME (APM
 * vol. 2 §15.5.1). A page that stays in use is not served this time (the
 * call stays pending in the calling area, and a Linux guest asks again:
 * svsm_perform_call_protocol retries on -EAGAIN). The bound is a count of
 * tries, not a time, so that what csvsm does does not depend on how fast
 * the CPU runs it: on hardware FAIL_INUSE lasts only while another CPU is
 * inside VMRUN of this page, which no honest host does at all. True when
 * parked.
 */
#define VMSA_PARK_TRIES 4096
static uint64_t park_refused[MAX_CPUS];

static bool vmsa_park(struct vmsa *v, uint64_t attrs)
{
	for (unsigned tries = 0; tries < VMSA_PARK_TRIES; tries++) {
		v->efer &= ~VMSA_EFER_SVME;
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		int rc = platform->rmpadjust((vaddr_t)(uintptr_t)v, RMP_PG_SIZE_4K, attrs);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (rc == 0 && !(((volatile struct vmsa *)v)->efer & VMSA_EFER_SVME))
			return true;
		if (rc != 0 && rc != RMPADJUST_FAIL_INUSE)
			panic("snp: RMPADJUST of the guest VMSA 0x%llx failed (%d)",
			      (unsigned long long)(uintptr_t)v, rc);
		cpu_relax();
	}
	v->efer |= VMSA_EFER_SVME;
	return false;
}

/*
 * The VMPL switch (reference §4.1, §4.3): the GHCB RUN_VMPL event, or the
 * MSR protocol's VMPL request (0x016/0x017) on a host that answers RUN_VMPL
 * as an event it does not know (GHCB_ERR_INVALID_EVENT). Both are the
 * planes KVM's (PATCH 58/60 "kvm: svm: Invoke a specified VMPL level VMSA
 * for the vCPU": sev_snp_run_vmpl and the GHCB_MSR_VMPL_REQ case), which it
 * advertises with GHCB HV feature bit 5 (SNP multi-VMPL: PATCH 60/60; Linux
 * GHCB_HV_FT_SNP_MULTI_VMPL, required by snp_check_hv_features for a guest
 * below VMPL0). csvsm requires that bit before it registers its first GHCB
 * (base/ghcb.c ghcb_msr_hv_features_check; without it the snp boot stops,
 * reason set 1 code 0x43), so the MSR form is used only where the host
 * advertises it. 0 when the guest VMPL
 * ran and came back, -1 when the host refused to run it.
 */
static bool msr_switch[MAX_CPUS]; /* per vCPU: each asks the host on its own */

static int run_guest_vmpl(struct percpu *cpu, unsigned vmpl)
{
	if (!msr_switch[cpu->id]) {
		ghcb_run_vmpl_fill(cpu->ghcb, vmpl);
		snp_ghcb_call(cpu, cpu->ghcb);
		int r = ghcb_run_vmpl_result(cpu->ghcb);
		if (r <= 0)
			return r;
		msr_switch[cpu->id] = true;
		if (cpu->id == 0)
			con_printf(
			    "csvsm: the host does not know GHCB RUN_VMPL: switching to VMPL%u "
			    "through the GHCB MSR protocol (0x016)\n",
			    vmpl);
	}
	return ghcb_msr_vmpl_check(platform->ghcb_msr_call(ghcb_msr_vmpl_req(vmpl)));
}

/*
 * The request loop of one vCPU. A vCPU whose guest VMPL has not run on it
 * yet (the guest has not created that vCPU, or has registered its VMSA
 * with csvsm but not yet given it to the host), whose guest vCPU is being
 * deleted, or whose RUN_VMPL the host refuses, idles in HLT instead of
 * asking (coconut-svsm request_loop_main: NoMappings -> go_idle): HLT is an
 * automatic exit the host resolves by running the guest VMPL once it has a
 * VMSA, or by waking VMPL0 for an event; a loop of VMGEXITs would spin.
 * When VMPL0 resumes (RUN_VMPL returned, or the HLT ended because the guest
 * asked for VMPL0), only a pending call in the calling area is served
 * (src/requests.c). While it is served the guest VMSA is not runnable: its
 * EFER.SVME is clear, so a host that VMRUNs it meanwhile fails (APM vol. 2
 * §15.5.1 VMRUN consistency checks; coconut-svsm vmm/execloop.rs
 * enter_guest: vmsa.disable() after the switch, vmsa.enable() before the
 * next). csvsm flushes the guest's translations at every permission change
 * it makes while serving (vcpu_create, the core protocol's PVALIDATE), so
 * the per-entry flush of coconut's loop adds nothing here.
 * Once any vCPU has begun to terminate, none serves again.
 */
static __noreturn void request_loop(struct percpu *cpu, struct guest_vcpu *gv)
{
	hv_doorbell_register(cpu);
	bool run = serve_end(cpu, 0); /* the boot vCPU at once; an AP idles first */
	for (;;) {
		if (secret_terminating())
			platform->terminate(false, GHCB_TERM_SET_GEN, GHCB_TERM_GEN_REQ);
		if (!run || run_guest_vmpl(cpu, gv->vmpl))
			cpu_halt();
		if (secret_terminating())
			continue;
		gpa_t served;
		struct vmsa *v = serve_begin(cpu, gv, &served);
		if (v &&
		    !vmsa_park(v, gv->vmpl | (cpu->id ? RMPADJUST_READ : 0) | RMPADJUST_VMSA)) {
			if (!park_refused[cpu->id]++)
				con_printf("csvsm: vCPU %u: the host runs the guest VMSA 0x%llx "
					   "elsewhere while VMPL0 runs: its request waits\n",
					   cpu->id, (unsigned long long)(uintptr_t)v);
			run = serve_end(cpu, served);
			continue;
		}
		/* A request found in its VMSA: the guest VMPL has run here. */
		if (v && serve(gv, v))
			guest_ran[cpu->id] = true;
		hv_doorbell_report(cpu); /* its console exits, too, while SVME is clear */
		if (v)
			v->efer |= VMSA_EFER_SVME;
		run = serve_end(cpu, served);
	}
}

static struct guest_vcpu ap_gv[MAX_CPUS];
static unsigned guest_vmpl;

static void ap_request_loop(struct percpu *cpu)
{
	ap_gv[cpu->id] = (struct guest_vcpu){.id = cpu->id, .vmpl = guest_vmpl};
	request_loop(cpu, &ap_gv[cpu->id]);
}

__noreturn void snp_launch_guest(const struct guest_launch *gl)
{
	const struct csvsm_igvm_boot_block *bb = snp_boot_block_copy();
	struct percpu *cpu = this_cpu();
	guest_vmpl = gl->vmpl;

	/* The firmware and the pages the launch validated for it, to the guest VMPL. */
	grant(gl->fw_gpa, gl->fw_size, gl->vmpl);
	for (unsigned i = 0; i < bb->n_ranges; i++) {
		uint32_t k = bb->ranges[i].kind;
		if (k == CSVSM_IGVM_RANGE_FW_ZERO || k == CSVSM_IGVM_RANGE_SECRETS ||
		    k == CSVSM_IGVM_RANGE_CPUID || k == CSVSM_IGVM_RANGE_CAA)
			grant(bb->ranges[i].gpa, bb->ranges[i].size, gl->vmpl);
	}

	/* The boot vCPU's guest VMSA, registered with the hypervisor at the guest VMPL. */
	struct vmsa *v = alloc_vmsa_page();
	build_reset_vmsa(v, gl->vmpl, vcpu_guest_sev_features);
	if (rmpadjust_insn((vaddr_t)(uintptr_t)v, RMP_PG_SIZE_4K, gl->vmpl | RMPADJUST_VMSA))
		panic("snp: cannot make the guest's VMSA");
	if (ghcb_ap_create_fill(cpu->ghcb, SVM_VMGEXIT_AP_CREATE, gl->vmpl, cpu->apic_id,
				(gpa_t)(uintptr_t)v, vcpu_guest_sev_features))
		panic("snp: AP creation arguments");
	snp_ghcb_call(cpu, cpu->ghcb);
	if (ghcb_ap_create_check(cpu->ghcb))
		panic("snp: the hypervisor refused the guest's boot VMSA");
	bsp_guest_vmsa = v;
	vcpu_boot_apic_id = cpu->apic_id;
	boot_phase("guest", "firmware at VMPL%u from its reset vector; VMSA 0x%llx", gl->vmpl,
		   (unsigned long long)(uintptr_t)v);

	/* csvsm's other vCPUs serve the guest's APs once it creates them. */
	hv_doorbell_alloc();
	smp_dispatch_aps(ap_request_loop);
	static struct guest_vcpu bsp_gv;
	bsp_gv = (struct guest_vcpu){.id = 0, .vmpl = gl->vmpl, .caa = gl->caa};
	request_loop(cpu, &bsp_gv);
}
