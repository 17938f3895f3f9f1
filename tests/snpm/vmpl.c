/*
 * The SNP machine's vCPUs: the front end of the hypervisor core
 * (src/platform/sim_svm.c, sim_snp.c, sim_io.c) that makes it play SEV-SNP
 * hardware with VM privilege levels and a KVM host with SVSM support.
 *
 * Each vCPU (one per CPU of the machine, same APIC ID) has a context per
 * VMPL, each with its own VMCB and nested table (the RMP permissions of
 * that VMPL, sim_svm.c npt_pte_machine), and runs one at a time:
 *  - a VMPL's state lives in its VMSA page while it does not run, as on
 *    hardware: a guest VMPL is loaded from its page whenever it is switched
 *    in (VMPL0 may have changed registers there) and saved to it with the
 *    exit code when it is switched out;
 *  - VMSAs are registered with GHCB AP creation (56421 §4.1.9): the page
 *    must be a validated VMSA page in the RMP (RMPADJUST with the VMSA bit
 *    from a higher VMPL) whose VMPL field is the VMPL named, with the SEV
 *    features the caller states; a new one replaces the running state at
 *    the next entry, DESTROY stops it;
 *  - a VMPL switch is the GHCB RUN_VMPL exit or the MSR protocol's VMPL
 *    request (0x016), as the planes KVM serves it (series v1 of 2026-06-08,
 *    PATCH 58/60 __sev_snp_run_vmpl): a plane vCPU KVM never created is an
 *    error (GHCB INVALID_INPUT; the MSR form's -EINVAL leaves KVM_RUN and
 *    the VM stops); a plane vCPU whose VMSA was destroyed is accepted and
 *    the vCPU stalls (plane 0 stopped, the empty plane selected: PATCH
 *    35/60 kvm_vcpu_select_plane) until the plane gets a VMSA again or an
 *    event for VMPL0 arrives (PATCH 52/60); the guest asks for VMPL0 (an
 *    SVSM call) and VMPL0 resumes after its own request, which it reads as
 *    complete. A plane destroyed while it runs stalls the vCPU the same way.
 * The boot vCPU's VMPL0 starts from the launch VMSA (the measured one of
 * the IGVM file); every other context from a VMSA registered at run time.
 */
#include "arch/x86/insn.h"
#include "arch/x86/svm.h"
#include "base/console.h"
#include "csvsm/cpu.h"
#include "base/platform.h"
#include "base/string.h"
#include "tests/snpm/model/rmp.h"
#include "snp/ghcb.h"
#include "snp/vmsa.h"
#include "tests/snpm/hv/svm.h"
#include "igvm_load.h"
#include "snpm.h"

#define NO_VMPL	    0xFFu
#define VINTR_MASK  (1ULL << 24) /* V_INTR_MASKING (APM vol. 2 §15.21.1) */
#define ASID_OF(vm) (16u + (vm)) /* one ASID per VMPL: one nested table per VMPL */

struct hv_vcpu {
	unsigned id;
	uint32_t apic_id;
	struct svm_vcpu *ctx[4];
	volatile gpa_t vmsa[4];	     /* registered VMSA per VMPL, 0 = none */
	volatile uint32_t reload[4]; /* registered anew since the context last ran */
	volatile unsigned want;	     /* the VMPL to run next, NO_VMPL = none yet */
	unsigned cur;		     /* the VMPL running (or last run) */
	volatile gpa_t in_run;	     /* the VMSA page in a VMRUN now, 0 = none */
	uint64_t switches;
	volatile bool halted0; /* its VMPL0 executed HLT and waits for an event */
	volatile bool serving; /* its VMPL0 runs because the guest VMPL asked */
	volatile bool nmi0;    /* an NMI for VMPL0 waits for delivery */
	volatile uint8_t irq0; /* an interrupt vector for VMPL0 waits, 0 = none */
	gpa_t hvdb[4];	       /* #HV doorbell page per VMPL, 0 = none */
};

/* snpm.nmi_vmpl0=1: an NMI for the boot vCPU's VMPL0 at the guest's launch. */
bool snpm_nmi_vmpl0;
/* snpm.irq_vmpl0=VEC: an interrupt (a host IPI) for that VMPL0 after the NMI, 0 = none. */
uint8_t snpm_irq_vmpl0;
/* snpm.hv_doorbell_refuse=MASK: SET fails on these vCPUs (bit = vCPU index), as
 * KVM's does for a page it cannot map. */
uint64_t snpm_hv_doorbell_refuse;
static uint64_t nmi_delivered, irq_delivered, blocked_reported, serving_checks, serving_runnable,
    vmpl0_halts;
uint64_t snpm_vmsa_busy; /* snpm.vmsa_busy=N: see vmsa_in_run */
static uint64_t vmsa_busy_answers;

/* snpm.vmsa_features=N: KVM_X86_SEV_VMSA_FEATURES (igvm_load.h SNPM_KVM_VMSA_FEATURES). */
uint64_t snpm_kvm_vmsa_features = SNPM_KVM_VMSA_FEATURES;
/* SEV_FEATURES per plane (planes PATCH 55/60 "Track vmsa_features per plane"):
 * plane 0's from KVM_SEV_INIT2 (the launch VMSA's), another's from the first
 * AP creation for it (PATCH 57/60 sev_snp_ap_creation); 0 = not set. */
static uint64_t plane_features[4];

static struct hv_vcpu hvs[MAX_CPUS];
static unsigned n_hvs;
static struct vmsa launch_vmsa; /* the boot vCPU's VMPL0 at launch (no GPA) */
static bool launch_vmsa_used;

static struct hv_vcpu *hv_by_apic(uint32_t apic_id)
{
	for (unsigned i = 0; i < n_hvs; i++)
		if (hvs[i].apic_id == apic_id)
			return &hvs[i];
	return NULL;
}

/* Host pointer to a registered VMSA page (backed memory: checked at registration). */
static struct vmsa *vmsa_ptr(gpa_t gpa)
{
	return (struct vmsa *)(uintptr_t)hv_hpa(gpa);
}

/*
 * What VMRUN checks of a VMSA (APM vol. 2 §15.36.8): a validated private
 * page marked VMSA in the RMP, for the VMPL that will run it, SNP active.
 */
static bool vmsa_page_ok(gpa_t gpa, unsigned vmpl, uint64_t features)
{
	struct rmp_entry_info e;
	if (!IS_ALIGNED(gpa, PAGE_SIZE) || !hv_is_mem(gpa, PAGE_SIZE) || rmp_query(gpa, &e) ||
	    !e.assigned || !e.validated || !e.vmsa)
		return false;
	const struct vmsa *m = vmsa_ptr(gpa);
	return m->vmpl == vmpl && (m->sev_features & 1) && m->sev_features == features;
}

/* Load context `vmpl` of h from its VMSA (a fresh one: FPU and GHCB MSR reset too). */
static void ctx_load(struct hv_vcpu *h, unsigned vmpl, bool fresh)
{
	struct svm_vcpu *v = h->ctx[vmpl];
	const struct vmsa *m = h->vmsa[vmpl] ? vmsa_ptr(h->vmsa[vmpl]) : &launch_vmsa;
	if (fresh) {
		memset(&v->vmcb->save, 0, sizeof(v->vmcb->save));
		svm_vcpu_fpu_reset(v);
		/* Under SEV-ES the x87/SSE state lives in the VMSA and VMRUN loads
		 * it (APM vol. 2 table B-4, X87_FCW 0x410, MXCSR 0x408): a VMSA
		 * with zero there (csvsm's launch VMSA) starts with every x87 and
		 * SSE exception unmasked. MXCSR bits above 15 are reserved (XRSTOR
		 * would fault in the machine): not taken. XSTATE_BV (offset 512)
		 * marks x87 and SSE as not in their init state, or XRSTOR would
		 * load FCW 0x37F whatever the VMSA says. The rest of the x87
		 * state (FSW, FTW, registers) is not modelled: empty and zero. */
		*(uint16_t *)v->xsave = m->x87_fcw;
		*(uint32_t *)(v->xsave + 24) = m->mxcsr & 0xFFFFu;
		*(uint64_t *)(v->xsave + 512) |= 0x3;
		v->ghcb_msr = v->ghcb_gpa = 0;
		v->sev_features = m->sev_features;
	}
	vmcb_from_vmsa(v, m);
	v->vmcb->ctl.exit_int_info = 0;
	v->vmcb->ctl.event_inj = 0;
}

static void kick(struct hv_vcpu *h)
{
	struct svm_vcpu *v = h->ctx[h->cur == NO_VMPL ? 0 : h->cur];
	if (v)
		__atomic_store_n(&v->leave, 1, __ATOMIC_RELEASE);
	if (h != &hvs[this_cpu()->id])
		hv_send_nmi(h->apic_id);
}

/* ---- the core's calls (under the exit lock) ---- */

/* A plane vCPU for h at vmpl (KVM creates it through user space at the first
 * AP creation naming it, whatever the request: PATCH 57/60, kvm_request_create_plane). */
static void plane_vcpu(struct hv_vcpu *h, unsigned vmpl)
{
	if (h->ctx[vmpl])
		return;
	struct svm_vcpu *c = svm_vcpu_alloc();
	c->vmpl = vmpl;
	c->hv = h;
	c->gv.id = h->id;
	c->gv.vmpl = vmpl;
	vmcb_init(c->vmcb, svm_npt_root(vmpl));
	c->vmcb->ctl.asid = ASID_OF(vmpl);
	if (vmpl == 0) { /* csvsm takes no interrupts: they wait for the guest */
		c->vmcb->ctl.vintr |= VINTR_MASK;
		c->vmcb->ctl.intercept_misc1 |= SVM_INTERCEPT_HLT;
	}
	h->ctx[vmpl] = c;
}

static void race_destroyed(struct hv_vcpu *x, struct hv_vcpu *y, gpa_t vmsa);

uint64_t ap_create(struct svm_vcpu *v, uint64_t info1, gpa_t gpa, uint64_t sev_features)
{
	unsigned event = (uint32_t)info1 & 0xFFFF;
	unsigned vmpl = ((uint32_t)info1 >> SVM_VMGEXIT_AP_VMPL_SHIFT) & 0xF;
	struct hv_vcpu *h = hv_by_apic((uint32_t)(info1 >> SVM_VMGEXIT_AP_APIC_ID_SHIFT));
	/* A VMPL registers VMSAs for itself or less privileged levels only. */
	if (!h || vmpl > 3 || vmpl < v->vmpl)
		return (uint64_t)-1;
	if (event != SVM_VMGEXIT_AP_DESTROY && event != SVM_VMGEXIT_AP_CREATE &&
	    event != SVM_VMGEXIT_AP_CREATE_ON_INIT)
		return (uint64_t)-1;
	plane_vcpu(h, vmpl);
	if (event == SVM_VMGEXIT_AP_DESTROY) {
		gpa_t old = h->vmsa[vmpl];
		h->vmsa[vmpl] = 0;
		if (h->cur == vmpl) {
			if (old && vmpl != 0 && h != v->hv)
				race_destroyed(h, v->hv, old);
			kick(h);
		}
		return 0;
	}
	if (snpm_refuse_boot_vmsa && v->vmpl == 0 && vmpl != 0 && h == v->hv) {
		con_printf("snpm: refusing the guest's boot VMSA (snpm.refuse_boot_vmsa=1)\n");
		return (uint64_t)-1;
	}
	/*
	 * KVM's sev_snp_ap_creation() refuses an AP whose SEV_FEATURES (RAX)
	 * are not its plane's vmsa_features; the planes KVM keeps them per
	 * plane and takes a new plane's from its first AP creation (PATCH
	 * 55/60, 57/60: csvsm's VMPL0 has RestrictedInjection and DebugSwap,
	 * its guest plane neither). The machine also refuses a feature its KVM
	 * does not support (KVM_X86_SEV_VMSA_FEATURES, as at launch: igvm_load.c).
	 */
	if (sev_features & ~snpm_kvm_vmsa_features) {
		con_printf("snpm: AP creation for APIC ID %u VMPL%u refused: SEV_FEATURES 0x%llx "
			   "asks for what KVM does not support (0x%llx)\n",
			   h->apic_id, vmpl, (unsigned long long)sev_features,
			   (unsigned long long)snpm_kvm_vmsa_features);
		return (uint64_t)-1;
	}
	if (plane_features[vmpl] && sev_features != plane_features[vmpl]) {
		con_printf("snpm: AP creation for APIC ID %u VMPL%u refused: SEV_FEATURES 0x%llx "
			   "are not the plane's vmsa_features 0x%llx (sev_snp_ap_creation)\n",
			   h->apic_id, vmpl, (unsigned long long)sev_features,
			   (unsigned long long)plane_features[vmpl]);
		return (uint64_t)-1;
	}
	if (!vmsa_page_ok(gpa, vmpl, sev_features)) {
		con_printf("snpm: AP creation for APIC ID %u VMPL%u refused: 0x%llx is not a "
			   "VMSA page for it\n",
			   h->apic_id, vmpl, (unsigned long long)gpa);
		return (uint64_t)-1;
	}
	plane_features[vmpl] = sev_features;
	h->vmsa[vmpl] = gpa;
	h->reload[vmpl] = 1;
	if (h->want == NO_VMPL)
		h->want = vmpl;
	else if (h->cur == vmpl)
		kick(h);
	return 0;
}

/* Exits and VMPL switches of every context so far. */
static void hv_totals(uint64_t *exits, uint64_t *switches)
{
	*exits = *switches = 0;
	for (unsigned i = 0; i < n_hvs; i++) {
		*switches += hvs[i].switches;
		for (unsigned k = 0; k < 4; k++)
			*exits += hvs[i].ctx[k] ? hvs[i].ctx[k]->exits : 0;
	}
}

/* The counts when csvsm first runs the guest VMPL: its pre-acceptance and
 * boot are done, and what follows is the guest's run. */
static struct {
	uint64_t exits, switches;
	struct sim_snp_counts snp;
} at_launch;

static void counts_at_launch(void)
{
	hv_totals(&at_launch.exits, &at_launch.switches);
	sim_snp_get_counts(&at_launch.snp);
}

/*
 * SVSM calls by protocol and call, counted at each guest switch to VMPL0
 * from the guest's RAX (reference §1.1: protocol << 32 | call). Harness
 * instrumentation: a host on hardware cannot read an SNP guest's RAX.
 */
static const char *const call_names[3][8] = {{"REMAP_CA", "PVALIDATE", "CREATE_VCPU", "DELETE_VCPU",
					      "DEPOSIT_MEM", "WITHDRAW_MEM", "QUERY_PROTOCOL",
					      "CONFIGURE_VTOM"},
					     {"ATTEST_SERVICES", "ATTEST_SINGLE_SERVICE"},
					     {"VTPM_QUERY", "VTPM_CMD"}};
static const char *const proto_names[3] = {"core", "attest", "vtpm"};
static uint64_t call_count[3][8], call_other;

static void count_call(uint64_t rax)
{
	uint64_t proto = rax >> 32, call = (uint32_t)rax;
	if (proto < 3 && call < 8 && call_names[proto][call])
		__atomic_fetch_add(&call_count[proto][call], 1, __ATOMIC_RELAXED);
	else
		__atomic_fetch_add(&call_other, 1, __ATOMIC_RELAXED);
}

static void print_calls(void)
{
	char buf[512];
	size_t n = 0;
	uint64_t total = call_other;
	for (unsigned p = 0; p < 3; p++)
		for (unsigned c = 0; c < 8; c++) {
			total += call_count[p][c];
			if (call_count[p][c] && n < sizeof(buf))
				n += (size_t)fmt_snprintf(buf + n, sizeof(buf) - n, " %s.%s=%llu",
							  proto_names[p], call_names[p][c],
							  (unsigned long long)call_count[p][c]);
		}
	con_printf("snpm: svsm-calls: total=%llu%s other=%llu\n", (unsigned long long)total,
		   n ? buf : "", (unsigned long long)call_other);
}

/*
 * VMPL0's requests to run a plane vCPU KVM never created (answered with an
 * error, or with the VM's end for the MSR form), and to run one without a
 * VMSA (accepted: the vCPU stalls). csvsm must make neither: it runs its
 * guest VMPL only once that plane has run on the vCPU, and never a VMSA
 * whose DELETE_VCPU has begun (src/guest_snp.c, src/vcpu.c).
 */
static uint64_t run_vmpl_never_created, run_vmpl_no_vmsa, destroy_stalls;

/* ---- snpm.delete_race=ADDR / snpm.create_race=1 (tests/snpm/planes.sh) ----
 *
 * Two orderings the guest and the host may give csvsm, played so that the
 * outcome does not depend on timing. In both a vCPU X's VMPL0 gets an
 * interrupt (a host IPI for plane 0, posted in its #HV doorbell page) that
 * ends its idle HLT or stall (PATCH 52/60: plane 0 runs when it has
 * events), and the host deschedules the guest's vCPU Y -- any host may --
 * until X's VMPL0 has decided what to run next (a RUN_VMPL, the MSR form,
 * or HLT), which the machine records:
 *  - create: Y's guest VMPL had csvsm register a VMSA for X (CREATE_VCPU
 *    succeeded) and has not yet given it to the host (its AP creation):
 *    X's plane vCPU does not exist in KVM yet;
 *  - delete: Y's guest VMPL destroyed the VMSA X runs (AP DESTROY) and then
 *    asks csvsm to DELETE_VCPU it while X's VMPL0 still has it: X's
 *    parking RMPADJUST of that VMSA finds it in use (FAIL_INUSE, as for a
 *    host running it elsewhere) until csvsm's DELETE_VCPU on Y waits for X
 *    (csvsm's vcpu_delete_waits, at ADDR, from nm, is no longer 0), then Y
 *    is descheduled and X goes on.
 * Harness instrumentation: a real host cannot read csvsm's memory or the
 * guest's registers; it only sets up orderings a real host may give.
 */
#define RACE_VECTOR 0x31
uint64_t snpm_delete_race_addr; /* 0: off */
bool snpm_create_race;
static struct {
	enum { R_IDLE, R_PARK, R_HOLD, R_DONE } state;
	const char *kind;
	struct hv_vcpu *x, *y; /* x decides, y waits */
	gpa_t vmsa;	       /* delete: the destroyed VMSA */
	uint64_t held;	       /* delete: FAIL_INUSE answers to X's parking */
} race;
static uint32_t pending_create[MAX_CPUS]; /* APIC ID + 1 of a CREATE_VCPU call in flight */

static void race_post_event(struct hv_vcpu *x)
{
	x->irq0 = RACE_VECTOR;
}

/* AP DESTROY of the VMSA x runs, from y. */
static void race_destroyed(struct hv_vcpu *x, struct hv_vcpu *y, gpa_t vmsa)
{
	if (!snpm_delete_race_addr || race.state != R_IDLE)
		return;
	race.state = R_PARK;
	race.kind = "delete";
	race.x = x;
	race.y = y;
	race.vmsa = vmsa;
	race_post_event(x);
	con_printf("snpm: race: delete: vCPU %u's guest destroyed vCPU %u's VMSA 0x%llx; an "
		   "interrupt for vCPU %u's VMPL0 ends its stall; its parking waits for "
		   "DELETE_VCPU\n",
		   y->id, x->id, (unsigned long long)vmsa, x->id);
}

/* What x's VMPL0 does next while a race holds y. */
static void race_decided(struct hv_vcpu *h, const char *what)
{
	if ((race.state != R_PARK && race.state != R_HOLD) || h != race.x)
		return;
	con_printf("snpm: race: %s: vCPU %u's VMPL0 decided: %s (vCPU %u %s; %llu parking "
		   "RMPADJUSTs held)\n",
		   race.kind, h->id, what, race.y->id,
		   race.state == R_HOLD ? "held until now" : "never held",
		   (unsigned long long)race.held);
	race.state = R_DONE;
}

/* The RMP's in-use answer for X's parking of the destroyed VMSA (delete race). */
static bool race_park_busy(gpa_t gpa)
{
	if (race.state != R_PARK || gpa != race.vmsa)
		return false;
	uint64_t hpa = hv_hpa(snpm_delete_race_addr);
	uint64_t waits = hpa == HV_NO_HPA ? 0 : *(volatile const uint64_t *)(uintptr_t)hpa;
	if (!waits) {
		race.held++;
		return true;
	}
	race.state = R_HOLD;
	con_printf("snpm: race: delete: DELETE_VCPU on vCPU %u waits for vCPU %u "
		   "(vcpu_delete_waits=%llu): vCPU %u descheduled, vCPU %u's parking goes on\n",
		   race.y->id, race.x->id, (unsigned long long)waits, race.y->id, race.x->id);
	kick(race.y);
	return false;
}

bool hv_run_vmpl(struct svm_vcpu *v, unsigned vmpl, bool msr)
{
	struct hv_vcpu *h = v->hv;
	/* VMPL0 runs any other VMPL; a guest VMPL only asks for a more
	 * privileged one that runs on this vCPU. */
	if (vmpl > 3 || vmpl == v->vmpl || (v->vmpl != 0 && (vmpl > v->vmpl || !h->ctx[vmpl])))
		return false;
	if (v->vmpl == 0) {
		race_decided(h, msr ? "the MSR-form VMPL request" : "GHCB RUN_VMPL");
		/*
		 * PATCH 58/60 __sev_snp_run_vmpl: a plane vCPU that does not
		 * exist is -EINVAL. sev_handle_vmgexit answers the GHCB form
		 * with INVALID_INPUT; the MSR form (sev_handle_vmgexit_msr_
		 * protocol) returns it, and KVM_RUN fails: QEMU stops the VM
		 * (kvm_cpu_exec, "kvm run failed").
		 */
		if (!h->ctx[vmpl]) {
			__atomic_add_fetch(&run_vmpl_never_created, 1, __ATOMIC_RELAXED);
			if (msr) {
				con_printf(
				    "snpm: host: vCPU %u: MSR-protocol VMPL request for plane "
				    "%u, which KVM never created: KVM_RUN fails with -EINVAL "
				    "(__sev_snp_run_vmpl), the VM stops\n",
				    h->id, vmpl);
				platform->terminate(false, 0, 0x27);
			}
			return false;
		}
		/*
		 * A plane vCPU without a VMSA (destroyed): accepted. The target
		 * is marked runnable and plane 0 stopped; the empty plane is
		 * selected and halts (sev_snp_init_protected_guest_state leaves
		 * it HALTED without a VMSA): the vCPU stalls until the plane gets
		 * a VMSA or an event for VMPL0 arrives.
		 */
		if (!h->vmsa[vmpl]) {
			if (!__atomic_fetch_add(&run_vmpl_no_vmsa, 1, __ATOMIC_RELAXED))
				con_printf(
				    "snpm: host: vCPU %u: VMPL0 asked to run plane %u, whose "
				    "VMSA was destroyed: accepted, the vCPU stalls until a new "
				    "VMSA or an event for VMPL0 (__sev_snp_run_vmpl)\n",
				    h->id, vmpl);
			h->serving = false;
			h->want = vmpl;
			__atomic_store_n(&v->leave, 1, __ATOMIC_RELEASE);
			return true;
		}
	}
	static bool launched;
	if (v->vmpl == 0 && !launched) {
		launched = true;
		counts_at_launch();
		if (snpm_nmi_vmpl0)
			hvs[0].nmi0 = true;
		hvs[0].irq0 = snpm_irq_vmpl0;
		snpm_launch_audit(vmpl, v->vmcb->save.cr3);
		/* VMPL0 started with FCW and MXCSR zero (the launch VMSA): what
		 * its entry set (issue 35 item 3; src/boot.S cpu_enable_fpu). */
		sim_fpu_enter();
		con_printf("snpm: launch: VMPL0 x87 fcw=0x%x mxcsr=0x%x (launch VMSA: "
			   "vmsa-fcw=0x%x vmsa-mxcsr=0x%x)\n",
			   *(const uint16_t *)v->xsave, *(const uint32_t *)(v->xsave + 24),
			   launch_vmsa.x87_fcw, launch_vmsa.mxcsr);
	}
	if (v->vmpl != 0 && vmpl == 0) {
		uint64_t rax = v->vmcb->save.rax;
		count_call(rax);
		/* core CREATE_VCPU (reference §1.5: R8 = APIC ID), for snpm.create_race. */
		pending_create[h->id] = rax == 2 ? (uint32_t)v->gprs.r8 + 1 : 0;
		h->halted0 = false;
		h->serving = true;
	}
	if (v->vmpl == 0) {
		h->serving = false;
		/* snpm.create_race: VMPL0 ends a CREATE_VCPU that succeeded (RAX 0
		 * in the guest VMSA, src/guest_snp.c serve) and resumes the guest. */
		if (snpm_create_race && race.state == R_IDLE && pending_create[h->id] &&
		    h->vmsa[vmpl] && vmsa_ptr(h->vmsa[vmpl])->rax == 0) {
			struct hv_vcpu *x = hv_by_apic(pending_create[h->id] - 1);
			if (x && x != h && x->ctx[0] && !x->ctx[vmpl]) {
				race = (typeof(race)){
				    .state = R_HOLD, .kind = "create", .x = x, .y = h};
				race_post_event(x);
				con_printf("snpm: race: create: vCPU %u's guest registered a VMSA "
					   "for vCPU %u (CREATE_VCPU) before its AP creation; an "
					   "interrupt for vCPU %u's VMPL0 ends its HLT, vCPU %u "
					   "descheduled\n",
					   h->id, x->id, x->id, h->id);
			}
		}
		pending_create[h->id] = 0;
	}
	h->want = vmpl;
	__atomic_store_n(&v->leave, 1, __ATOMIC_RELEASE);
	return true;
}

/*
 * HLT at VMPL0 (an automatic exit under SEV-ES/SNP, APM vol. 2 §15.35.4):
 * the host runs the vCPU's guest VMPL if it has a VMSA, else waits for one;
 * VMPL0 resumes after its HLT when the guest VMPL asks for it or an event
 * for VMPL0 arrives (coconut-svsm go_idle relies on this).
 */
void hv_halt(struct svm_vcpu *v)
{
	struct hv_vcpu *h = v->hv;
	v->vmcb->save.rip += 1; /* HLT is F4; SEV-ES hardware advances RIP itself */
	if (v->vmpl != 0)
		return;
	h->halted0 = true;
	h->serving = false;
	vmpl0_halts++;
	race_decided(h, "HLT");
	unsigned next = NO_VMPL;
	for (unsigned k = 1; k <= 3 && next == NO_VMPL; k++)
		if (h->vmsa[k])
			next = k;
	h->want = next;
	__atomic_store_n(&v->leave, 1, __ATOMIC_RELEASE);
}

/*
 * The #HV doorbell page NAE event as KVM serves it ("KVM: SVM: Add support
 * for the SEV-SNP #HV doorbell page NAE event", sev_snp_hv_doorbell_page):
 * GET_PREFERRED answers ~0; SET takes a page-aligned page the host can map
 * (here: one the guest has made shared, as guest_memfd maps no private
 * page) and answers its GPA, like QUERY; CLEAR drops it; anything else drops
 * it and fails. Per vCPU and VMPL (a plane's vcpu_svm).
 */
bool hv_doorbell_nae(struct svm_vcpu *v, uint64_t op, gpa_t gpa, uint64_t *out)
{
	struct hv_vcpu *h = v->hv;
	switch (op) {
	case GHCB_HVDB_GET_PREFERRED:
		*out = ~0ULL;
		return true;
	case GHCB_HVDB_SET:
		h->hvdb[v->vmpl] = 0;
		if ((h->id < 64 && (snpm_hv_doorbell_refuse >> h->id) & 1) ||
		    !IS_ALIGNED(gpa, PAGE_SIZE) || !sim_snp_host_may_touch(gpa, PAGE_SIZE))
			return false;
		h->hvdb[v->vmpl] = gpa;
		*out = gpa;
		return true;
	case GHCB_HVDB_QUERY:
		*out = h->hvdb[v->vmpl];
		return true;
	case GHCB_HVDB_CLEAR:
		h->hvdb[v->vmpl] = 0;
		*out = 0;
		return true;
	default:
		h->hvdb[v->vmpl] = 0;
		return false;
	}
}

/*
 * An event for VMPL0 under restricted injection (KVM "Inject #HV when
 * restricted injection is active"): the host posts it in the doorbell page,
 * an NMI as the NMI flag, an interrupt as its vector (sev_snp_inject,
 * INJECT_NMI / INJECT_IRQ), and injects #HV unless NoFurtherSignal is set,
 * which it then sets (prepare_hv_injection). Without a page the event is
 * blocked (sev_snp_blocked) and waits; so does one whose field still holds
 * the last event, which the guest has not taken. One event per entry, the
 * NMI first. Called as VMPL0 is entered. The machine, as that KVM, injects
 * no other event into VMPL0 (sev_snp_queue_exception drops an exception
 * other than #HV); the exceptions it does inject are the CPU's own, for
 * instructions it emulates.
 */
static void deliver_vmpl0_events(struct hv_vcpu *h, struct svm_vcpu *v)
{
	if (!h->nmi0 && !h->irq0)
		return;
	char what[24];
	if (h->nmi0)
		fmt_snprintf(what, sizeof(what), "NMI");
	else
		fmt_snprintf(what, sizeof(what), "interrupt 0x%x", h->irq0);
	gpa_t db = h->hvdb[0];
	if (!db || !sim_snp_host_may_touch(db, PAGE_SIZE)) {
		if (!blocked_reported++)
			con_printf("snpm: #HV: %s for VMPL0 of vCPU %u blocked: no #HV doorbell "
				   "page registered\n",
				   what, h->id);
		return;
	}
	volatile uint8_t *p = (volatile uint8_t *)(uintptr_t)hv_hpa(db);
	if (h->nmi0) {
		if (__atomic_load_n(&p[HVDB_FLAGS], __ATOMIC_ACQUIRE) & HVDB_FLAG_NMI)
			return;
		__atomic_fetch_or(&p[HVDB_FLAGS], HVDB_FLAG_NMI, __ATOMIC_ACQ_REL);
		h->nmi0 = false;
		nmi_delivered++;
	} else {
		if (__atomic_load_n(&p[HVDB_VECTOR], __ATOMIC_ACQUIRE))
			return;
		__atomic_store_n(&p[HVDB_VECTOR], h->irq0, __ATOMIC_RELEASE);
		h->irq0 = 0;
		irq_delivered++;
	}
	bool signal = !(__atomic_fetch_or(&p[HVDB_FLAGS], HVDB_FLAG_NO_FURTHER, __ATOMIC_ACQ_REL) &
			HVDB_FLAG_NO_FURTHER);
	if (signal)
		v->vmcb->ctl.event_inj = SVM_EVTINJ_VALID | SVM_EVTINJ_TYPE_EXCP | X86_VECTOR_HV;
	con_printf("snpm: #HV: %s for VMPL0 of vCPU %u posted in its doorbell page 0x%llx, %s\n",
		   what, h->id, (unsigned long long)db,
		   signal ? "#HV injected" : "NoFurtherSignal set: not signalled");
}

/*
 * While VMPL0 serves a guest request its guest VMSA must not be runnable
 * (issue 16 item 3): checked at each of VMPL0's VMGEXITs in that time.
 */
void hv_serving_audit(struct svm_vcpu *v)
{
	struct hv_vcpu *h = v->hv;
	if (v->vmpl != 0 || !h->serving)
		return;
	for (unsigned k = 1; k <= 3; k++)
		if (h->vmsa[k]) {
			serving_checks++;
			if (vmsa_ptr(h->vmsa[k])->efer & VMSA_EFER_SVME)
				serving_runnable++;
		}
}

__noreturn void hv_power_event(struct svm_vcpu *v)
{
	uint64_t switches, exits;
	struct sim_snp_counts c;
	hv_totals(&exits, &switches);
	sim_snp_get_counts(&c);
	con_printf("snpm: guest %s; %llu exits, %llu VMPL switches\n",
		   guest_power_event == 1 ? "powered off" : "requested a reset",
		   (unsigned long long)exits, (unsigned long long)switches);
	/* What the guest's run cost after csvsm's pre-acceptance (bench/accept_guest.sh). */
	con_printf("snpm: after-launch: exits=%llu vmpl-switches=%llu pvalidate=%llu "
		   "rmpadjust=%llu guest-psc-exits=%llu guest-psc-entries=%llu\n",
		   (unsigned long long)(exits - at_launch.exits),
		   (unsigned long long)(switches - at_launch.switches),
		   (unsigned long long)(c.pvalidate - at_launch.snp.pvalidate),
		   (unsigned long long)(c.rmpadjust - at_launch.snp.rmpadjust),
		   (unsigned long long)c.guest_psc_exits, (unsigned long long)c.guest_psc_entries);
	sim_snp_print_counts();
	sim_npf_print_counts();
	sim_npt_print_held();
	sim_io_print_refusals();
	print_calls();
	con_printf("snpm: serving-audit: checks=%llu guest-vmsa-runnable=%llu nmi-delivered=%llu "
		   "irq-delivered=%llu vmpl0-hlt=%llu vmsa-busy-answers=%llu "
		   "run-vmpl-never-created=%llu run-vmpl-no-vmsa=%llu destroy-stalls=%llu\n",
		   (unsigned long long)serving_checks, (unsigned long long)serving_runnable,
		   (unsigned long long)nmi_delivered, (unsigned long long)irq_delivered,
		   (unsigned long long)vmpl0_halts, (unsigned long long)vmsa_busy_answers,
		   (unsigned long long)__atomic_load_n(&run_vmpl_never_created, __ATOMIC_RELAXED),
		   (unsigned long long)__atomic_load_n(&run_vmpl_no_vmsa, __ATOMIC_RELAXED),
		   (unsigned long long)__atomic_load_n(&destroy_stalls, __ATOMIC_RELAXED));
	platform->terminate(guest_power_event == 1, 0, 0x23);
}

void hv_guest_terminated(struct svm_vcpu *v)
{
	if (v->vmpl == 0) /* csvsm's termination path has run: what is left? */
		snpm_key_scan("VMPL0 terminated");
}

/* ---- the vCPU loops ---- */

static __noreturn void hv_cpu_loop(struct hv_vcpu *h)
{
	for (;;) {
		unsigned w;
		/* Wait until this vCPU has something to run at the VMPL it wants. */
		for (;;) {
			w = __atomic_load_n(&h->want, __ATOMIC_ACQUIRE);
			/* snpm.*_race: the host keeps this vCPU descheduled. */
			if (__atomic_load_n(&race.state, __ATOMIC_ACQUIRE) == R_HOLD &&
			    race.y == h) {
				cpu_relax();
				continue;
			}
			if (w != NO_VMPL && (h->vmsa[w] || (w == 0 && h->id == 0)))
				break;
			/*
			 * Idle (VMPL0 halted, no guest VMSA to run) or stalled (the
			 * plane it wants has no VMSA): an event for VMPL0 that can
			 * be delivered (a #HV doorbell page is registered) makes
			 * plane 0 runnable (PATCH 52/60 "Switch to plane0 if it has
			 * events"); a blocked one does not (sev_snp_blocked).
			 */
			if (w != 0 && h->ctx[0] && (h->nmi0 || h->irq0) && h->hvdb[0]) {
				hv_exits_lock();
				if (h->want == w && (w == NO_VMPL || !h->vmsa[w])) {
					h->want = 0;
					h->halted0 = false;
				}
				hv_exits_unlock();
				continue;
			}
			cpu_relax();
		}
		struct svm_vcpu *v = h->ctx[w];
		hv_exits_lock();
		bool fresh = __atomic_exchange_n(&h->reload[w], 0, __ATOMIC_ACQ_REL);
		if (w == 0 && h->id == 0 && !launch_vmsa_used) {
			fresh = launch_vmsa_used = true;
		} else if (fresh || w != 0) {
			if (!h->vmsa[w]) { /* destroyed meanwhile */
				hv_exits_unlock();
				continue;
			}
			if (!vmsa_page_ok(h->vmsa[w], w,
					  fresh ? vmsa_ptr(h->vmsa[w])->sev_features
						: v->sev_features)) {
				con_printf("snpm: vCPU %u VMPL%u: VMSA 0x%llx is no longer a VMSA "
					   "page: VMRUN fails\n",
					   h->id, w, (unsigned long long)h->vmsa[w]);
				platform->terminate(false, 0, 0x21);
			}
			if (w != 0 && !(vmsa_ptr(h->vmsa[w])->efer & VMSA_EFER_SVME)) {
				/* APM vol. 2 §15.5.1: VMRUN fails if EFER.SVME is clear. */
				con_printf("snpm: vCPU %u VMPL%u: VMSA 0x%llx has EFER.SVME clear: "
					   "VMRUN fails\n",
					   h->id, w, (unsigned long long)h->vmsa[w]);
				platform->terminate(false, 0, 0x21);
			}
		}
		if (fresh || w != 0)
			ctx_load(h, w, fresh);
		if (w == 0)
			deliver_vmpl0_events(h, v);
		h->cur = w;
		h->switches++;
		v->leave = 0;
		h->in_run = h->vmsa[w];
		hv_exits_unlock();

		svm_guest_run(v);

		hv_exits_lock();
		h->in_run = 0;
		sim_fpu_enter(); /* its x87/SSE state into its context */
		/* Stopped: a switch it asked for, or its VMSA replaced or destroyed. */
		if (w != 0 && h->vmsa[w] && !h->reload[w])
			vmsa_from_vmcb(vmsa_ptr(h->vmsa[w]), v, VMSA_EXIT_VMGEXIT);
		/*
		 * Its guest VMPL's VMSA was destroyed while it ran (AP DESTROY):
		 * the planes KVM keeps that plane selected, HALTED without a VMSA
		 * (sev_snp_init_protected_guest_state; PATCH 35/60 selects the
		 * lowest runnable plane, and plane 0 was stopped when it asked
		 * for this one): the vCPU stalls, VMPL0 does not resume, until a
		 * new VMSA or an event for VMPL0 (the wait above).
		 */
		if (w != 0 && !h->vmsa[w] && h->want == w &&
		    !__atomic_fetch_add(&destroy_stalls, 1, __ATOMIC_RELAXED))
			con_printf(
			    "snpm: host: vCPU %u: its VMPL%u VMSA was destroyed while it ran: "
			    "the vCPU stalls until a new VMSA or an event for VMPL0\n",
			    h->id, w);
		hv_exits_unlock();
	}
}

/*
 * The RMP's in-use mark of a VMSA (APM vol. 2 §15.36.12): set by VMRUN,
 * cleared by #VMEXIT. The machine counts a vCPU as in VMRUN from its entry
 * until its VMPL is switched out (its exits are handled under the exit
 * lock, so an RMPADJUST, also handled under it, never sees one in between).
 */
static bool vmsa_in_run(gpa_t gpa)
{
	for (unsigned i = 0; i < n_hvs; i++)
		if (hvs[i].in_run == gpa)
			return true;
	if (race_park_busy(gpa))
		return true;
	/* snpm.vmsa_busy=N: a hostile host that runs a guest VMSA on another
	 * CPU while VMPL0 serves it; the next N RMPADJUSTs of a registered
	 * guest-VMPL VMSA made while VMPL0 serves find it in use. */
	if (__atomic_load_n(&snpm_vmsa_busy, __ATOMIC_RELAXED) == 0)
		return false;
	for (unsigned i = 0; i < n_hvs; i++)
		for (unsigned l = 1; l < 4; l++)
			if (hvs[i].vmsa[l] == gpa && hvs[i].serving) {
				if (__atomic_fetch_sub(&snpm_vmsa_busy, 1, __ATOMIC_RELAXED) == 0) {
					__atomic_store_n(&snpm_vmsa_busy, 0, __ATOMIC_RELAXED);
					return false;
				}
				__atomic_fetch_add(&vmsa_busy_answers, 1, __ATOMIC_RELAXED);
				return true;
			}
	return false;
}

static void hv_ap_entry(struct percpu *cpu)
{
	svm_cpu_enable();
	hv_cpu_loop(&hvs[cpu->id]);
}

__noreturn void snpm_run(const struct vmsa *bsp_vmsa)
{
	memcpy(&launch_vmsa, bsp_vmsa, sizeof(launch_vmsa));
	plane_features[0] = launch_vmsa.sev_features; /* KVM_SEV_INIT2's vmsa_features */
	n_hvs = cpu_count;
	for (unsigned i = 0; i < n_hvs; i++)
		hvs[i] = (struct hv_vcpu){
		    .id = i, .apic_id = percpus[i].apic_id, .want = NO_VMPL, .cur = NO_VMPL};
	/* The boot vCPU's VMPL0: the measured launch VMSA. */
	struct svm_vcpu *c = svm_vcpu_alloc();
	c->hv = &hvs[0];
	c->vmpl = 0;
	vmcb_init(c->vmcb, svm_npt_root(0));
	c->vmcb->ctl.asid = ASID_OF(0);
	c->vmcb->ctl.vintr |= VINTR_MASK;
	c->vmcb->ctl.intercept_misc1 |= SVM_INTERCEPT_HLT;
	hvs[0].ctx[0] = c;
	hvs[0].want = 0;
	rmp_vmsa_in_use = vmsa_in_run;
	smp_dispatch_aps(hv_ap_entry);
	hv_cpu_loop(&hvs[0]);
}
