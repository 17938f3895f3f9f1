/*
 * Restricted injection at VMPL0: the #HV doorbell (issue 16 item 3).
 *
 * csvsm's launch VMSA declares RestrictedInjection (include/csvsm/igvm_boot.h),
 * so the host may inject nothing into VMPL0 but #HV (vector 28), and tells
 * what it means through a per-vCPU doorbell page the guest registers (GHCB
 * spec 56421 §4.1.x; KVM "Inject #HV when restricted injection is active":
 * without a registered page KVM counts the vCPU's interrupts as blocked,
 * sev_snp_blocked; with one it writes the vector or the NMI flag there and
 * injects #HV unless NoFurtherSignal is set, prepare_hv_injection).
 *
 * csvsm takes no interrupts and has no use for an NMI: like coconut-svsm
 * (kernel/src/sev/hv_doorbell.rs process_pending_events: "NMIs are not
 * expected") it acknowledges and drops what the host signals, so that an
 * event for plane 0 (an NMI, a host IPI) no longer ends the VM. A #MC
 * cannot be handled: csvsm terminates, as coconut panics (through the MSR
 * protocol: the handler may have interrupted the console). The handler
 * touches only its own doorbell page and counters (it may interrupt csvsm
 * inside a GHCB call, so it never uses the GHCB or the console); the
 * request loop reports the counts.
 */
#include "arch/x86/insn.h"
#include "base/console.h"
#include "base/percpu.h"
#include "base/platform.h"
#include "base/string.h"
#include "csvsm/cpu.h"
#include "csvsm/exception.h"
#include "csvsm/hv_doorbell.h"
#include "mm/pool.h"
#include "snp/ghcb.h"
#include "snp/snp.h"

int snp_share_pages(void *va, unsigned npages);
void snp_ghcb_call(struct percpu *cpu, struct ghcb *ghcb);

static volatile uint8_t *pages[MAX_CPUS];      /* allocated and shared by the boot vCPU */
static volatile uint8_t *registered[MAX_CPUS]; /* the host took it for this vCPU */
static struct {
	uint64_t hv, nmi, vectors, no_page, reported;
} counts[MAX_CPUS];

static void hv_handler(struct exc_frame *f)
{
	/* An AP can take a #HV before its GS base is set: this_cpu() reads
	 * %gs:0 (the same guard as src/vc.c vc_entry; GS_BASE is swapped VMSA
	 * state, its RDMSR raises no #VC). */
	struct percpu *cpu = rdmsr(MSR_GS_BASE) ? this_cpu() : NULL;
	(void)f;
	if (!cpu || cpu->id >= MAX_CPUS)
		return;
	unsigned id = cpu->id;
	__atomic_fetch_add(&counts[id].hv, 1, __ATOMIC_RELAXED);
	volatile uint8_t *db = __atomic_load_n(&registered[id], __ATOMIC_ACQUIRE);
	if (!db) {
		__atomic_fetch_add(&counts[id].no_page, 1, __ATOMIC_RELAXED);
		return;
	}
	/* Clear NoFurtherSignal first, so that an event the host posts from
	 * now on is signalled again (coconut process_pending_events). */
	uint8_t flags = __atomic_fetch_and(
	    &db[HVDB_FLAGS], (uint8_t) ~(HVDB_FLAG_NO_FURTHER | HVDB_FLAG_NMI), __ATOMIC_ACQ_REL);
	/* A #MC cannot be handled. The handler may have interrupted csvsm in
	 * the console or a GHCB call, so it terminates through the MSR
	 * protocol (which wipes the secrets) instead of printing. The wipe
	 * first waits, bounded, for the other vCPUs to leave the heap and the
	 * libraries, which park at their next heap call (base/secret.c); this
	 * vCPU never returns to whatever it interrupted. */
	if (flags & HVDB_FLAG_MC)
		platform->terminate(false, GHCB_TERM_SET_GEN, GHCB_TERM_GEN_REQ);
	if (flags & HVDB_FLAG_NMI)
		__atomic_fetch_add(&counts[id].nmi, 1, __ATOMIC_RELAXED);
	/* One take per #HV: the page is the host's to write, and a loop until
	 * it reads 0 would let the host hold this vCPU in the handler. */
	if (__atomic_exchange_n(&db[HVDB_VECTOR], 0, __ATOMIC_ACQ_REL))
		__atomic_fetch_add(&counts[id].vectors, 1, __ATOMIC_RELAXED);
}

/* Right after the IDT: from then on a #HV without a doorbell page is counted and dropped. */
void hv_doorbell_init(void)
{
	exception_hv_handler = hv_handler;
}

void hv_doorbell_alloc(void)
{
	for (unsigned i = 0; i < cpu_count && i < MAX_CPUS; i++) {
		void *p = pool_alloc(PAGE_SIZE, PAGE_SIZE);
		if (snp_share_pages(p, 1))
			panic("snp: the #HV doorbell page of vCPU %u could not be shared", i);
		memset(p, 0, PAGE_SIZE); /* written only now that it is mapped shared */
		pages[i] = p;
	}
}

/*
 * Each vCPU registers its own page (the NAE event is per vCPU), if the host
 * reports restricted injection (GHCB_HV_FT_SNP_RINJ, bit 2). A host that
 * does not take it can deliver no event to VMPL0; that is a denial of
 * service the host has anyway, so csvsm says so and goes on.
 */
void hv_doorbell_register(struct percpu *cpu)
{
	uint64_t features = 0;
	if (cpu->id >= MAX_CPUS || !pages[cpu->id])
		return;
	if (ghcb_msr_hv_features_check(platform->ghcb_msr_call(ghcb_msr_hv_features_req()),
				       &features) ||
	    !(features & GHCB_HV_FT_RESTRICTED_INJ)) {
		con_printf("csvsm: vCPU %u: the host does not report restricted injection: no #HV "
			   "doorbell page\n",
			   cpu->id);
		return;
	}
	gpa_t gpa = (gpa_t)(uintptr_t)pages[cpu->id];
	ghcb_hv_doorbell_fill(cpu->ghcb, GHCB_HVDB_SET, gpa);
	snp_ghcb_call(cpu, cpu->ghcb);
	if (ghcb_hv_doorbell_check(cpu->ghcb, gpa)) {
		con_printf("csvsm: vCPU %u: the host refused the #HV doorbell page 0x%llx: events "
			   "for VMPL0 cannot be delivered\n",
			   cpu->id, (unsigned long long)gpa);
		return;
	}
	__atomic_store_n(&registered[cpu->id], pages[cpu->id], __ATOMIC_RELEASE);
}

/* From the request loop, where the console may be used: what #HV brought since last time. */
void hv_doorbell_report(struct percpu *cpu)
{
	if (cpu->id >= MAX_CPUS)
		return;
	uint64_t hv = __atomic_load_n(&counts[cpu->id].hv, __ATOMIC_RELAXED);
	if (hv == counts[cpu->id].reported)
		return;
	counts[cpu->id].reported = hv;
	con_printf("csvsm: #HV on vCPU %u: %llu events, %llu NMI, %llu vectors, %llu without a "
		   "doorbell page: acknowledged and dropped (csvsm takes no interrupts)\n",
		   cpu->id, (unsigned long long)hv,
		   (unsigned long long)__atomic_load_n(&counts[cpu->id].nmi, __ATOMIC_RELAXED),
		   (unsigned long long)__atomic_load_n(&counts[cpu->id].vectors, __ATOMIC_RELAXED),
		   (unsigned long long)__atomic_load_n(&counts[cpu->id].no_page, __ATOMIC_RELAXED));
}
