/*
 * snpm.redzone: a host that injects #HV into VMPL0 at every instruction
 * boundary of one call of a library routine, and checks that the 128 bytes
 * below the interrupted RSP (the System V x86-64 red zone, which Debian's
 * libcrypto/mbedTLS/libtpms use: csvsm links them as they are) and every
 * general register are as they were when the event returns (issue 34
 * item 1; tests/snpm/redzone.sh).
 *
 * How the machine finds the boundaries. It stands in for a real host that
 * takes an exit at any instruction (a timer interrupt, an NPF: the
 * SEV-Step framework single-steps SEV guests with the APIC timer) and
 * injects #HV on the way back in, which restricted injection allows at any
 * time (APM vol. 2 §15.36 "Restricted Injection"; csvsm's
 * src/hv_doorbell.c). A real host cannot set TF in an SNP guest (the VMSA
 * is encrypted); the machine can, and does: the routine's first page is
 * unmapped in VMPL0's nested table until the routine is entered (an NPF
 * at its first fetch, RIP = its start), then VMPL0 runs with RFLAGS.TF and
 * #DB intercepted, one exit per instruction (APM vol. 2 §13.1.4 single
 * step; the trap comes after the instruction, before the next one).
 *
 * At each boundary in the routine: the 128 bytes below RSP and the
 * registers are recorded, #HV injected, and the IRET intercept set (APM
 * vol. 2 §15.9, Table 15-7 "IRET": the exit comes before IRET executes;
 * QEMU's translate.c checks it before helper_iret_protected). At the IRET
 * whose frame returns to that RIP and RSP, the machine compares; then it
 * lets that IRET run with TF (the trap after it lands at the same
 * boundary, which is not injected again) and the routine's own TF goes on.
 *
 * Nesting, in the same run:
 *  - a second #HV while the first is handled: at every 64th boundary the
 *    page of csvsm's #HV stub is unmapped too, so the handler's first
 *    fetch exits; the machine then steps the handler and injects a second
 *    #HV at each of its boundaries whose RSP is off the IST stacks (on an
 *    IST stack, before the stub has copied its frame off, no host may
 *    inject: NoFurtherSignal, src/exception.S; hv-nest.sh covers the host
 *    that does), each checked the same way;
 *  - #HV inside #VC: snpm.redzone_vc=S-E,...: every #VC the machine
 *    delivers for an instruction in these ranges (the libraries' CPUID) is
 *    checked the same way (RAX..RDX and RIP are the handler's to change),
 *    and when its handler makes a GHCB call the machine injects #HV as it
 *    resumes it, checked too.
 * #VC cannot be raised at an arbitrary boundary: csvsm serves the #VC of
 * CPUID and port I/O only, where the instruction is (src/vc.c), and
 * terminates on any other (a page the host took away is #VC 0x404).
 */
#include "arch/x86/insn.h"
#include "arch/x86/svm.h"
#include "base/console.h"
#include "base/string.h"
#include "csvsm/exception.h"
#include "csvsm/tss.h"
#include "snp/ghcb.h"
#include "src/entry.h"
#include "svm.h"

#define SVM_INTERCEPT_IRET (1u << 20) /* APM vol. 2 Table B-1, offset 0x00C bit 20 */
#define SVM_EXIT_IRET	   0x74
#define SVM_EXIT_DB	   (SVM_EXIT_EXCP_BASE + 1)
#define RFLAGS_TF	   (1ULL << 8)
#define RFLAGS_RF	   (1ULL << 16)
#define RED_ZONE	   128 /* System V x86-64 ABI §3.2.2 */
#define NEST_EVERY	   64  /* step the handler of every 64th boundary's #HV */
#define MAX_BOUNDARIES	   50000
#define MAX_CHECKS	   16
#define HOLE_ROUTINE	   0
#define HOLE_STUB	   1

uint64_t redzone_start, redzone_end; /* snpm.redzone=S-E: the routine, 0 = off */
struct redzone_range redzone_vc[REDZONE_VC_MAX];
unsigned redzone_n_vc;

/* An event the machine injected or delivered, until its IRET. */
struct check {
	struct svm_vcpu *v;
	uint64_t rip, rsp, rflags;
	uint64_t gpr[15]; /* rax, rbx, rcx, rdx, rsi, rdi, rbp, r8..r15 */
	uint8_t below[RED_ZONE];
	bool vc;       /* a #VC: RIP moves on, RAX..RDX are its results */
	bool hv_done;  /* #VC: an #HV was injected inside its handler */
	unsigned kind; /* which counter its result goes to */
};
enum { K_SWEEP, K_NESTED, K_VC, K_HV_IN_VC, K_N };
static const char *const kind_name[K_N] = {"boundary #HV", "nested #HV", "library #VC",
					   "#HV inside #VC"};
static struct check checks[MAX_CHECKS];
static unsigned n_checks;
static struct {
	uint64_t injected, checked, rz_bad, gpr_bad;
} st[K_N];

static enum { RZ_OFF, RZ_WAIT, RZ_PASS, RZ_SWEEP, RZ_DONE } phase;
static struct svm_vcpu *rz_v;
static uint64_t rsp0, boundaries, stub_page, handler_sweeps, window_steps, stray_db;
static uint64_t last_rip, last_rsp; /* where the last checked event returned */
static struct svm_vcpu *after_iret; /* its IRET runs now, with TF: the next #DB gives the
				       intercept back */
static bool stepping_handler;
static unsigned bad_printed;

static gpa_t page_of(uint64_t va)
{
	return ALIGN_DOWN(va, PAGE_SIZE); /* csvsm runs identity-mapped (mm/pgtable.c) */
}

static void hole(unsigned slot, gpa_t page)
{
	hv_exits_lock();
	sim_vmpl0_hole(slot, page);
	hv_exits_unlock();
}

/* RAX from the VMCB, then struct guest_gprs (RBX, RCX, RDX, RSI, RDI, RBP, R8..R15) in order. */
static void gprs_of(const struct svm_vcpu *v, uint64_t *g)
{
	_Static_assert(sizeof(struct guest_gprs) == 14 * 8, "include/arch/x86/svm.h");
	g[0] = v->vmcb->save.rax;
	memcpy(&g[1], &v->gprs, sizeof(v->gprs));
}

static void iret_intercept(struct svm_vcpu *v, bool on)
{
	if (on)
		v->vmcb->ctl.intercept_misc1 |= SVM_INTERCEPT_IRET;
	else
		v->vmcb->ctl.intercept_misc1 &= ~SVM_INTERCEPT_IRET;
}

/* Record where the event about to be delivered returns to. */
static struct check *record(struct svm_vcpu *v, unsigned kind, bool vc)
{
	if (n_checks == MAX_CHECKS)
		return NULL;
	struct check *c = &checks[n_checks];
	*c = (struct check){.v = v,
			    .rip = v->vmcb->save.rip,
			    .rsp = v->vmcb->save.rsp,
			    .rflags = v->vmcb->save.rflags,
			    .vc = vc,
			    .kind = kind};
	if (!sim_peek_linear(v, c->rsp - RED_ZONE, c->below, RED_ZONE))
		return NULL;
	gprs_of(v, c->gpr);
	n_checks++;
	st[kind].injected++;
	iret_intercept(v, true);
	return c;
}

static bool inject_hv(struct svm_vcpu *v, unsigned kind)
{
	if (v->vmcb->ctl.event_inj || !record(v, kind, false))
		return false;
	v->vmcb->ctl.event_inj = SVM_EVTINJ_VALID | SVM_EVTINJ_TYPE_EXCP | X86_VECTOR_HV;
	return true;
}

/* Is rsp on one of this vCPU's IST stacks (its TSS: TR base, include/csvsm/tss.h)? */
static bool on_ist(struct svm_vcpu *v, uint64_t rsp)
{
	uint64_t ist[EXC_IST_COUNT];
	if (!sim_peek_linear(v, v->vmcb->save.tr.base + offsetof(struct tss, ist), ist,
			     sizeof(ist)))
		return false;
	for (unsigned k = 0; k < EXC_IST_COUNT; k++)
		if (ist[k] && rsp <= ist[k] && ist[k] - rsp <= IST_STACK_SIZE)
			return true;
	return false;
}

/* The IRET intercept: compare what the frame returns to with its record. */
static void at_iret(struct svm_vcpu *v)
{
	uint64_t frame[5]; /* RIP, CS, RFLAGS, RSP, SS */
	if (n_checks && checks[n_checks - 1].v == v &&
	    sim_peek_linear(v, v->vmcb->save.rsp, frame, sizeof(frame))) {
		struct check *c = &checks[n_checks - 1];
		bool match =
		    frame[3] == c->rsp &&
		    (c->vc ? frame[0] > c->rip && frame[0] - c->rip <= 15 : frame[0] == c->rip);
		if (match) {
			uint8_t now[RED_ZONE];
			uint64_t g[15];
			gprs_of(v, g);
			bool rz_ok = sim_peek_linear(v, c->rsp - RED_ZONE, now, RED_ZONE) &&
				     !memcmp(now, c->below, RED_ZONE);
			bool gpr_ok = ((frame[2] ^ c->rflags) & ~RFLAGS_RF) == 0;
			for (unsigned i = c->vc ? 4 : 0; i < 15; i++)
				gpr_ok &= g[i] == c->gpr[i];
			st[c->kind].checked++;
			st[c->kind].rz_bad += !rz_ok;
			st[c->kind].gpr_bad += !gpr_ok;
			if ((!rz_ok || !gpr_ok) && bad_printed++ < 8) {
				unsigned first = 0;
				while (first < RED_ZONE && now[first] == c->below[first])
					first++;
				con_printf("%s: redzone: %s returning to rip 0x%llx rsp 0x%llx: "
					   "%s%s (first changed byte at rsp-%u)\n",
					   hv_tag, kind_name[c->kind], (unsigned long long)frame[0],
					   (unsigned long long)c->rsp,
					   rz_ok ? "" : "the 128 bytes below RSP changed",
					   gpr_ok ? "" : " registers changed", RED_ZONE - first);
			}
			last_rip = frame[0];
			last_rsp = frame[3];
			n_checks--;
		}
	}
	/* Let this IRET run: no intercept for it, TF so that the exit after it
	 * gives the intercept back (at_db). */
	iret_intercept(v, false);
	v->vmcb->save.rflags |= RFLAGS_TF;
	v->vmcb->ctl.intercept_exceptions |= 1u << 1;
	after_iret = v;
}

static void sweep_end(struct svm_vcpu *v, const char *how)
{
	phase = RZ_DONE;
	v->vmcb->save.rflags &= ~RFLAGS_TF;
	v->vmcb->save.dr6 = 0xFFFF0FF0ULL;
	hole(HOLE_ROUTINE, UINT64_MAX);
	hole(HOLE_STUB, UINT64_MAX);
	con_printf("%s: redzone: sweep of 0x%llx-0x%llx %s: %llu boundaries\n", hv_tag,
		   (unsigned long long)redzone_start, (unsigned long long)redzone_end, how,
		   (unsigned long long)boundaries);
}

/* A single-step trap of VMPL0 (RIP: the next instruction, not yet run). */
static void at_db(struct svm_vcpu *v)
{
	uint64_t rip = v->vmcb->save.rip, rsp = v->vmcb->save.rsp;
	bool returned = false;
	if (after_iret == v) {
		after_iret = NULL;
		if (n_checks)
			iret_intercept(v, true);
		/* The return from the event just checked: its boundary, again. */
		returned = rip == last_rip && rsp == last_rsp;
		if (returned && stepping_handler && rip >= redzone_start && rip < redzone_end)
			stepping_handler = false; /* that was the first handler's IRET */
	}
	if (phase == RZ_PASS && v == rz_v) {
		if (rip == redzone_start) {
			phase = RZ_SWEEP;
		} else if (page_of(rip) != page_of(redzone_start)) {
			v->vmcb->save.rflags &= ~RFLAGS_TF; /* another routine's page: wait again */
			phase = RZ_WAIT;
			hole(HOLE_ROUTINE, page_of(redzone_start));
			return;
		} else {
			return; /* still on the routine's page, elsewhere: step on */
		}
		rsp0 = rsp;
	}
	if (phase != RZ_SWEEP || v != rz_v) {
		/* A TF the machine left in a frame: the context runs on unstepped. */
		if (!n_checks && !after_iret) {
			stray_db += !returned;
			v->vmcb->save.rflags &= ~RFLAGS_TF;
		}
		return;
	}
	if (returned)
		return;
	if (rip >= redzone_start && rip < redzone_end) {
		if (++boundaries > MAX_BOUNDARIES) {
			sweep_end(v, "stopped at the limit");
			return;
		}
		if (boundaries % NEST_EVERY == 1 && stub_page) {
			hole(HOLE_STUB, stub_page); /* the handler's first fetch exits */
			handler_sweeps++;
		}
		inject_hv(v, K_SWEEP);
		return;
	}
	if (!stepping_handler) {
		if (rsp > rsp0)
			sweep_end(v, "done: the routine returned");
		return; /* else a callee of the routine */
	}
	if (on_ist(v, rsp)) {
		window_steps++; /* before the stub leaves its IST stack */
		return;
	}
	inject_hv(v, K_NESTED);
}

/* The #HV stub's page: from VMPL0's IDT gate 28. */
static gpa_t hv_stub_page(struct svm_vcpu *v)
{
	uint8_t gate[16];
	const struct vmcb_save *s = &v->vmcb->save;
	if (s->idtr.limit < X86_VECTOR_HV * 16 + 15 ||
	    !sim_peek_linear(v, s->idtr.base + X86_VECTOR_HV * 16, gate, sizeof(gate)))
		return 0;
	uint64_t off =
	    (uint64_t)(gate[0] | gate[1] << 8) | (uint64_t)(gate[6] | gate[7] << 8) << 16 |
	    (uint64_t)(gate[8] | gate[9] << 8 | gate[10] << 16 | (uint32_t)gate[11] << 24) << 32;
	return page_of(off);
}

/* At each of VMPL0's exits, before the core looks at it: true if it was the probe's. */
bool redzone_exit(struct svm_vcpu *v)
{
	uint32_t code = (uint32_t)v->vmcb->ctl.exit_code;
	if (phase == RZ_OFF || v->vmpl != 0)
		return false;
	if (code == SVM_EXIT_IRET || code == SVM_EXIT_DB || code == SVM_EXIT_NPF)
		v->vmcb->ctl.event_inj = 0; /* as the core does for every exit */
	if (code == SVM_EXIT_IRET) {
		at_iret(v);
		return true;
	}
	if (code == SVM_EXIT_DB) {
		at_db(v);
		return true;
	}
	if (code != SVM_EXIT_NPF)
		return false;
	gpa_t page = page_of(v->vmcb->ctl.exit_info_2 & ~(1ULL << 51));
	if (phase == RZ_WAIT && page == page_of(redzone_start)) {
		/* Something touched the routine's page: step until it is the
		 * routine's entry, or the access has left the page. */
		rz_v = v;
		stub_page = hv_stub_page(v);
		if (stub_page == page_of(redzone_start))
			stub_page = 0;
		hole(HOLE_ROUTINE, UINT64_MAX);
		v->vmcb->ctl.intercept_exceptions |= 1u << 1;
		v->vmcb->save.rflags |= RFLAGS_TF;
		phase = RZ_PASS;
		if (v->vmcb->save.rip == redzone_start) {
			phase = RZ_SWEEP;
			rsp0 = v->vmcb->save.rsp;
			boundaries = 1;
			inject_hv(v, K_SWEEP);
		}
		return true;
	}
	if (phase == RZ_SWEEP && v == rz_v && stub_page && page == stub_page) {
		/* The first fetch of the #HV handler: step it. */
		hole(HOLE_STUB, UINT64_MAX);
		v->vmcb->save.rflags |= RFLAGS_TF;
		stepping_handler = true;
		return true;
	}
	return false;
}

/* sim_snp_vc, before it delivers: a #VC from the libraries' code is checked. */
void redzone_vc_delivering(struct svm_vcpu *v)
{
	uint64_t rip = v->vmcb->save.rip;
	if (phase == RZ_OFF || v->vmpl != 0)
		return;
	for (unsigned i = 0; i < redzone_n_vc; i++)
		if (rip >= redzone_vc[i].start && rip < redzone_vc[i].end) {
			record(v, K_VC, true);
			return;
		}
}

/* After a VMGEXIT was served: inside a checked #VC's handler, inject #HV on the way back. */
void redzone_after_vmgexit(struct svm_vcpu *v)
{
	if (phase == RZ_OFF || v->vmpl != 0 || !n_checks)
		return;
	struct check *c = &checks[n_checks - 1];
	if (c->v != v || !c->vc || c->hv_done)
		return;
	c->hv_done = inject_hv(v, K_HV_IN_VC);
}

void redzone_init(void)
{
	if (!redzone_start)
		return;
	phase = RZ_WAIT;
	hole(HOLE_ROUTINE, page_of(redzone_start));
	con_printf("%s: redzone: the routine 0x%llx-0x%llx's first page is unmapped in VMPL0's "
		   "nested table until it runs; %u #VC range(s) checked\n",
		   hv_tag, (unsigned long long)redzone_start, (unsigned long long)redzone_end,
		   redzone_n_vc);
}

void redzone_report(void)
{
	if (phase == RZ_OFF)
		return;
	con_printf(
	    "%s: redzone: phase=%s boundaries=%llu handler_sweeps=%llu ist_window_steps=%llu "
	    "pending=%u stray_db=%llu\n",
	    hv_tag,
	    phase == RZ_WAIT || phase == RZ_PASS ? "not-reached"
	    : phase == RZ_SWEEP			 ? "unfinished"
						 : "done",
	    (unsigned long long)boundaries, (unsigned long long)handler_sweeps,
	    (unsigned long long)window_steps, n_checks, (unsigned long long)stray_db);
	for (unsigned k = 0; k < K_N; k++)
		con_printf("%s: redzone: %s: injected=%llu checked=%llu redzone_changed=%llu "
			   "registers_changed=%llu\n",
			   hv_tag, kind_name[k], (unsigned long long)st[k].injected,
			   (unsigned long long)st[k].checked, (unsigned long long)st[k].rz_bad,
			   (unsigned long long)st[k].gpr_bad);
}
