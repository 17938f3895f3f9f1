/*
 * sim platform, the front end of the hypervisor core (sim_svm.c, sim_snp.c,
 * sim_io.c) when csvsm itself is the host: the guest firmware on the boot
 * vCPU, csvsm's other vCPUs parked where a guest INIT cannot reach them and
 * lent to the guest's vCPUs (AP creation), an SVSM call (the guest's VMPL
 * switch request) served in place by csvsm's request code, and the
 * power-off report. The SNP machine (tests/snpm/vmpl.c) is the other front
 * end: there csvsm runs at VMPL0 in a context of its own.
 */
#include "arch/x86/insn.h"
#include "arch/x86/svm.h"
#include "csvsm/boot.h"
#include "csvsm/console.h"
#include "csvsm/cpu.h"
#include "csvsm/platform.h"
#include "csvsm/sim_guest.h"
#include "csvsm/string.h"
#include "csvsm/svsm_call.h"
#include "csvsm/vcpu.h"
#include "mm/guest_mem.h"
#include "mm/pool.h"
#include "sim_svm.h"
#include "snp/ghcb.h"
#include "snp/svsm.h"
#include "snp/vmsa.h"

#define NPT_P	  0x1ULL
#define NPT_RW	  0x2ULL
#define NPT_US	  0x4ULL
#define NPT_NX	  (1ULL << 63)
#define NPT_TABLE (NPT_P | NPT_RW | NPT_US)
#define ASID_GUEST 1

static struct svm_vcpu *bsp;
unsigned sim_park_check(void);

static void sim_svsm_call(struct svm_vcpu *v)
{
	struct svsm_regs r = {v->vmcb->save.rax, v->gprs.rcx, v->gprs.rdx, v->gprs.r8, v->gprs.r9};
	if (svsm_request(&v->gv, &r)) {
		v->svsm_calls++;
		v->vmcb->save.rax = r.rax;
		v->gprs.rcx = r.rcx;
		v->gprs.rdx = r.rdx;
		v->gprs.r8 = r.r8;
		v->gprs.r9 = r.r9;
	}
}


/* The guest's VMPL switch request: to VMPL0 is an SVSM call, served here. */
bool hv_run_vmpl(struct svm_vcpu *v, unsigned vmpl)
{
	if (vmpl != 0)
		return false;
	sim_svsm_call(v);
	return true;
}

/* The guest powered off or asked for a reset: report and end the VM. */
__noreturn void hv_power_event(struct svm_vcpu *v)
{
		con_printf(
		    "csvsm: guest %s after %llu exits (%llu I/O, %llu MSR, %llu VMGEXIT, "
		    "%llu SVSM calls, %llu #NPF); %llu INITs to csvsm's vCPUs absorbed\n",
		    sim_guest_power_event == 1 ? "powered off" : "requested a reset",
		    (unsigned long long)v->exits, (unsigned long long)v->io_exits,
		    (unsigned long long)v->msr_exits, (unsigned long long)v->vmgexits,
		    (unsigned long long)v->svsm_calls, (unsigned long long)v->npf_exits,
		    (unsigned long long)sim_park_init_count());
		con_printf(
		    "csvsm: exit-cost: vcpu=%u exits=%llu host_cycles_per_exit=%llu "
		    "vmrun_to_exit_cycles_per_exit=%llu\n",
		    v->gv.id, (unsigned long long)v->exits,
		    (unsigned long long)(v->host_cycles / (v->exits ? v->exits : 1)),
		    (unsigned long long)(v->guest_cycles / (v->exits ? v->exits : 1)));
		if (v->snp)
			sim_snp_print_counts();
		svsm_stats_print();
		unsigned ok = sim_park_check();
		con_printf("csvsm: vcpu-check: aps=%u responsive=%u\n", cpu_count - 1, ok);
		platform->terminate(sim_guest_power_event == 1 && ok == cpu_count - 1, 0,
				    0x23);
}

/* The guest asked to terminate: csvsm's counters, then the caller ends the VM. */
void hv_guest_terminated(struct svm_vcpu *v)
{
	svsm_stats_print();
}

__noreturn void sim_guest_start(const struct sim_guest_config *gc)
{
	struct cpuid_regs r;
	svm_host_init(gc, false);
	sim_park_aps();

	bsp = svm_vcpu_alloc();
	bsp->gv = (struct guest_vcpu){.id = 0, .vmpl = gc->vmpl, .caa = gc->caa};
	bsp->snp = gc->snp;
	bsp->vmpl = gc->vmpl;
	vmcb_init(bsp->vmcb, gc->snp, svm_npt_root(gc->vmpl));
	cpuid(1, &r);
	vmcb_reset_state(bsp, r.eax);
	boot_phase("guest", "OVMF at its reset vector, VMPL%u, CA 0x%llx; %llu KiB NPT", gc->vmpl,
		   (unsigned long long)gc->caa, (unsigned long long)(pool_used() >> 10));
	svm_guest_run(bsp, NULL);
	panic("the boot vCPU's guest loop returned");
}

/*
 * csvsm's own secondary vCPUs, once acceptance is done, wait inside a
 * minimal guest (`hlt; jmp .-1` at GPA 0 of a private nested map) with INIT,
 * NMI and SMI intercepted. Under TCG an INIT reaches a CPU even in host mode
 * and would restart it at the reset vector outside csvsm's control; OVMF
 * sends INIT-SIPI-SIPI to all other CPUs while it boots. Inside the parking
 * guest the INIT is a #VMEXIT instead, which csvsm counts and ignores.
 */
#define PARK_RIP 0x400
static uint64_t *park_npt;
static uint8_t *park_iopm, *park_msrpm;
static volatile uint64_t park_inits;

static void park_build(void)
{
	uint64_t *pdpt = pool_alloc(PAGE_SIZE, PAGE_SIZE), *pd = pool_alloc(PAGE_SIZE, PAGE_SIZE);
	uint64_t *pt = pool_alloc(PAGE_SIZE, PAGE_SIZE);
	uint8_t *code = pool_alloc(PAGE_SIZE, PAGE_SIZE), *stack = pool_alloc(PAGE_SIZE, PAGE_SIZE);
	/* Real-mode IVT at 0: every vector -> 0000:0500. QEMU 7.2 leaves an
	 * intercepted NMI pending (like INIT), so NMIs are delivered to this
	 * guest instead, whose handler reports them with VMMCALL. */
	for (unsigned i = 0; i < 256; i++)
		code[4 * i] = 0x00, code[4 * i + 1] = 0x05, code[4 * i + 2] = 0,
			 code[4 * i + 3] = 0;
	code[PARK_RIP] = 0xF4, code[PARK_RIP + 1] = 0xEB,
	code[PARK_RIP + 2] = 0xFD;				    /* hlt; jmp .-1 */
	code[0x500] = 0x0F, code[0x501] = 0x01, code[0x502] = 0xD9; /* vmmcall */
	code[0x503] = 0xCF;					    /* iret */
	park_npt = pool_alloc(PAGE_SIZE, PAGE_SIZE);
	park_npt[0] = (uint64_t)(uintptr_t)pdpt | NPT_TABLE;
	pdpt[0] = (uint64_t)(uintptr_t)pd | NPT_TABLE;
	pd[0] = (uint64_t)(uintptr_t)pt | NPT_TABLE;
	pt[0] = (uint64_t)(uintptr_t)code | NPT_P | NPT_US; /* read/execute only */
	pt[1] = (uint64_t)(uintptr_t)stack | NPT_P | NPT_RW | NPT_US | NPT_NX;
	park_iopm = pool_alloc(3 * PAGE_SIZE, PAGE_SIZE);
	memset(park_iopm, 0xFF, 3 * PAGE_SIZE);
	park_msrpm = pool_alloc(2 * PAGE_SIZE, PAGE_SIZE);
	memset(park_msrpm, 0xFF, 2 * PAGE_SIZE);
}

/*
 * Guest vCPUs made with CREATE_VCPU and started with the GHCB AP creation
 * event (reference §4.5) run on a parked csvsm vCPU: csvsm turns the VMSA
 * into a VMCB and hands it over with an NMI; DESTROY stops it the same way.
 */
struct ap_job {
	struct guest_vmsa_slot *slot;	 /* set by the requester, cleared when taken */
	struct guest_vmsa_slot *running; /* the one it runs (DESTROY finds it by this) */
	volatile uint32_t stop;
	volatile uint32_t busy;
	struct svm_vcpu *v;
};
static struct ap_job ap_jobs[MAX_CPUS];

static void ap_run_job(struct percpu *cpu)
{
	struct ap_job *j = &ap_jobs[cpu->id];
	struct guest_vmsa_slot *slot = __atomic_exchange_n(&j->slot, NULL, __ATOMIC_ACQ_REL);
	if (!slot)
		return;
	if (!j->v)
		j->v = svm_vcpu_alloc();
	struct svm_vcpu *v = j->v;
	struct vmcb *vm = v->vmcb;
	/* The wake-up NMI's handler has not returned yet (it exited to csvsm):
	 * unblock NMIs, or a TLB shootdown kick could never reach this vCPU. */
	nmi_unblock();
	memset(vm, 0, sizeof(*vm));
	svm_vcpu_fpu_reset(v);
	v->snp = bsp->snp;
	v->vmpl = bsp->vmpl;
	vmcb_init(vm, v->snp, svm_npt_root(v->vmpl));
	vm->ctl.asid = ASID_GUEST; /* same guest, same nested page tables */
	/* The VMSA page is read-only to the guest since CREATE_VCPU (RMP VMSA bit). */
	vmcb_from_vmsa(v, (const struct vmsa *)guest_mem_ptr(slot->vmsa));
	v->ghcb_msr = v->ghcb_gpa = 0;
	v->gv = (struct guest_vcpu){.id = cpu->id, .vmpl = bsp->gv.vmpl, .caa = slot->caa};
	svm_guest_run(v, &j->stop);
	hv_exits_lock();
	slot->running = false;
	j->running = NULL;
	__atomic_store_n(&j->stop, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&j->busy, 0, __ATOMIC_RELEASE);
	hv_exits_unlock();
}

/* GHCB AP creation from the guest (runs under the exit lock). 0 or -1. */
uint64_t ap_create(struct svm_vcpu *v, uint64_t info1, gpa_t vmsa, uint64_t sev_features)
{
	unsigned event = (uint32_t)info1 & ~(0xFu << SVM_VMGEXIT_AP_VMPL_SHIFT);
	unsigned vmpl = ((uint32_t)info1 >> SVM_VMGEXIT_AP_VMPL_SHIFT) & 0xF;
	struct guest_vmsa_slot *slot = vcpu_find(vmsa);
	if (!slot || vmpl != v->gv.vmpl)
		return (uint64_t)-1;
	if (event == SVM_VMGEXIT_AP_DESTROY) {
		for (unsigned i = 1; i < cpu_count; i++)
			/* By the slot, not the calling area: REMAP_CA moves that. */
			if (ap_jobs[i].busy && ap_jobs[i].running == slot && slot->running) {
				__atomic_store_n(&ap_jobs[i].stop, 1, __ATOMIC_RELEASE);
				hv_send_nmi(percpus[i].apic_id); /* out of an idle HLT: intercept it */
				/* The vCPU leaves its loop once halted; it needs the exit lock. */
				hv_exits_unlock();
				uint64_t t0 = timer_us();
				while (__atomic_load_n(&ap_jobs[i].busy, __ATOMIC_ACQUIRE) &&
				       timer_us() - t0 < 1000000)
					cpu_relax();
				hv_exits_lock();
				if (!ap_jobs[i].busy)
					return 0;
				__atomic_store_n(&ap_jobs[i].stop, 0, __ATOMIC_RELEASE);
				return (
				    uint64_t)-1; /* still running: not halted with interrupts off */
			}
		return (uint64_t)-1;
	}
	if ((event != SVM_VMGEXIT_AP_CREATE && event != SVM_VMGEXIT_AP_CREATE_ON_INIT) ||
	    slot->running || sev_features != vcpu_guest_sev_features)
		return (uint64_t)-1;
	/* The guest's vCPU with APIC ID n runs on csvsm's vCPU with the same
	 * APIC ID (the guest's MADT and IPIs name it), as KVM has one vCPU per
	 * APIC ID. */
	uint32_t apic_id = (uint32_t)(info1 >> SVM_VMGEXIT_AP_APIC_ID_SHIFT);
	for (unsigned i = 1; i < cpu_count; i++) {
		struct ap_job *j = &ap_jobs[i];
		if (percpus[i].apic_id != apic_id)
			continue;
		if (!percpus[i].parked || __atomic_exchange_n(&j->busy, 1, __ATOMIC_ACQ_REL))
			break;
		slot->running = true;
		j->running = slot;
		__atomic_store_n(&j->slot, slot, __ATOMIC_RELEASE);
		hv_send_nmi(percpus[i].apic_id);
		return 0;
	}
	con_printf("csvsm: AP creation for APIC ID %u refused: csvsm has no free vCPU with it "
		   "(-smp)\n",
		   apic_id);
	return (uint64_t)-1;
}

static __noreturn void park_self(struct percpu *cpu)
{
	struct svm_vcpu *v = pool_alloc(sizeof(*v), PAGE_SIZE);
	v->xsave = pool_alloc(PAGE_SIZE, PAGE_SIZE); /* x87/SSE init state: XSTATE_BV = 0 */
	*(uint32_t *)(v->xsave + 24) = 0x1F80;
	v->fpu_saved = 1;
	svm_cpu_enable();
	v->vmcb = pool_alloc(PAGE_SIZE, PAGE_SIZE);
	v->vmcb_pa = (uint64_t)(uintptr_t)v->vmcb;
	v->host_save_pa = (uint64_t)(uintptr_t)pool_alloc(PAGE_SIZE, PAGE_SIZE);
	struct vmcb_control *c = &v->vmcb->ctl;
	c->intercept_misc1 = SVM_INTERCEPT_INIT | SVM_INTERCEPT_SMI | SVM_INTERCEPT_IOIO_PROT |
			     SVM_INTERCEPT_MSR_PROT | SVM_INTERCEPT_SHUTDOWN;
	c->intercept_misc2 = SVM_INTERCEPT_VMRUN | SVM_INTERCEPT_VMMCALL;
	c->iopm_base_pa = (uint64_t)(uintptr_t)park_iopm;
	c->msrpm_base_pa = (uint64_t)(uintptr_t)park_msrpm;
	c->asid = 2 + cpu->id;
	c->nested_ctl = SVM_NESTED_CTL_NP_ENABLE;
	c->nested_cr3 = (uint64_t)(uintptr_t)park_npt;
	struct vmcb_save *s = &v->vmcb->save;
	vmcb_seg(&s->cs, 0, 0, 0xFFFF, 0x9B);
	vmcb_seg(&s->ds, 0, 0, 0xFFFF, 0x93);
	vmcb_seg(&s->es, 0, 0, 0xFFFF, 0x93);
	vmcb_seg(&s->ss, 0, 0, 0xFFFF, 0x93);
	vmcb_seg(&s->fs, 0, 0, 0xFFFF, 0x93);
	vmcb_seg(&s->gs, 0, 0, 0xFFFF, 0x93);
	vmcb_seg(&s->ldtr, 0, 0, 0xFFFF, 0x82);
	vmcb_seg(&s->tr, 0, 0, 0xFFFF, 0x8B);
	vmcb_seg(&s->gdtr, 0, 0, 0xFFFF, 0);
	vmcb_seg(&s->idtr, 0, 0, 0x3FF, 0);
	s->efer = EFER_SVME;
	s->cr0 = 0x10;
	s->rflags = 0x2; /* IF = 0: only INIT/NMI/SMI end the HLT */
	s->rip = PARK_RIP;
	s->rsp = 0x2000; /* the stack page at GPA 0x1000 */
	s->dr6 = 0xFFFF0FF0ULL;
	s->dr7 = 0x400;
	s->g_pat = 0x0007040600070406ULL;
	__atomic_store_n(&cpu->parked, 1, __ATOMIC_RELEASE);
	for (;;) {
		svm_vmrun(v);
		uint32_t code = (uint32_t)c->exit_code;
		if (code == SVM_EXIT_INIT)
			__atomic_fetch_add(&park_inits, 1, __ATOMIC_RELAXED);
		else if (code == SVM_EXIT_VMMCALL) { /* the NMI handler: csvsm's own signal */
			__atomic_fetch_add(&cpu->pings, 1, __ATOMIC_RELEASE);
			s->rip += 3;
			ap_run_job(cpu);
		} else if (code != SVM_EXIT_SMI) {
			con_printf("csvsm: vCPU %u: parking guest exit 0x%x\n", cpu->id, code);
			platform->terminate(false, 0, 0x24);
		}
	}
}

uint64_t sim_park_init_count(void)
{
	return park_inits;
}

/* Proof that csvsm still owns its secondary vCPUs: each answers an NMI from
 * inside the parking guest (a vCPU the guest had reset would not). */
unsigned sim_park_check(void)
{
	unsigned ok = 0;
	for (unsigned i = 1; i < cpu_count; i++) {
		if (ap_jobs[i].busy) { /* running a guest vCPU in csvsm's own loop */
			ok++;
			continue;
		}
		uint32_t before = __atomic_load_n(&percpus[i].pings, __ATOMIC_ACQUIRE);
		hv_send_nmi(percpus[i].apic_id);
		uint64_t t0 = timer_us();
		while (__atomic_load_n(&percpus[i].pings, __ATOMIC_ACQUIRE) == before &&
		       timer_us() - t0 < 500000)
			cpu_relax();
		if (percpus[i].pings != before && percpus[i].parked)
			ok++;
	}
	return ok;
}

void sim_park_aps(void)
{
	park_build();
	smp_dispatch_aps(park_self);
	for (unsigned i = 1; i < cpu_count; i++)
		while (!__atomic_load_n(&percpus[i].parked, __ATOMIC_ACQUIRE))
			cpu_relax();
}
