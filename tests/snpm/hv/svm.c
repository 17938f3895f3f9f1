/*
 * The SNP machine's hypervisor core (first written as csvsm's sim platform):
 * an AMD-SVM host running each VMPL of each vCPU (sim notes §3, §5). Nested page tables stand in
 * for the RMP's VMPL permissions and are derived from the RMP model, so a guest CPU access to csvsm
 * memory (or any page not granted to its VMPL) exits as #NPF, which handle_npf answers as hardware,
 * KVM and QEMU would (docs/snp-machine.md "Faults as a KVM host sees them"). VMGEXIT
 * (`rep vmmcall`, 4 bytes: no NRIP on TCG, pitfall 1) is the GHCB exit to the host.
 */
#include "arch/x86/insn.h"
#include "arch/x86/svm.h"
#include "csvsm/boot.h"
#include "base/console.h"
#include "csvsm/cpu.h"
#include "base/platform.h"
#include "tests/snpm/model/guest_config.h"
#include "base/string.h"
#include "base/svsm_call.h"
#include "csvsm/vcpu.h"
#include "mm/guest_mem.h"
#include "mm/guest_walk.h"
#include "mm/memmap.h"
#include "mm/pool.h"
#include "tests/snpm/model/rmp.h"
#include "svm.h"
#include "snp/ghcb.h"
#include "snp/svsm.h"
#include "snp/vmsa.h"

#define NPT_P	  0x1ULL
#define NPT_RW	  0x2ULL
#define NPT_US	  0x4ULL
#define NPT_PS	  0x80ULL
#define NPT_NX	  (1ULL << 63)
#define NPT_ADDR  0x000FFFFFFFFFF000ULL
#define NPT_TABLE (NPT_P | NPT_RW | NPT_US)

#define MSR_EFER_NR	 0xC0000080u
#define LAPIC_GPA	 0xFEE00000ULL
#define LAPIC_ICR_LO	 0x300
#define LAPIC_ICR_HI	 0x310
#define APIC_BASE_X2APIC (1ULL << 10)
#define EFER_LMA	 (1ULL << 10)
#define ASID_GUEST	 1

static const struct memmap *npt_mm;
/* Machine mode: one nested table per VMPL (VMPL0: csvsm; the guest VMPL). */
const char *hv_tag = "csvsm";
static uint64_t *npt_root[4];
static unsigned npt_roots[4], npt_nroots;
/* Machine mode: launch-image pages outside guest RAM, backed by machine memory. */
static struct {
	gpa_t gpa;
	uint64_t size;
	uint8_t *hpa;
} hv_back[32];
static unsigned n_hv_back;
static gpa_t npt_top;
#define SIM_CBIT_MASK (1ULL << 51)
/* snpm.hv_nest: the one page a hostile host has unmapped in VMPL0's nested table. */
static volatile gpa_t nest_hole = UINT64_MAX;
/* snpm.redzone (redzone.c): pages unmapped in VMPL0's nested table so that their next access
 * exits. */
static volatile gpa_t vmpl0_holes[2] = {UINT64_MAX, UINT64_MAX};

static uint8_t *iopm, *msrpm;

/*
 * Guest vCPUs run on several csvsm vCPUs (the boot vCPU runs the firmware,
 * parked ones run vCPUs made with CREATE_VCPU). Exit handling touches shared
 * state (device models, the RMP model, nested page tables, the protocol
 * tables), so one exit is handled at a time.
 */
static volatile uint32_t exit_lock;
void hv_exits_lock(void)
{
	while (__atomic_exchange_n(&exit_lock, 1, __ATOMIC_ACQUIRE))
		cpu_relax();
}
void hv_exits_unlock(void)
{
	__atomic_store_n(&exit_lock, 0, __ATOMIC_RELEASE);
}

/*
 * TLB shootdown. Nested page tables are shared by every guest vCPU (one
 * ASID), and a guest vCPU on another CPU keeps its translations until it
 * leaves guest mode. Every change to the nested tables bumps flush_gen; a
 * vCPU entering guest mode with a newer generation flushes its ASID first
 * (TLB_CONTROL). A revocation is relied on only after sim_flush_guest_tlb:
 * each vCPU still in guest mode with an older generation gets an NMI (NMIs
 * are intercepted in guest VMCBs) and is waited for until it has left.
 */
static volatile uint64_t flush_gen;

/*
 * A VMCB whose save area holds the machine's own state (its CR3 and CS)
 * after an exit other than VMEXIT_INVALID: the next VMRUN would run the
 * machine's code as the guest. QEMU writes the host's state there when a
 * VMRUN fails its consistency checks (struct vmrun_checked), which is what
 * was once seen under multi-threaded TCG and read as a TCG fault; that exit
 * is reported with the check it failed (SVM_EXIT_INVALID in svm_guest_run).
 * Any other exit with this state is a fault of the emulator: stop at once.
 */
static void check_exit_state(const struct svm_vcpu *v)
{
	if ((uint32_t)v->vmcb->ctl.exit_code == SVM_EXIT_INVALID)
		return;
	if (v->vmcb->save.cr3 == read_cr3() && v->vmcb->save.cs.sel == read_cs())
		panic("vCPU %u: the VMCB holds the machine's own state after exit 0x%llx", v->gv.id,
		      (unsigned long long)v->vmcb->ctl.exit_code);
}

#define CR0_PE	 (1ULL << 0)
#define CR0_NW	 (1ULL << 29)
#define CR0_CD	 (1ULL << 30)
#define CR0_PG	 (1ULL << 31)
#define CR4_PAE	 (1ULL << 5)
#define EFER_LME (1ULL << 8)
#define SEG_L	 (1u << 9)  /* VMCB attrib: long-mode code segment */
#define SEG_DB	 (1u << 10) /* VMCB attrib: default operand size */

bool hv_vmrun_invalid_once;

/*
 * APM vol. 2 §15.5.1, "Canonicalization and Consistency Checks", the ones
 * the machine can name from struct vmrun_checked; QEMU's helper_vmrun
 * (target/i386/tcg/sysemu/svm_helper.c) makes the same ones, an exception
 * injected with vector 2 or above 30 included (§15.20 "Illegal event
 * injection"; QEMU refuses vector 31 too).
 */
const char *vmrun_rejected_why(const struct vmrun_checked *c)
{
	bool lme_pg = (c->efer & EFER_LME) && (c->cr0 & CR0_PG);
	unsigned type = (unsigned)((c->event_inj & SVM_EVTINJ_TYPE_MASK) >> SVM_EVTINJ_TYPE_SHIFT);
	unsigned vec = (unsigned)(c->event_inj & SVM_EVTINJ_VEC_MASK);
	if (!(c->efer & EFER_SVME))
		return "EFER.SVME is clear";
	if ((c->cr0 & CR0_NW) && !(c->cr0 & CR0_CD))
		return "CR0.NW is set and CR0.CD clear";
	if (c->cr0 >> 32)
		return "CR0[63:32] is not zero";
	if (c->dr6 >> 32 || c->dr7 >> 32)
		return "DR6[63:32] or DR7[63:32] is not zero";
	if (lme_pg && !(c->cr4 & CR4_PAE))
		return "EFER.LME and CR0.PG are set and CR4.PAE is clear";
	if (lme_pg && !(c->cr0 & CR0_PE))
		return "EFER.LME and CR0.PG are set and CR0.PE is clear";
	if (lme_pg && (c->cr4 & CR4_PAE) && (c->cs_attrib & SEG_L) && (c->cs_attrib & SEG_DB))
		return "EFER.LME, CR0.PG, CR4.PAE, CS.L and CS.D are all set";
	if (c->asid == 0)
		return "ASID is 0";
	if ((c->event_inj & SVM_EVTINJ_VALID) &&
	    (type == 1 || type > 4 || (type == 3 && (vec == 2 || vec > 30))))
		return "EVENTINJ holds an illegal event";
	return NULL;
}

static void vmrun_record(struct svm_vcpu *v)
{
	const struct vmcb *m = v->vmcb;
	v->pre = (struct vmrun_checked){.cr0 = m->save.cr0,
					.cr3 = m->save.cr3,
					.cr4 = m->save.cr4,
					.efer = m->save.efer,
					.dr6 = m->save.dr6,
					.dr7 = m->save.dr7,
					.event_inj = m->ctl.event_inj,
					.asid = m->ctl.asid,
					.cs_attrib = m->save.cs.attrib};
}

/* The guest vCPU each csvsm vCPU runs (its exits are handled there). */
static struct svm_vcpu *cur_vcpu[MAX_CPUS];

unsigned sim_cur_vmpl(void)
{
	struct percpu *cpu = this_cpu();
	struct svm_vcpu *v = cpu && cpu->id < MAX_CPUS ? cur_vcpu[cpu->id] : NULL;
	return v ? v->vmpl : 3;
}

/*
 * csvsm's own code uses general registers only, so a guest's x87/SSE/AVX
 * state stays in the registers across its exits (svm_entry.S). Before code
 * that uses them runs (the crypto and TPM libraries), the guest's state is
 * saved once per exit and the registers get the defaults the libraries
 * expect (a guest's MXCSR could unmask exceptions); the next entry restores
 * the guest's state, which also overwrites whatever the libraries left.
 */
void sim_fpu_enter(void)
{
	struct percpu *cpu = this_cpu();
	struct svm_vcpu *v = cpu ? cur_vcpu[cpu->id] : NULL;
	if (!v || v->fpu_saved)
		return;
	xsave_all(v->xsave);
	v->fpu_saved = 1;
	fpu_reset();
}

/*
 * snpm.hv_nest=ADDR: a hostile host nests #HV injections into VMPL0 (hostile
 * review of the #HV change, finding 1). At VMPL0's first exit after it has
 * loaded an IDT with a #HV gate, the host unmaps the page of that gate's
 * handler in VMPL0's nested table and injects #HV. Each delivery pushes a
 * frame and then faults on the handler's first fetch, an NPF to the host,
 * which injects again: csvsm runs no instruction. Without an IST stack RSP
 * walks down 48 bytes a time until a push faults (the guard pages under
 * the boot stack: #PF, #DF, shutdown); with one (csvsm's #HV gate, issue
 * 34) every frame lands at the same IST top, until HV_NEST_MAX injections;
 * then the host maps the page again and lets the handler run, which finds
 * it interrupted on its own IST stack and terminates (src/exception.S). The page holding ADDR
 * (csvsm's `platform`, from nm: the .bss under the boot stack) is compared before and after.
 * Restricted injection lets a real host do all of this; nothing in it is KVM's.
 */
#define HV_NEST_MAX 4096
uint64_t hv_nest_addr; /* 0: off */
static enum { NEST_IDLE, NEST_ARMED, NEST_ON, NEST_DONE } nest_state;
static unsigned nest_count;
static struct svm_vcpu *nest_vcpu; /* the one context the attack runs on */
/* RSP before the attack; the lowest and highest after a delivery. */
static uint64_t nest_rsp0, nest_rsp_low = UINT64_MAX, nest_rsp_high;
static uint8_t nest_page0[PAGE_SIZE]; /* the watched page, before */

static const uint8_t *nest_page(void)
{
	return (const uint8_t *)(uintptr_t)hv_hpa(ALIGN_DOWN(hv_nest_addr, PAGE_SIZE));
}

static void nest_report(const struct svm_vcpu *v, const char *end)
{
	const uint8_t *p = nest_page();
	unsigned changed = 0;
	for (unsigned i = 0; i < PAGE_SIZE; i++)
		changed += p[i] != nest_page0[i];
	con_printf("%s: hv-nest: %u #HV injected without a handler instruction, RSP 0x%llx -> "
		   "0x%llx (lowest 0x%llx, highest 0x%llx), then %s; the page at 0x%llx: %u bytes "
		   "changed\n",
		   hv_tag, nest_count, (unsigned long long)nest_rsp0,
		   (unsigned long long)v->vmcb->save.rsp, (unsigned long long)nest_rsp_low,
		   (unsigned long long)nest_rsp_high, end,
		   (unsigned long long)ALIGN_DOWN(hv_nest_addr, PAGE_SIZE), changed);
}

/* At each of VMPL0's exits while the option is on: true if the exit was the attack's own. */
static bool hv_nest_exit(struct svm_vcpu *v)
{
	const struct vmcb_save *s = &v->vmcb->save;
	uint32_t code = (uint32_t)v->vmcb->ctl.exit_code;
	/* The IDT counts once VMPL0 runs in long mode with a present 64-bit
	 * interrupt gate for #HV (the launch state may hold any IDTR). The
	 * IDT's base and the handler's address are virtual: csvsm maps its
	 * memory identity (mm/pgtable.c), so they are its GPAs too. One
	 * context only: it starts on the first exit that qualifies, which is
	 * the boot vCPU's early boot (no AP exists yet), and nothing else of
	 * the attack's state is looked at from another context. */
	uint64_t gate_gpa = s->idtr.base + X86_VECTOR_HV * 16;
	if (nest_vcpu && nest_vcpu != v)
		return false;
	if (nest_state == NEST_IDLE && (s->efer & EFER_LMA) &&
	    s->idtr.limit >= X86_VECTOR_HV * 16 + 15 && hv_hpa(gate_gpa) != HV_NO_HPA &&
	    (((const uint8_t *)(uintptr_t)hv_hpa(gate_gpa))[5] & 0x8F) == 0x8E) {
		const uint8_t *gate = (const uint8_t *)(uintptr_t)hv_hpa(gate_gpa);
		uint64_t off =
		    (uint64_t)(gate[0] | gate[1] << 8) | (uint64_t)(gate[6] | gate[7] << 8) << 16 |
		    (uint64_t)(gate[8] | gate[9] << 8 | gate[10] << 16 | (uint32_t)gate[11] << 24)
			<< 32;
		if (hv_hpa(ALIGN_DOWN(hv_nest_addr, PAGE_SIZE)) == HV_NO_HPA ||
		    hv_hpa(ALIGN_DOWN(off, PAGE_SIZE)) == HV_NO_HPA) {
			con_printf("%s: hv-nest: 0x%llx or the #HV handler 0x%llx is not guest "
				   "memory: not started\n",
				   hv_tag, (unsigned long long)hv_nest_addr,
				   (unsigned long long)off);
			nest_state = NEST_DONE;
			return false;
		}
		nest_vcpu = v;
		nest_hole = ALIGN_DOWN(off, PAGE_SIZE);
		sim_npt_sync(nest_hole, PAGE_SIZE);
		nest_rsp0 = s->rsp;
		memcpy(nest_page0, nest_page(), PAGE_SIZE);
		nest_state = NEST_ARMED;
		con_printf(
		    "%s: hv-nest: VMPL0's IDT is loaded (exit 0x%x, RSP 0x%llx); its #HV handler "
		    "0x%llx unmapped in VMPL0's nested table, #HV injected\n",
		    hv_tag, code, (unsigned long long)s->rsp, (unsigned long long)off);
		return false;
	}
	if (nest_state != NEST_ON)
		return false;
	if (code == SVM_EXIT_NPF &&
	    ALIGN_DOWN(v->vmcb->ctl.exit_info_2 & ~SIM_CBIT_MASK, PAGE_SIZE) == nest_hole) {
		nest_rsp_low = MIN(nest_rsp_low, s->rsp);
		nest_rsp_high = MAX(nest_rsp_high, s->rsp);
		if (++nest_count < HV_NEST_MAX) {
			v->vmcb->ctl.event_inj =
			    SVM_EVTINJ_VALID | SVM_EVTINJ_TYPE_EXCP | X86_VECTOR_HV;
			return true;
		}
		nest_report(v, "the host let the handlers run");
		nest_state = NEST_DONE;
		nest_hole = UINT64_MAX;
		sim_npt_sync(ALIGN_DOWN(v->vmcb->ctl.exit_info_2 & ~SIM_CBIT_MASK, PAGE_SIZE),
			     PAGE_SIZE);
		return true;
	}
	if (code == SVM_EXIT_SHUTDOWN) {
		nest_rsp_low = MIN(nest_rsp_low, s->rsp);
		nest_rsp_high = MAX(nest_rsp_high, s->rsp);
		nest_report(v, "shutdown (a push faulted)");
		nest_state = NEST_DONE;
	}
	return false;
}

static void vcpu_vmrun(struct svm_vcpu *v)
{
	if (nest_state == NEST_ARMED && v == nest_vcpu) {
		v->vmcb->ctl.event_inj = SVM_EVTINJ_VALID | SVM_EVTINJ_TYPE_EXCP | X86_VECTOR_HV;
		nest_state = NEST_ON;
	}
	cur_vcpu[this_cpu()->id] = v;
	__atomic_store_n(&v->in_guest, 1, __ATOMIC_SEQ_CST);
	uint64_t g = __atomic_load_n(&flush_gen, __ATOMIC_SEQ_CST);
	if (g != v->seen_gen) {
		v->vmcb->ctl.tlb_control = 1; /* flush this ASID on VMRUN */
		v->seen_gen = g;
	}
	__atomic_store_n(&v->entry_gen, g, __ATOMIC_SEQ_CST);
	uint64_t t0 = rdtsc();
	if (v->exit_tsc)
		v->host_cycles += t0 - v->exit_tsc; /* csvsm's handling of the last exit */
	if (v->vmpl == 0 && __atomic_exchange_n(&hv_vmrun_invalid_once, false, __ATOMIC_ACQ_REL)) {
		v->vmcb->save.cr0 = (v->vmcb->save.cr0 | CR0_NW) & ~CR0_CD;
		con_printf("%s: vCPU %u VMPL0: CR0.NW set without CR0.CD for one VMRUN "
			   "(snpm.vmrun_invalid=1)\n",
			   hv_tag, v->gv.id);
	}
	vmrun_record(v);
	svm_vmrun(v);
	v->exit_tsc = rdtsc();
	v->guest_cycles += v->exit_tsc - t0; /* world switches and the guest's own work */
	__atomic_store_n(&v->in_guest, 0, __ATOMIC_SEQ_CST);
	v->vmcb->ctl.tlb_control = 0;
	check_exit_state(v);
}

void sim_flush_guest_tlb(void)
{
	uint64_t g = __atomic_add_fetch(&flush_gen, 1, __ATOMIC_SEQ_CST);
	struct percpu *self = this_cpu();
	for (unsigned i = 0; i < cpu_count; i++) {
		struct svm_vcpu *v = cur_vcpu[i];
		if (!v || (self && i == self->id))
			continue;
		uint64_t t0 = timer_us();
		bool kicked = false;
		while (__atomic_load_n(&v->in_guest, __ATOMIC_SEQ_CST) &&
		       __atomic_load_n(&v->entry_gen, __ATOMIC_SEQ_CST) < g) {
			if (!kicked) {
				hv_send_nmi(percpus[i].apic_id);
				kicked = true;
			}
			if (timer_us() - t0 > 1000000)
				panic("vCPU %u did not leave guest mode for a TLB shootdown", i);
			cpu_relax();
		}
	}
}

/* ---- nested page tables ---- */

static uint64_t *npt_table(uint64_t *entry)
{
	if (!(*entry & NPT_P))
		*entry = (uint64_t)(uintptr_t)pool_alloc(PAGE_SIZE, PAGE_SIZE) | NPT_TABLE;
	return (uint64_t *)(uintptr_t)(*entry & NPT_ADDR);
}

/* The memory of the RMP model's spare frames, by spare index (host_swap_frame). */
static uint8_t *spare_mem[RMP_SPARE_FRAMES];

uint64_t hv_hpa(gpa_t gpa)
{
	for (unsigned i = 0; i < n_hv_back; i++)
		if (gpa >= hv_back[i].gpa && gpa - hv_back[i].gpa < hv_back[i].size)
			return (uint64_t)(uintptr_t)hv_back[i].hpa + (gpa - hv_back[i].gpa);
	if (memmap_is_guest_ram(npt_mm, gpa, 1)) {
		int s = rmp_hv_spare_of(gpa);
		if (s < 0)
			return gpa; /* its home frame */
		return (uint64_t)(uintptr_t)spare_mem[s] + (gpa & (PAGE_SIZE - 1));
	}
	return HV_NO_HPA;
}

/*
 * A hostile host puts a fresh frame behind the guest RAM page at gpa
 * (rmp_hv_swap_frame: RMPUPDATE of a spare, the old frame left as it was)
 * and maps it, flushing what it changed as a host does. Under the exit lock.
 */
int sim_host_swap_frame(gpa_t gpa)
{
	unsigned s = rmp_hv_swaps();
	if (!IS_ALIGNED(gpa, PAGE_SIZE) || !memmap_is_guest_ram(npt_mm, gpa, PAGE_SIZE) ||
	    s >= RMP_SPARE_FRAMES)
		return -1;
	if (!spare_mem[s])
		spare_mem[s] = pool_alloc(PAGE_SIZE, PAGE_SIZE); /* before the swap shows */
	if (rmp_hv_swap_frame(gpa) != (int)s)
		return -1;
	gpa_t block = ALIGN_DOWN(gpa, PAGE_SIZE_2M); /* a PSMASH may have split it */
	sim_npt_release(gpa, PAGE_SIZE);
	sim_npt_sync(block, PAGE_SIZE_2M);
	sim_flush_guest_tlb();
	return 0;
}

int hv_back_add(gpa_t gpa, uint64_t size, uint8_t *hpa)
{
	if (n_hv_back == ARRAY_SIZE(hv_back) || !IS_ALIGNED(gpa, PAGE_SIZE_2M) ||
	    !IS_ALIGNED(size, PAGE_SIZE_2M) || hv_hpa(gpa) != HV_NO_HPA ||
	    hv_hpa(gpa + size - 1) != HV_NO_HPA)
		return -1;
	/* Grow the last range when both sides are contiguous (pool order). */
	if (n_hv_back && hv_back[n_hv_back - 1].gpa + hv_back[n_hv_back - 1].size == gpa &&
	    hv_back[n_hv_back - 1].hpa + hv_back[n_hv_back - 1].size == hpa) {
		hv_back[n_hv_back - 1].size += size;
		return 0;
	}
	hv_back[n_hv_back++] = (typeof(hv_back[0])){.gpa = gpa, .size = size, .hpa = hpa};
	return 0;
}

bool hv_is_mem(gpa_t gpa, uint64_t len)
{
	if (!len || gpa + len < gpa)
		return false;
	for (gpa_t p = ALIGN_DOWN(gpa, PAGE_SIZE); p < gpa + len; p += PAGE_SIZE)
		if (hv_hpa(p) == HV_NO_HPA)
			return false;
	return true;
}

void hv_copy_to(gpa_t gpa, const void *src, size_t len)
{
	const uint8_t *s = src;
	while (len) {
		size_t n = MIN(len, PAGE_SIZE - (gpa & (PAGE_SIZE - 1)));
		memcpy((void *)(uintptr_t)hv_hpa(gpa), s, n);
		gpa += n, s += n, len -= n;
	}
}

void hv_copy_from(void *dst, gpa_t gpa, size_t len)
{
	uint8_t *d = dst;
	while (len) {
		size_t n = MIN(len, PAGE_SIZE - (gpa & (PAGE_SIZE - 1)));
		memcpy(d, (const void *)(uintptr_t)hv_hpa(gpa), n);
		gpa += n, d += n, len -= n;
	}
}

/*
 * Revocations take effect at the flush, not before (issue 17 item 3).
 * Hardware checks the RMP when a translation is made, not on each access:
 * a translation cached before an RMPADJUST that takes permissions away, or
 * before a PVALIDATE that rescinds a page, keeps its old permissions on
 * every CPU that holds it until a flush (APM vol. 3, RMPADJUST and
 * PVALIDATE: "software must ... flush the TLB"; INVLPGB/TLBSYNC). TCG
 * applies a nested-table change at once on the next fill, so the machine
 * keeps the old permissions in the tables themselves: a guest-side
 * reduction is held (the union of every state since the last flush, as a
 * stale entry or a fresh fill may be used) until csvsm's INVLPGB, which
 * releases all of them (sim_guest_invlpgb). A host page-state change
 * releases the pages it changes only: the machine's host flushes what it
 * must and nothing more, so csvsm cannot lean on a host's flush. Grants
 * show at once (a fill after the change sees them; a stale entry with
 * fewer permissions would fault and refill). Serialized by the exit lock.
 */
#define HELD_MAX 256
static struct held {
	gpa_t base;
	uint64_t size;
	uint8_t perms[4]; /* per VMPL, the union since the last flush (info_perms) */
} held[HELD_MAX];
static unsigned n_held;
static uint64_t held_total, held_max_seen, held_released, held_overflow;
bool sim_ignore_invlpgb; /* snpm.drop_flush=1: csvsm's flushes do nothing */

static unsigned info_perms(const struct rmp_entry_info *e, unsigned vmpl)
{
	if (!e->assigned || !e->validated)
		return 0;
	return vmpl == 0 ? RMP_PERM_ALL : e->perms[vmpl];
}

static unsigned held_perms(gpa_t gpa, unsigned vmpl)
{
	unsigned p = 0;
	for (unsigned i = 0; i < n_held; i++)
		if (gpa >= held[i].base && gpa - held[i].base < held[i].size)
			p |= held[i].perms[vmpl];
	return p;
}

/* Every held revocation takes effect (csvsm's INVLPGB, or the store is full). */
static void held_release_all(void)
{
	unsigned n = n_held;
	n_held = 0;
	for (unsigned i = 0; i < n; i++)
		sim_npt_sync(held[i].base, held[i].size);
	held_released += n;
}

void sim_npt_hold(gpa_t gpa, uint64_t size, const struct rmp_entry_info *before,
		  const struct rmp_entry_info *after)
{
	bool reduced = false; /* a rescind shows as VMPL0 losing RMP_PERM_ALL */
	for (unsigned k = 0; k < 4; k++)
		reduced |= (info_perms(before, k) & ~info_perms(after, k)) != 0;
	if (!reduced)
		return;
	held_total++;
	for (unsigned i = 0; i < n_held; i++)
		if (held[i].base == gpa && held[i].size == size) {
			for (unsigned k = 0; k < 4; k++)
				held[i].perms[k] |= (uint8_t)info_perms(before, k);
			return;
		}
	if (n_held == HELD_MAX) {
		/* Kinder than hardware for the pages held so far: counted, and
		 * printed at power-off (tests look for overflow=0). */
		held_overflow++;
		held_release_all();
	}
	struct held *h = &held[n_held++];
	*h = (struct held){.base = gpa, .size = size};
	for (unsigned k = 0; k < 4; k++)
		h->perms[k] = (uint8_t)info_perms(before, k);
	if (n_held > held_max_seen)
		held_max_seen = n_held;
}

void sim_npt_release(gpa_t gpa, uint64_t size)
{
	for (unsigned i = 0; i < n_held;) {
		if (held[i].base < gpa + size && gpa < held[i].base + held[i].size) {
			held[i] = held[--n_held];
			held_released++;
		} else {
			i++;
		}
	}
}

void sim_guest_invlpgb(void)
{
	if (sim_ignore_invlpgb)
		return;
	held_release_all();
	sim_flush_guest_tlb();
}

void sim_npt_print_held(void)
{
	con_printf("snpm: tlb: revocations held until a flush=%llu released=%llu "
		   "most-at-once=%llu still-held=%u overflow=%llu%s\n",
		   (unsigned long long)held_total, (unsigned long long)held_released,
		   (unsigned long long)held_max_seen, n_held, (unsigned long long)held_overflow,
		   sim_ignore_invlpgb ? " (snpm.drop_flush=1: csvsm's INVLPGB ignored)" : "");
}

/*
 * Pages of csvsm's region the host converted to shared because a guest VMPL
 * read them with C=0 (npf_guest_memory, issue 34 item 6): csvsm still maps
 * them private, so its next access to one is a private access to a shared
 * page (below). Under the exit lock; a few at most (the tests make one).
 */
#define CSVSM_LOST_MAX 16
static gpa_t csvsm_lost[CSVSM_LOST_MAX];
static unsigned n_csvsm_lost;

bool sim_csvsm_page_lost(gpa_t gpa)
{
	for (unsigned i = 0; i < n_csvsm_lost; i++)
		if (csvsm_lost[i] == ALIGN_DOWN(gpa, PAGE_SIZE))
			return true;
	return false;
}

unsigned sim_csvsm_pages_lost(void)
{
	return n_csvsm_lost;
}

/*
 * Machine mode: what `vmpl` reaches at a 4K page. A shared page is host
 * memory every VMPL reaches (with the C-bit clear, which TCG's nested walk
 * does not see); a private page by its RMP permissions, VMPL0 all of a
 * validated one (VMSA pages included: csvsm reads and writes the guest's).
 *
 * But VMPL0 is given no shared page of guest RAM, nor a page of its own the
 * host converted behind it: csvsm maps every page private (C=1) except the
 * pages it shared itself (its GHCBs, guest-request and doorbell pages, all
 * in its region), so its access to such a page would be a private access
 * to a shared page, which hardware stops with an #NPF (RMP check, APM vol.
 * 2 §15.36.10) and TCG would let through. Left unmapped, the access exits
 * and handle_npf reads its C-bit from EXITINFO2 (npf_vmpl0).
 */
static uint64_t npt_pte_machine(gpa_t gpa, unsigned vmpl)
{
	if (vmpl == 0 && (gpa == nest_hole || gpa == vmpl0_holes[0] || gpa == vmpl0_holes[1]))
		return 0;
	uint64_t hpa = hv_hpa(gpa);
	struct rmp_entry_info e;
	if (hpa == HV_NO_HPA || rmp_query(gpa, &e))
		return gpa == LAPIC_GPA ? (gpa | NPT_P | NPT_US | NPT_NX) : 0;
	if (!e.assigned && vmpl == 0 &&
	    (memmap_is_guest_ram(npt_mm, gpa, 1) || sim_csvsm_page_lost(gpa)))
		return 0;
	if (!e.assigned)
		return hpa | NPT_P | NPT_RW | NPT_US;
	unsigned p = rmp_vmpl_perms(gpa, vmpl);
	if (n_held)
		p |= held_perms(gpa, vmpl); /* a revocation not yet flushed */
	if (!(p & RMP_PERM_R))
		return 0;
	return hpa | NPT_P | NPT_US | ((p & RMP_PERM_W) ? NPT_RW : 0) |
	       ((p & (RMP_PERM_XU | RMP_PERM_XS)) ? 0 : NPT_NX);
}

/* The guest's mapping of one 4K page: what its VMPL was granted in the RMP. */
static uint64_t npt_pte(gpa_t gpa, unsigned vmpl)
{
	return npt_pte_machine(gpa, vmpl);
}

/* The PDE that maps gpa's 2 MiB block in root (tables above it made as needed). */
static uint64_t *npt_pde(uint64_t *root, gpa_t gpa)
{
	uint64_t *pdpt = npt_table(&root[(gpa >> 39) & 511]);
	uint64_t *pd = npt_table(&pdpt[(gpa >> 30) & 511]);
	return &pd[(gpa >> 21) & 511];
}

static void npt_map_2m_in(uint64_t *root, unsigned vmpl, gpa_t base)
{
	uint64_t *pde = npt_pde(root, base);
	uint64_t first = npt_pte(base, vmpl);
	bool uniform = true;
	for (gpa_t g = base + PAGE_SIZE; g < base + PAGE_SIZE_2M && uniform; g += PAGE_SIZE) {
		uint64_t e = npt_pte(g, vmpl);
		uniform = (e & ~NPT_ADDR) == (first & ~NPT_ADDR) &&
			  (!(e & NPT_P) || (e & NPT_ADDR) == (first & NPT_ADDR) + (g - base));
	}
	if (uniform && (!(first & NPT_P) || IS_ALIGNED(first & NPT_ADDR, PAGE_SIZE_2M))) {
		__atomic_store_n(pde, (first & NPT_P) ? (first | NPT_PS) : 0, __ATOMIC_RELEASE);
		return;
	}
	/* Other vCPUs walk these tables while csvsm changes them: a new table
	 * is filled before the PDE names it, and entries are replaced one
	 * store each, so a walk sees the old or the new mapping, never a
	 * half-built one (an empty table would fault a page that stays
	 * mapped throughout). */
	if ((*pde & NPT_P) && !(*pde & NPT_PS)) {
		uint64_t *pt = (uint64_t *)(uintptr_t)(*pde & NPT_ADDR);
		for (unsigned i = 0; i < 512; i++)
			__atomic_store_n(&pt[i], npt_pte(base + i * PAGE_SIZE, vmpl),
					 __ATOMIC_RELEASE);
		return;
	}
	uint64_t *pt = pool_alloc(PAGE_SIZE, PAGE_SIZE);
	for (unsigned i = 0; i < 512; i++)
		pt[i] = npt_pte(base + i * PAGE_SIZE, vmpl);
	__atomic_store_n(pde, (uint64_t)(uintptr_t)pt | NPT_TABLE, __ATOMIC_RELEASE);
}

/*
 * One 4K page changed: when its 2 MiB block is already mapped by a page
 * table, only that page's entry can have changed (npt_pte depends on the
 * page alone), so only it is rewritten; otherwise the block is rebuilt
 * (a 2M mapping may have to be split). A block that becomes uniform again
 * keeps its page table: the same mappings, in 4K TLB entries. This keeps a
 * 4K PVALIDATE or RMPADJUST at a few lookups instead of 512 per VMPL.
 */
static void npt_map_4k_in(uint64_t *root, unsigned vmpl, gpa_t gpa)
{
	uint64_t pde = __atomic_load_n(npt_pde(root, gpa), __ATOMIC_ACQUIRE);
	if ((pde & NPT_P) && !(pde & NPT_PS)) {
		uint64_t *pt = (uint64_t *)(uintptr_t)(pde & NPT_ADDR);
		__atomic_store_n(&pt[(gpa >> PAGE_SHIFT) & 511], npt_pte(gpa, vmpl),
				 __ATOMIC_RELEASE);
		return;
	}
	npt_map_2m_in(root, vmpl, ALIGN_DOWN(gpa, PAGE_SIZE_2M));
}

static void npt_map_2m(gpa_t base)
{
	for (unsigned i = 0; i < npt_nroots; i++)
		npt_map_2m_in(npt_root[npt_roots[i]], npt_roots[i], base);
}

void sim_npt_sync(gpa_t gpa, uint64_t size)
{
	if (!npt_nroots)
		return;
	if (size == PAGE_SIZE && IS_ALIGNED(gpa, PAGE_SIZE) && gpa < npt_top) {
		for (unsigned i = 0; i < npt_nroots; i++)
			npt_map_4k_in(npt_root[npt_roots[i]], npt_roots[i], gpa);
	} else {
		for (gpa_t b = ALIGN_DOWN(gpa, PAGE_SIZE_2M); b < gpa + size && b < npt_top;
		     b += PAGE_SIZE_2M)
			npt_map_2m(b);
	}
	/* Every vCPU flushes before it next enters; sim_flush_guest_tlb makes
	 * the ones in guest mode leave now. */
	__atomic_add_fetch(&flush_gen, 1, __ATOMIC_SEQ_CST);
}

void sim_vmpl0_hole(unsigned slot, gpa_t page)
{
	gpa_t old = vmpl0_holes[slot & 1];
	vmpl0_holes[slot & 1] = page;
	if (old != UINT64_MAX)
		sim_npt_sync(old, PAGE_SIZE);
	if (page != UINT64_MAX)
		sim_npt_sync(page, PAGE_SIZE);
}

/*
 * The nested table of a VMPL. The sim has one (the guest VMPL's); the
 * machine one per VMPL in use, built from the RMP model the first time a
 * context of that VMPL is made (under the exit lock, or before any vCPU runs).
 */
const uint64_t *svm_npt_root(unsigned vmpl)
{
	vmpl &= 3;
	if (!npt_root[vmpl]) {
		uint64_t *root = pool_alloc(PAGE_SIZE, PAGE_SIZE);
		for (gpa_t b = 0; b < npt_top; b += PAGE_SIZE_2M)
			npt_map_2m_in(root, vmpl, b);
		npt_root[vmpl] = root;
		npt_roots[npt_nroots++] = vmpl; /* from now on kept in sync */
	}
	return npt_root[vmpl];
}

static const uint64_t *npt_root_of(const struct svm_vcpu *v)
{
	return npt_root[v->vmpl & 3];
}

/* ---- guest linear accesses the host makes for the guest (instruction bytes, #VC frames) ---- */

/* Guest-physical bytes `vmpl` itself may reach, as its nested table maps them. */
void *guest_phys(gpa_t gpa, size_t n, bool write, unsigned vmpl)
{
	uint64_t pte = npt_pte(ALIGN_DOWN(gpa, PAGE_SIZE), vmpl);
	bool ram = hv_is_mem(gpa, n);
	if (!(pte & NPT_P) || (write && !(pte & NPT_RW)) || !ram ||
	    (gpa & (PAGE_SIZE - 1)) + n > PAGE_SIZE || gpa == LAPIC_GPA)
		return NULL;
	return (void *)(uintptr_t)((pte & NPT_ADDR) | (gpa & 0xFFF));
}

/*
 * Page-table entries come only from pages the guest could write itself: a
 * walk by the CPU sets Accessed bits in them, so a table in a page the
 * guest may only read (a VMSA page since CREATE_VCPU) faults there too.
 */
static int pt_read(void *arg, gpa_t gpa, unsigned size, uint64_t *val)
{
	const struct svm_vcpu *v = arg;
	const void *p = IS_ALIGNED(gpa, size) ? guest_phys(gpa, size, true, v->vmpl) : NULL;
	if (!p)
		return -1;
	*val = 0;
	memcpy(val, p, size);
	return 0;
}

/* sys: an implicit supervisor access (descriptor tables, exception frames). */
static enum gw_result walk_as(const struct svm_vcpu *v, uint64_t la, enum gw_access acc, gpa_t *pa,
			      uint32_t *err, bool sys)
{
	const struct vmcb_save *s = &v->vmcb->save;
	struct gw_cpu c = {.cr0 = s->cr0,
			   .cr3 = s->cr3,
			   .cr4 = s->cr4,
			   .efer = s->efer,
			   .rflags = sys ? (1ULL << 18) : s->rflags,
			   .cpl = sys ? 0 : (s->ss.attrib >> 5) & 3, /* QEMU's CPL, pitfall 6 */
			   .cbit_mask = SIM_CBIT_MASK,
			   .read_pte = pt_read,
			   .arg = (void *)v};
	return guest_walk(&c, la, acc, pa, err);
}

static enum gw_result walk(const struct svm_vcpu *v, uint64_t la, enum gw_access acc, gpa_t *pa,
			   uint32_t *err)
{
	return walk_as(v, la, acc, pa, err, false);
}

/*
 * Copy between csvsm and the guest at a linear address with the guest's own
 * permissions (its page tables, then nested paging), page by page. On a
 * fault nothing more is copied and the exception the CPU would raise is
 * injected: #PF with CR2, or #GP(0) for what the guest may not use at all.
 * With buf NULL only the checks are made.
 */
static bool linear_copy_as(struct svm_vcpu *v, uint64_t la, void *buf, size_t n, enum gw_access acc,
			   bool sys)
{
	uint8_t *b = buf;
	while (n) {
		gpa_t pa;
		uint32_t err;
		enum gw_result r = walk_as(v, la, acc, &pa, &err, sys);
		if (r == GW_PAGE_FAULT) {
			v->vmcb->save.cr2 = la;
			inject_exception(v, 14, true, err);
			return false;
		}
		size_t chunk = MIN(n, PAGE_SIZE - (pa & (PAGE_SIZE - 1)));
		void *p = r == GW_OK ? guest_phys(pa, chunk, acc == GW_WRITE, v->vmpl) : NULL;
		if (!p) {
			inject_exception(v, 13, true, 0);
			return false;
		}
		if (b && acc == GW_WRITE)
			memcpy(p, b, chunk);
		else if (b)
			memcpy(b, p, chunk);
		if (b)
			b += chunk;
		la += chunk, n -= chunk;
	}
	return true;
}

bool sim_translate(struct svm_vcpu *v, uint64_t la, enum gw_access acc, gpa_t *pa)
{
	uint32_t err;
	enum gw_result r = walk(v, la, acc, pa, &err);
	if (r == GW_PAGE_FAULT) {
		v->vmcb->save.cr2 = la;
		inject_exception(v, 14, true, err);
	} else if (r != GW_OK) {
		inject_exception(v, 13, true, 0);
	}
	return r == GW_OK;
}

bool linear_copy_sys(struct svm_vcpu *v, uint64_t la, void *buf, size_t n, bool write)
{
	return linear_copy_as(v, la, buf, n, write ? GW_WRITE : GW_READ, true);
}

bool sim_peek_linear(struct svm_vcpu *v, uint64_t la, void *buf, size_t n)
{
	uint8_t *b = buf;
	while (n) {
		gpa_t pa;
		uint32_t err;
		if (walk_as(v, la, GW_READ, &pa, &err, true) != GW_OK)
			return false;
		size_t chunk = MIN(n, PAGE_SIZE - (pa & (PAGE_SIZE - 1)));
		const void *p = guest_phys(pa, chunk, false, v->vmpl);
		if (!p)
			return false;
		memcpy(b, p, chunk);
		b += chunk, la += chunk, n -= chunk;
	}
	return true;
}

/* Up to `max` instruction bytes at CS:RIP; returns how many could be read (no fault raised). */
size_t fetch_insn(struct svm_vcpu *v, uint8_t *insn, size_t max)
{
	const struct vmcb *vm = v->vmcb;
	uint64_t la = vm->save.cs.base + vm->save.rip;
	size_t got = 0;
	while (got < max) {
		gpa_t pa;
		uint32_t err;
		if (walk(v, la + got, GW_FETCH, &pa, &err) != GW_OK)
			break;
		size_t chunk = MIN(max - got, PAGE_SIZE - (pa & (PAGE_SIZE - 1)));
		const void *p = guest_phys(pa, chunk, false, v->vmpl);
		if (!p)
			break;
		memcpy(insn + got, p, chunk);
		got += chunk;
	}
	return got;
}

/* ---- VMCB set-up ---- */

void vmcb_seg(struct vmcb_seg *sg, uint16_t sel, uint64_t base, uint32_t limit, uint16_t attr)
{
	*sg = (struct vmcb_seg){.sel = sel, .attrib = attr, .limit = limit, .base = base};
}

static void msrpm_intercept(uint32_t msr, bool rd, bool wr)
{
	uint32_t base;
	if (msr < 0x2000)
		base = 0;
	else if (msr >= 0xC0000000u && msr < 0xC0002000u)
		base = 0x800, msr -= 0xC0000000u;
	else if (msr >= 0xC0010000u && msr < 0xC0012000u)
		base = 0x1000, msr -= 0xC0010000u;
	else
		return; /* outside the map: always intercepted (APM §15.11) */
	uint32_t bit = msr * 2;
	if (rd)
		msrpm[base + bit / 8] |= (uint8_t)(1u << (bit % 8));
	if (wr)
		msrpm[base + (bit + 1) / 8] |= (uint8_t)(1u << ((bit + 1) % 8));
}

/* x86 reset state (Intel SDM vol. 3 §9.1.4; the prototype of sim notes §3). */
void vmcb_reset_state(struct svm_vcpu *v, uint32_t cpuid_sig)
{
	struct vmcb_save *s = &v->vmcb->save;
	vmcb_seg(&s->cs, 0xF000, 0xFFFF0000ULL, 0xFFFF, 0x9B);
	vmcb_seg(&s->ds, 0, 0, 0xFFFF, 0x93);
	vmcb_seg(&s->es, 0, 0, 0xFFFF, 0x93);
	vmcb_seg(&s->fs, 0, 0, 0xFFFF, 0x93);
	vmcb_seg(&s->gs, 0, 0, 0xFFFF, 0x93);
	vmcb_seg(&s->ss, 0, 0, 0xFFFF, 0x93);
	vmcb_seg(&s->gdtr, 0, 0, 0xFFFF, 0);
	vmcb_seg(&s->idtr, 0, 0, 0xFFFF, 0);
	vmcb_seg(&s->ldtr, 0, 0, 0xFFFF, 0x82);
	vmcb_seg(&s->tr, 0, 0, 0xFFFF, 0x8B);
	s->cpl = 0;
	s->efer = EFER_SVME; /* VMRUN requires it; csvsm keeps it set (sim notes pitfall 2) */
	s->cr0 = 0x60000010ULL;
	s->rflags = 0x2;
	s->rip = 0xFFF0;
	s->dr6 = 0xFFFF0FF0ULL;
	s->dr7 = 0x400;
	s->g_pat = 0x0007040600070406ULL;
	v->gprs.rdx = cpuid_sig;
}

void vmcb_init(struct vmcb *v, const uint64_t *npt)
{
	struct vmcb_control *c = &v->ctl;
	/* Every guest is an SEV-SNP guest: CPUID becomes #VC (56421 §4.1),
	 * PVALIDATE and RMPADJUST raise #UD under TCG and are emulated
	 * (sim_snp_ud). */
	c->intercept_misc1 |= SVM_INTERCEPT_CPUID;
	c->intercept_exceptions |= 1u << 6;
	c->intercept_misc1 |= SVM_INTERCEPT_INIT | SVM_INTERCEPT_IOIO_PROT |
			      SVM_INTERCEPT_MSR_PROT | SVM_INTERCEPT_SHUTDOWN | SVM_INTERCEPT_SMI |
			      SVM_INTERCEPT_NMI;
	c->intercept_misc2 = SVM_INTERCEPT_VMRUN | SVM_INTERCEPT_VMMCALL | SVM_INTERCEPT_VMLOAD |
			     SVM_INTERCEPT_VMSAVE | SVM_INTERCEPT_STGI | SVM_INTERCEPT_CLGI |
			     SVM_INTERCEPT_SKINIT;
	c->iopm_base_pa = (uint64_t)(uintptr_t)iopm;
	c->msrpm_base_pa = (uint64_t)(uintptr_t)msrpm;
	c->asid = ASID_GUEST;
	c->tlb_control = 1;
	c->nested_ctl = SVM_NESTED_CTL_NP_ENABLE;
	c->nested_cr3 = (uint64_t)(uintptr_t)npt;
}

/* ---- exits ---- */

void inject_exception(struct svm_vcpu *v, unsigned vector, bool has_err, uint32_t err)
{
	v->vmcb->ctl.event_inj = SVM_EVTINJ_VALID | SVM_EVTINJ_TYPE_EXCP | vector |
				 (has_err ? SVM_EVTINJ_VALID_ERR | ((uint64_t)err << 32) : 0);
}

/*
 * One MSR access as the host serves it (an intercepted RDMSR/WRMSR, or a
 * GHCB MSR exit of an SNP guest). False: the access #GPs.
 */
bool sim_msr_access(struct svm_vcpu *v, uint32_t msr, bool wr, uint64_t *val)
{
	struct vmcb *vm = v->vmcb;
	if (wr) {
		if (msr == MSR_GHCB)
			v->ghcb_msr = *val;
		else if (msr == MSR_EFER_NR)
			vm->save.efer = *val | EFER_SVME;
		else if (msr == MSR_APIC_BASE)
			; /* csvsm's local APIC stays enabled, xAPIC, at its address */
		else if (msr >= 0xC0010000u && msr < 0xC0012000u && msr != MSR_SEV_STATUS)
			; /* AMD system MSRs (SYSCFG, VM_CR, HSAVE...): ignored */
		else
			return false;
		return true;
	}
	if (msr == MSR_GHCB)
		*val = v->ghcb_msr;
	else if (msr == MSR_SEV_STATUS)
		*val = 0x3 | (v->sev_features << 2);
	else if (msr == MSR_EFER_NR)
		*val = vm->save.efer;
	else if (msr == MSR_APIC_BASE)
		*val = rdmsr(MSR_APIC_BASE);
	else if (msr >= 0xC0010000u && msr < 0xC0012000u)
		*val = 0;
	else
		return false;
	return true;
}

static void ghcb_msr_access(struct svm_vcpu *v)
{
	struct vmcb *vm = v->vmcb;
	v->msr_exits++;
	vm->ctl.event_inj = 0;
	if (vm->ctl.exit_info_1 & 1) {
		v->ghcb_msr = (vm->save.rax & 0xFFFFFFFFULL) | (v->gprs.rdx << 32);
	} else {
		vm->save.rax = v->ghcb_msr & 0xFFFFFFFFULL;
		v->gprs.rdx = v->ghcb_msr >> 32;
	}
	vm->save.rip += 2; /* rdmsr/wrmsr: 0F 32 / 0F 30 */
}

static void handle_msr(struct svm_vcpu *v)
{
	struct vmcb *vm = v->vmcb;
	uint32_t msr = (uint32_t)v->gprs.rcx;
	bool wr = vm->ctl.exit_info_1 & 1;
	uint64_t val = (vm->save.rax & 0xFFFFFFFFULL) | (v->gprs.rdx << 32);
	v->msr_exits++;
	/* An SNP guest's MSR accesses go through its #VC handler and the GHCB,
	 * except the ones the hardware serves or traps itself: the GHCB MSR,
	 * SEV_STATUS, EFER writes (56421 §4.1, APM vol. 2 §15.35). */
	if (msr != MSR_GHCB && msr != MSR_SEV_STATUS && msr != MSR_EFER_NR) {
		sim_snp_vc(v, SVM_EXIT_MSR_CODE);
		return;
	}
	if (!sim_msr_access(v, msr, wr, &val)) {
		inject_exception(v, 13, true, 0);
		return;
	}
	if (!wr) {
		vm->save.rax = val & 0xFFFFFFFFULL;
		v->gprs.rdx = val >> 32;
	}
	vm->save.rip += 2; /* rdmsr/wrmsr: 0F 32 / 0F 30 */
}

static void handle_vmmcall(struct svm_vcpu *v)
{
	struct vmcb *vm = v->vmcb;
	uint8_t insn[4];
	size_t n = fetch_insn(v, insn, 4);
	if (n < 3) {
		inject_exception(v, 13, true, 0); /* the bytes it just executed are gone */
		return;
	}
	if (n == 4 && insn[0] == 0xF3 && insn[1] == 0x0F && insn[2] == 0x01 && insn[3] == 0xD9) {
		v->vmgexits++;
		vm->save.rip += 4; /* VMGEXIT is 4 bytes (sim notes pitfall 1) */
		sim_snp_vmgexit(v);
		return;
	}
	sim_snp_vc(v, SVM_EXIT_VMMCALL); /* VMMCALL in an SEV-ES guest: #VC (56421 §4.1) */
}

uint64_t reg_value(struct svm_vcpu *v, unsigned reg)
{
	const uint64_t *g = &v->gprs.rbx;
	switch (reg) {
	case 0:
		return v->vmcb->save.rax;
	case 1:
		return v->gprs.rcx;
	case 2:
		return v->gprs.rdx;
	case 3:
		return v->gprs.rbx;
	case 4:
		return v->vmcb->save.rsp;
	case 5:
		return v->gprs.rbp;
	case 6:
		return v->gprs.rsi;
	case 7:
		return v->gprs.rdi;
	default:
		return g[6 + (reg - 8)]; /* r8..r15 follow rbp in struct guest_gprs */
	}
}

/* The NPT's leaf entry for `gpa` as a walk finds it now (0: not present). */
static uint64_t npt_leaf(const uint64_t *root, gpa_t gpa)
{
	uint64_t e = __atomic_load_n(&root[(gpa >> 39) & 511], __ATOMIC_ACQUIRE);
	for (int shift = 30; shift >= 12; shift -= 9) {
		if (!(e & NPT_P))
			return 0;
		if (shift < 30 && (e & NPT_PS))
			return e;
		const uint64_t *t = (const uint64_t *)(uintptr_t)(e & NPT_ADDR);
		e = __atomic_load_n(&t[(gpa >> shift) & 511], __ATOMIC_ACQUIRE);
	}
	return e;
}

/*
 * Did the faulting access race with csvsm changing the tables (another
 * vCPU's exit granted the page meanwhile)? Then the guest just runs the
 * instruction again. EXITINFO1: bit 1 write, bit 4 fetch (APM vol. 2
 * §15.25.6).
 */
static bool npf_spurious(const struct svm_vcpu *v, gpa_t gpa, uint64_t err)
{
	uint64_t e = npt_leaf(npt_root_of(v), gpa);
	if (!(e & NPT_P))
		return false;
	if ((err & 2) && !(e & NPT_RW))
		return false;
	if ((err & 0x10) && (e & NPT_NX))
		return false;
	return true;
}

/*
 * #NPF error code bits as SEV-SNP hardware reports an RMP check failure
 * (APM vol. 2 §15.36.10; Linux arch/x86/include/asm/kvm_host.h
 * PFERR_GUEST_RMP/ENC/VMPL_MASK). TCG reports none of them: the machine
 * derives them from the RMP model and the C-bit of the faulting GPA (TCG
 * passes the guest's bit 51 through in EXITINFO2) for its messages.
 */
#define NPF_P		(1ULL << 0)
#define NPF_W		(1ULL << 1)
#define NPF_FETCH	(1ULL << 4)
#define NPF_GUEST_RMP	(1ULL << 31)
#define NPF_GUEST_FINAL (1ULL << 32)
#define NPF_GUEST_PAGE	(1ULL << 33)
#define NPF_GUEST_ENC	(1ULL << 34)
#define NPF_GUEST_VMPL	(1ULL << 36)
/* #VC error code of a failed page validation check (APM vol. 2 §15.36.10). */
#define SVM_EXIT_PAGE_NOT_VALIDATED 0x404
/* The same RMP violation at the same RIP this often in a row: KVM's livelock. */
#define RMP_LOOP_STOP 3

static uint64_t npf_vc_not_validated, npf_to_shared, npf_to_private, npf_rmp_reentered;
static uint64_t vmpl0_vc_not_validated, vmpl0_to_private;

void sim_npf_print_counts(void)
{
	con_printf("%s: npf: vc-not-validated=%llu implicit-to-shared=%llu "
		   "implicit-to-private=%llu rmp-reentered=%llu vmpl0-vc-not-validated=%llu "
		   "vmpl0-to-private=%llu csvsm-pages-lost=%u\n",
		   hv_tag, (unsigned long long)npf_vc_not_validated,
		   (unsigned long long)npf_to_shared, (unsigned long long)npf_to_private,
		   (unsigned long long)npf_rmp_reentered,
		   (unsigned long long)vmpl0_vc_not_validated, (unsigned long long)vmpl0_to_private,
		   n_csvsm_lost);
}

static const char *npf_access(uint64_t err)
{
	return (err & NPF_FETCH) ? "execute" : (err & NPF_W) ? "write" : "read";
}

/* csvsm's region: the launch image's pages outside RAM (hv_back_add), where csvsm lives. */
static bool in_csvsm(gpa_t gpa)
{
	return hv_hpa(gpa) != HV_NO_HPA && !memmap_is_guest_ram(npt_mm, gpa, 1);
}

/*
 * QEMU's answer to KVM_EXIT_MEMORY_FAULT (accel/kvm/kvm-all.c kvm_cpu_exec
 * -> kvm_convert_memory): the page's attributes become what the access
 * asked for (KVM_SET_MEMORY_ATTRIBUTES) and the other side of the
 * guest_memfd-backed page is discarded (ram_block_discard_range /
 * ram_block_discard_guest_memfd_range), so the RMP entry is changed by the
 * host (RMPUPDATE; to private: assigned and not validated, KVM
 * sev_gmem_prepare) and the guest sees fresh contents. The machine's two
 * sides are one host page: it is cleared. A failed conversion stops the VM.
 */
static void npf_convert(struct svm_vcpu *v, gpa_t page, bool to_private, uint64_t err)
{
	if (rmp_hv_assign(page, false, to_private) != 0) {
		con_printf("snpm: host: KVM_EXIT_MEMORY_FAULT at gpa 0x%llx: kvm_convert_memory "
			   "failed; QEMU stops the VM\n",
			   (unsigned long long)page);
		hv_stop_hung();
	}
	memset((void *)(uintptr_t)hv_hpa(page), 0, PAGE_SIZE);
	sim_npt_release(page, PAGE_SIZE);
	sim_npt_sync(page, PAGE_SIZE);
	sim_flush_guest_tlb();
	uint64_t n = to_private ? ++npf_to_private : ++npf_to_shared;
	if (n <= 16)
		con_printf("snpm: host: KVM_EXIT_MEMORY_FAULT: guest VMPL%u %s with C=%u at gpa "
			   "0x%llx (rip 0x%llx, vCPU %u), a page KVM holds %s: QEMU converts it to "
			   "%s (kvm_convert_memory) and the guest retries\n",
			   v->vmpl, npf_access(err), to_private ? 1 : 0, (unsigned long long)page,
			   (unsigned long long)v->vmcb->save.rip, v->gv.id,
			   to_private ? "shared" : "private", to_private ? "private" : "shared");
}

/*
 * csvsm's private page at `page` is gone (converted to shared), and csvsm
 * does not know: its next access to it is private (C=1) to a shared page,
 * which the machine must see although TCG's nested walk ignores the C-bit.
 * VMPL0's nested table leaves the page unmapped from now on
 * (npt_pte_machine), so that access exits to npf_vmpl0: converted back,
 * then #VC 0x404 to csvsm's own handler.
 */
static void csvsm_page_lost(gpa_t page)
{
	if (n_csvsm_lost == CSVSM_LOST_MAX) {
		con_printf("snpm: host: more than %u pages of csvsm's converted; stopping\n",
			   CSVSM_LOST_MAX);
		hv_stop_hung();
	}
	csvsm_lost[n_csvsm_lost++] = page;
	sim_npt_sync(page, PAGE_SIZE);
	sim_flush_guest_tlb();
	con_printf("snpm: host: gpa 0x%llx is csvsm's own memory: its private page is discarded; "
		   "csvsm's next access to it is a private access to a shared page\n",
		   (unsigned long long)page);
}

int sim_host_convert_csvsm(gpa_t gpa)
{
	gpa_t page = ALIGN_DOWN(gpa, PAGE_SIZE);
	if (!in_csvsm(page) || sim_csvsm_page_lost(page) || rmp_hv_assign(page, false, false))
		return -1;
	memset((void *)(uintptr_t)hv_hpa(page), 0, PAGE_SIZE);
	sim_npt_release(page, PAGE_SIZE);
	con_printf("snpm: hostile: the host converts csvsm's page 0x%llx to shared, as KVM and "
		   "QEMU do on a guest's C=0 read of it (kvm_convert_memory)\n",
		   (unsigned long long)page);
	csvsm_page_lost(page);
	return 0;
}

/*
 * A guest VMPL's access to memory that its nested table does not map (the
 * page is not validated, or the RMP denies its VMPL), as hardware, KVM and
 * QEMU treat it. docs/snp-machine.md "Faults as a KVM host sees them".
 */
static void npf_guest_memory(struct svm_vcpu *v, gpa_t gpa, bool enc, uint64_t err)
{
	gpa_t page = ALIGN_DOWN(gpa, PAGE_SIZE);
	uint64_t rip = v->vmcb->save.rip;
	struct rmp_entry_info e = {0};

	if (rmp_query(page, &e) != 0) {
		con_printf("snpm: guest VMPL%u %s at gpa 0x%llx (rip 0x%llx, vCPU %u): memory "
			   "outside the RMP; stopping\n",
			   v->vmpl, npf_access(err), (unsigned long long)gpa,
			   (unsigned long long)rip, v->gv.id);
		hv_stop_hung();
	}
	if (enc && e.assigned && !e.validated) {
		/* Not an #NPF at all: "a failure of the page validation check
		 * results in a #VC with error code PAGE_NOT_VALIDATED (0x404)"
		 * (APM vol. 2 §15.36.10; it ranks above the VMPL check, Table
		 * 15-39). The guest's own #VC handler decides (Linux's
		 * vc_handle_exitcode has no case for it; OVMF's UnsupportedExit
		 * forwards it to the host, which KVM refuses as an unknown exit
		 * code). CR2 should hold the faulting virtual address: the
		 * machine does not know it (TCG's #NPF gives the GPA only). */
		if (++npf_vc_not_validated <= 16)
			con_printf("snpm: guest VMPL%u %s at gpa 0x%llx (rip 0x%llx, vCPU %u): "
				   "private page not validated: #VC 0x404 (PAGE_NOT_VALIDATED)\n",
				   v->vmpl, npf_access(err), (unsigned long long)gpa,
				   (unsigned long long)rip, v->gv.id);
		sim_snp_vc(v, SVM_EXIT_PAGE_NOT_VALIDATED);
		return;
	}
	if (enc != e.assigned) {
		/* The access disagrees with the page's state: an #NPF with
		 * PFERR_GUEST_RMP, which KVM's MMU turns into a userspace exit
		 * because the access's privateness (PFERR_GUEST_ENC ->
		 * PFERR_PRIVATE_ACCESS, svm.c npf_interception) differs from the
		 * gfn's attribute (mmu.c kvm_faultin_pfn ->
		 * kvm_mmu_prepare_memory_fault_exit, KVM_EXIT_MEMORY_FAULT). */
		npf_convert(v, page, enc, err);
		if (!enc && in_csvsm(page))
			csvsm_page_lost(page);
		return;
	}
	/*
	 * A private access to a validated page its VMPL may not touch (or a
	 * VMSA page, or a page-size mismatch KVM resolves with PSMASH): the
	 * #NPF KVM cannot resolve. kvm_mmu_page_fault finds the mapping
	 * present and returns RET_PF_SPURIOUS (the fast path is off for
	 * private memslots, mmu.c page_fault_can_be_fast), and
	 * sev_handle_rmp_fault (svm/sev.c) only PSMASHes a 2M RMP entry: a
	 * 4K entry is left as it is ("goto out"). KVM re-enters the guest,
	 * which faults again: a livelock (AMDESE/AMDSEV issue 219 shows the
	 * repeated "#NPF (0x580000005, RMP fault)"). The machine re-enters
	 * too, and stops once the same fault comes back unchanged.
	 */
	uint64_t hw_err = (err & (NPF_W | NPF_FETCH | 0x4)) | NPF_P | NPF_GUEST_FINAL |
			  NPF_GUEST_RMP | NPF_GUEST_ENC | NPF_GUEST_VMPL;
	if (v->rmp_streak && v->rmp_last_gpa == gpa && v->rmp_last_rip == rip &&
	    v->rmp_last_err == err)
		v->rmp_streak++;
	else
		v->rmp_streak = 1;
	v->rmp_last_gpa = gpa, v->rmp_last_rip = rip, v->rmp_last_err = err;
	if (v->rmp_streak < RMP_LOOP_STOP) {
		npf_rmp_reentered++;
		return;
	}
	con_printf("snpm: guest VMPL%u %s at gpa 0x%llx (rip 0x%llx, vCPU %u): RMP violation "
		   "(#NPF error 0x%llx: RMP, ENC, VMPL; RMP: %s%s%s, VMPL%u perms 0x%x%s) seen %u "
		   "times: KVM re-enters, the guest would hang; stopping\n",
		   v->vmpl, npf_access(err), (unsigned long long)gpa, (unsigned long long)rip,
		   v->gv.id, (unsigned long long)hw_err, e.assigned ? "private" : "shared",
		   e.validated ? " validated" : "", e.vmsa ? " VMSA" : "", v->vmpl,
		   e.perms[v->vmpl & 3], in_csvsm(page) ? ", csvsm memory" : "", v->rmp_streak);
	hv_stop_hung();
}

/*
 * VMPL0's (csvsm's) access to memory its nested table does not map, as the
 * CPU and KVM/QEMU treat it (docs/snp-machine.md "Faults as a KVM host sees
 * them"):
 *  - a private access to a page assigned and not validated: no #NPF but #VC
 *    with error code PAGE_NOT_VALIDATED (0x404), delivered to csvsm's own
 *    #VC handler through its IDT (APM vol. 2 §15.36.10; the validation
 *    check ranks above the others, Table 15-39), which must end the VM and
 *    never validate the page (src/vc.c);
 *  - a private access to a shared page: an #NPF with PFERR_GUEST_RMP and
 *    ENC, which KVM turns into KVM_EXIT_MEMORY_FAULT (the access's
 *    privateness differs from the gfn's attribute) and QEMU answers by
 *    converting the page to private (kvm_convert_memory): assigned, not
 *    validated (sev_gmem_prepare), fresh contents; csvsm's retry then takes
 *    the #VC 0x404 above;
 *  - anything else (memory that is not there, a shared access csvsm should
 *    not make): csvsm cannot go on; the machine stops it, as before.
 */
static void npf_vmpl0(struct svm_vcpu *v, gpa_t gpa, bool enc, uint64_t err, bool mem)
{
	gpa_t page = ALIGN_DOWN(gpa, PAGE_SIZE);
	uint64_t rip = v->vmcb->save.rip;
	struct rmp_entry_info e = {0};
	bool in_rmp = mem && rmp_query(page, &e) == 0;

	if (in_rmp && enc && e.assigned && !e.validated) {
		if (++vmpl0_vc_not_validated <= 16)
			con_printf("snpm: VMPL0 %s at gpa 0x%llx (rip 0x%llx, vCPU %u): private "
				   "page not validated: #VC 0x404 (PAGE_NOT_VALIDATED) to csvsm\n",
				   npf_access(err), (unsigned long long)gpa,
				   (unsigned long long)rip, v->gv.id);
		sim_snp_vc(v, SVM_EXIT_PAGE_NOT_VALIDATED);
		return;
	}
	if (in_rmp && enc && !e.assigned) {
		vmpl0_to_private++;
		npf_convert(v, page, true, err);
		return;
	}
	con_printf("snpm: VMPL0 %s at gpa 0x%llx (rip 0x%llx, vCPU %u): %s\n", npf_access(err),
		   (unsigned long long)gpa, (unsigned long long)rip, v->gv.id,
		   !mem		 ? "not memory"
		   : !in_rmp	 ? "outside the RMP"
		   : !enc	 ? "a shared (C=0) access csvsm does not make"
		   : e.validated ? "a validated page its nested table does not map (machine bug)"
				 : "private page not validated");
	platform->terminate(false, 0, 0x26);
}

static void handle_npf(struct svm_vcpu *v)
{
	gpa_t gpa = v->vmcb->ctl.exit_info_2;
	uint64_t err = v->vmcb->ctl.exit_info_1;
	/* A data access (not a fetch, not the guest's own page walk: EXITINFO1
	 * bit 33, APM vol. 2 §15.25.6) to something that is not guest memory. */
	bool data = !(err & NPF_FETCH) && !(err & NPF_GUEST_PAGE);
	/* TCG passes the C-bit of the guest's translation through in EXITINFO2. */
	bool enc = (gpa & SIM_CBIT_MASK) != 0;
	gpa &= ~SIM_CBIT_MASK;
	bool mem = hv_is_mem(gpa, 1);
	if (mem && npf_spurious(v, gpa, err)) {
		v->npf_streak = gpa == v->npf_last ? v->npf_streak + 1 : 0;
		v->npf_last = gpa;
		if (v->npf_streak < 64) { /* a loop would be a machine bug: then stop below */
			v->npf_retries++;
			return;
		}
	}
	if (!mem && (data || v->vmpl != 0)) {
		/* An SNP guest's MMIO is #VC, served through its GHCB (56421
		 * §4.1.7): KVM marks MMIO in its nested tables with reserved bits
		 * (MMIO caching, required for SEV-ES) so the hardware raises #VC
		 * 0x400 for any access there; the guest's handler decides. */
		sim_snp_vc(v, SVM_EXIT_NPF);
		return;
	}
	v->npf_exits++;
	if (v->vmpl == 0) {
		npf_vmpl0(v, gpa, enc, err, mem);
		return;
	}
	if (mem && v->npf_streak < 64) {
		npf_guest_memory(v, gpa, enc, err);
		return;
	}
	/* A fault that does not go away although the tables map the page: a
	 * machine bug. */
	con_printf("%s: guest %s at gpa 0x%llx (rip 0x%llx, vCPU %u): the host cannot "
		   "resolve it; stopping [info1 0x%llx cr3 0x%llx cs 0x%x]\n",
		   hv_tag, npf_access(err), (unsigned long long)gpa,
		   (unsigned long long)v->vmcb->save.rip, v->gv.id, (unsigned long long)err,
		   (unsigned long long)v->vmcb->save.cr3, v->vmcb->save.cs.sel);
	hv_stop_hung();
}

static void dump_exit(struct svm_vcpu *v, const char *why)
{
	struct vmcb *vm = v->vmcb;
	con_printf("%s: guest %s: exit 0x%llx info1 0x%llx info2 0x%llx rip 0x%llx cs 0x%x "
		   "cr0 0x%llx efer 0x%llx\n",
		   hv_tag, why, (unsigned long long)vm->ctl.exit_code,
		   (unsigned long long)vm->ctl.exit_info_1, (unsigned long long)vm->ctl.exit_info_2,
		   (unsigned long long)vm->save.rip, vm->save.cs.sel,
		   (unsigned long long)vm->save.cr0, (unsigned long long)vm->save.efer);
}

/* Run `v` until the guest ends the VM, or until an exit handler or another
 * vCPU sets v->leave (the machine's VMPL switches); returns only then. */
void svm_guest_run(struct svm_vcpu *v)
{
	for (;;) {
		vcpu_vmrun(v);
		v->exits++;
		if (hv_nest_addr && v->vmpl == 0 && hv_nest_exit(v))
			continue;
		if (redzone_start && redzone_exit(v))
			continue;
		if ((uint32_t)v->vmcb->ctl.exit_code == SVM_EXIT_NMI) {
			/* A kick (VMPL switch, AP creation, TLB shootdown): QEMU leaves
			 * an intercepted NMI pending; let the machine's own handler take
			 * it, then go on unless the vCPU is to leave. An idle vCPU
			 * halts in guest mode (HLT is not intercepted). */
			stgi();
			clgi();
			if (__atomic_load_n(&v->leave, __ATOMIC_ACQUIRE))
				return;
			continue;
		}
		if ((uint32_t)v->vmcb->ctl.exit_code == SVM_EXIT_MSR_CODE &&
		    (uint32_t)v->gprs.rcx == MSR_GHCB) {
			/* The GHCB MSR (QEMU has none, sim notes pitfall 11; hardware
			 * does not exit for it): four per SVSM call, this vCPU's own
			 * state only, so no lock. */
			ghcb_msr_access(v);
			continue;
		}
		hv_exits_lock();
		v->vmcb->ctl.event_inj = 0;
		uint32_t code = (uint32_t)v->vmcb->ctl.exit_code;
		switch (code) {
		case SVM_EXIT_IOIO_CODE:
			/* Port I/O of an SEV-ES/SNP guest is #VC: its own handler
			 * asks the host through the GHCB (string I/O through the
			 * shared buffer, sim_snp_vmgexit). */
			sim_snp_vc(v, SVM_EXIT_IOIO_CODE);
			break;
		case SVM_EXIT_CPUID_CODE:
			sim_snp_vc(v, SVM_EXIT_CPUID_CODE);
			break;
		case SVM_EXIT_EXCP_BASE + 6: /* #UD: PVALIDATE, RMPADJUST... under TCG */
			if (!sim_snp_ud(v))
				inject_exception(v, 6, false, 0);
			break;
		case SVM_EXIT_MSR_CODE:
			handle_msr(v);
			break;
		case SVM_EXIT_VMMCALL:
			handle_vmmcall(v);
			if (redzone_start)
				redzone_after_vmgexit(v);
			break;
		case SVM_EXIT_NPF:
			handle_npf(v);
			break;
		case SVM_EXIT_HLT: /* intercepted at VMPL0 only */
			hv_halt(v);
			break;
		case SVM_EXIT_INIT:
		case SVM_EXIT_SMI:
			break; /* the guest cannot reset csvsm's vCPUs */
		case SVM_EXIT_VMRUN:
		case SVM_EXIT_VMLOAD:
		case SVM_EXIT_VMSAVE:
		case SVM_EXIT_STGI:
		case SVM_EXIT_CLGI:
		case SVM_EXIT_SKINIT:
			inject_exception(v, 6, false, 0);
			break;
		case SVM_EXIT_SHUTDOWN:
			dump_exit(v, "shut down (triple fault)");
			platform->terminate(false, 0, 0x20);
		case SVM_EXIT_INVALID: {
			/* The save area now holds the host's state (struct
			 * vmrun_checked): report what VMRUN was given. */
			const char *why = vmrun_rejected_why(&v->pre);
			con_printf(
			    "%s: vCPU %u VMPL%u: VMRUN failed its consistency checks "
			    "(VMEXIT_INVALID): %s; cr0 0x%llx cr3 0x%llx cr4 0x%llx efer "
			    "0x%llx dr6 0x%llx dr7 0x%llx eventinj 0x%llx asid %u; save-area=%s\n",
			    hv_tag, v->gv.id, v->vmpl,
			    why ? why
				: "a check the machine does not name (CR4 or CR3 "
				  "reserved bits, intercepts, MSRPM/IOPM bases)",
			    (unsigned long long)v->pre.cr0, (unsigned long long)v->pre.cr3,
			    (unsigned long long)v->pre.cr4, (unsigned long long)v->pre.efer,
			    (unsigned long long)v->pre.dr6, (unsigned long long)v->pre.dr7,
			    (unsigned long long)v->pre.event_inj, v->pre.asid,
			    v->vmcb->save.cr3 == read_cr3() && v->vmcb->save.cs.sel == read_cs()
				? "host"
				: "other");
			platform->terminate(false, 0, 0x21);
		}
		default:
			dump_exit(v, "unexpected exit");
			platform->terminate(false, 0, 0x22);
		}
		if (guest_power_event)
			hv_power_event(v);
		hv_exits_unlock();
		if (__atomic_load_n(&v->leave, __ATOMIC_ACQUIRE))
			return;
	}
}

void vmcb_from_vmsa(struct svm_vcpu *v, const struct vmsa *m)
{
	struct vmcb_save *s = &v->vmcb->save;
	struct vmcb_seg *segs[] = {&s->es, &s->cs,   &s->ss,   &s->ds,	 &s->fs,
				   &s->gs, &s->gdtr, &s->ldtr, &s->idtr, &s->tr};
	const struct vmsa_seg *msegs[] = {&m->es, &m->cs,   &m->ss,   &m->ds,	&m->fs,
					  &m->gs, &m->gdtr, &m->ldtr, &m->idtr, &m->tr};
	for (unsigned i = 0; i < ARRAY_SIZE(segs); i++)
		vmcb_seg(segs[i], msegs[i]->selector, msegs[i]->base, msegs[i]->limit,
			 msegs[i]->attrib);
	s->cpl = m->cpl;
	s->efer = m->efer | EFER_SVME;
	s->cr4 = m->cr4, s->cr3 = m->cr3, s->cr0 = m->cr0;
	s->dr7 = m->dr7 ? m->dr7 : 0x400, s->dr6 = m->dr6 ? m->dr6 : 0xFFFF0FF0ULL;
	s->rflags = m->rflags | 2, s->rip = m->rip, s->rsp = m->rsp, s->rax = m->rax;
	s->star = m->star, s->lstar = m->lstar, s->cstar = m->cstar, s->sfmask = m->sfmask;
	s->kernel_gs_base = m->kernel_gs_base, s->cr2 = m->cr2;
	s->g_pat = m->g_pat ? m->g_pat : 0x0007040600070406ULL;
	v->gprs = (struct guest_gprs){.rbx = m->rbx,
				      .rcx = m->rcx,
				      .rdx = m->rdx,
				      .rsi = m->rsi,
				      .rdi = m->rdi,
				      .rbp = m->rbp,
				      .r8 = m->r8,
				      .r9 = m->r9,
				      .r10 = m->r10,
				      .r11 = m->r11,
				      .r12 = m->r12,
				      .r13 = m->r13,
				      .r14 = m->r14,
				      .r15 = m->r15};
}

/*
 * The SNP machine: a stopped context's state into its VMSA page, as the
 * hardware saves it on a world switch (what vmcb_from_vmsa loads, plus
 * the exit code csvsm's request loop reads). x87/SSE state stays in the
 * context (the hardware's copy is encrypted; no software reads it).
 */
void vmsa_from_vmcb(struct vmsa *m, const struct svm_vcpu *v, uint64_t exit_code)
{
	const struct vmcb_save *s = &v->vmcb->save;
	const struct vmcb_seg *segs[] = {&s->es, &s->cs,   &s->ss,   &s->ds,   &s->fs,
					 &s->gs, &s->gdtr, &s->ldtr, &s->idtr, &s->tr};
	struct vmsa_seg *msegs[] = {&m->es, &m->cs,   &m->ss,	&m->ds,	  &m->fs,
				    &m->gs, &m->gdtr, &m->ldtr, &m->idtr, &m->tr};
	for (unsigned i = 0; i < ARRAY_SIZE(segs); i++)
		*msegs[i] = (struct vmsa_seg){.selector = segs[i]->sel,
					      .attrib = segs[i]->attrib,
					      .limit = segs[i]->limit,
					      .base = segs[i]->base};
	m->cpl = s->cpl;
	m->efer = s->efer;
	m->cr4 = s->cr4, m->cr3 = s->cr3, m->cr0 = s->cr0;
	m->dr7 = s->dr7, m->dr6 = s->dr6;
	m->rflags = s->rflags, m->rip = s->rip, m->rsp = s->rsp, m->rax = s->rax;
	m->star = s->star, m->lstar = s->lstar, m->cstar = s->cstar, m->sfmask = s->sfmask;
	m->kernel_gs_base = s->kernel_gs_base, m->cr2 = s->cr2, m->g_pat = s->g_pat;
	m->rbx = v->gprs.rbx, m->rcx = v->gprs.rcx, m->rdx = v->gprs.rdx;
	m->rsi = v->gprs.rsi, m->rdi = v->gprs.rdi, m->rbp = v->gprs.rbp;
	m->r8 = v->gprs.r8, m->r9 = v->gprs.r9, m->r10 = v->gprs.r10, m->r11 = v->gprs.r11;
	m->r12 = v->gprs.r12, m->r13 = v->gprs.r13, m->r14 = v->gprs.r14, m->r15 = v->gprs.r15;
	m->guest_exit_code = exit_code;
}

void hv_send_nmi(uint32_t apic_id)
{
	volatile uint32_t *lapic = (volatile uint32_t *)(uintptr_t)LAPIC_GPA;
	lapic[LAPIC_ICR_HI / 4] = apic_id << 24;
	lapic[LAPIC_ICR_LO / 4] = 0x400 | (1u << 14); /* NMI, assert */
}

/* ---- set-up of the SNP machine (tests/snpm) ---- */

/* This CPU may run VMRUN: EFER.SVME and its host save area. */
void svm_cpu_enable(void)
{
	wrmsr(MSR_EFER, rdmsr(MSR_EFER) | EFER_SVME);
	wrmsr(MSR_VM_HSAVE_PA, (uint64_t)(uintptr_t)pool_alloc(PAGE_SIZE, PAGE_SIZE));
}

/* A guest context: VMCB, host save area, x87/SSE state at reset (loaded on first entry). */
struct svm_vcpu *svm_vcpu_alloc(void)
{
	struct svm_vcpu *v = pool_alloc(sizeof(*v), PAGE_SIZE);
	v->vmcb = pool_alloc(PAGE_SIZE, PAGE_SIZE);
	v->vmcb_pa = (uint64_t)(uintptr_t)v->vmcb;
	v->host_save_pa = (uint64_t)(uintptr_t)pool_alloc(PAGE_SIZE, PAGE_SIZE);
	v->xsave = pool_alloc(PAGE_SIZE, PAGE_SIZE);
	svm_vcpu_fpu_reset(v);
	return v;
}

void svm_vcpu_fpu_reset(struct svm_vcpu *v)
{
	memset(v->xsave, 0, PAGE_SIZE);
	*(uint16_t *)v->xsave = 0x37F;	       /* FCW at reset */
	*(uint32_t *)(v->xsave + 24) = 0x1F80; /* MXCSR at reset */
	v->fpu_saved = 1; /* the next entry loads it: nothing of the host's stays */
}

/*
 * The host side for guests on `gc->mm`: the boot CPU enabled for VMRUN,
 * every port and the AMD system MSRs intercepted, and the nested tables
 * (the sim's now; the machine's per VMPL on first use).
 */
void svm_host_init(const struct guest_config *gc)
{
	npt_mm = gc->mm;
	sim_snp_init(gc->mm);
	svm_cpu_enable();
	iopm = pool_alloc(3 * PAGE_SIZE, PAGE_SIZE);
	memset(iopm, 0xFF, 3 * PAGE_SIZE); /* every port exits (sim notes §5 c) */
	msrpm = pool_alloc(2 * PAGE_SIZE, PAGE_SIZE);
	msrpm_intercept(MSR_EFER_NR, true, true);
	msrpm_intercept(MSR_APIC_BASE, false, true); /* xAPIC only, at its usual address */
	for (uint32_t m = 0xC0010000u; m < 0xC0012000u; m++)
		msrpm_intercept(m, true, true);
	npt_top = MAX(npt_mm->max_gpa, 4ULL << 30);
}
