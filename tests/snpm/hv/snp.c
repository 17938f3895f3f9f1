/*
 * The SNP machine: what SEV-SNP hardware and a KVM host with SVSM support
 * show csvsm at VMPL0 and its guests (OVMF with AmdSvsmLib, Linux) at the
 * guest VMPL. QEMU 7.2 TCG has no SEV: the machine, the SVM host, supplies it.
 *
 *  - The hardware side: SEV_STATUS (sim_msr_access), the CPUID view and
 *    page (model/cpuid_page.c), #VC for the events a KVM host intercepts (IOIO,
 *    MSR, CPUID, MMIO, VMMCALL), delivered with an exception frame built
 *    here because QEMU pushes no error code for vector 29 (sim notes
 *    pitfall 8), and PVALIDATE/RMPADJUST (#UD under TCG) with the rules of
 *    the guest's VMPL on the RMP model.
 *  - The host side: the GHCB, both the MSR protocol and the page, as KVM
 *    serves it (arch/x86/kvm/svm/sev.c sev_handle_vmgexit,
 *    sev_handle_vmgexit_msr_protocol, sev_es_validate_vmgexit): SEV
 *    information, hypervisor features (SNP, AP creation, multi-VMPL), GHCB
 *    registration, CPUID, port I/O, MSR, MMIO, page-state change (complete
 *    requests, as KVM), AP creation, guest requests to the simulated PSP
 *    under the guest's own VMPCK, the VMPL switch to csvsm (SVSM calls),
 *    termination.
 *
 * The guest's GHCB and the pages it names are hostile input: each field is
 * read once, lengths are checked before any address is formed, and the
 * host side touches only guest RAM.
 *
 * Sources: AMD pub. 56421 (GHCB) §2-4, APM vol. 2 §8.2 (interrupt and
 * exception frames), §15.35-36 (SEV-ES/SNP), vol. 3 PVALIDATE/RMPADJUST;
 * shared/reference/snp-svsm-interfaces.md §4-5.
 */
#include "arch/x86/insn.h"
#include "attest/guest_req.h"
#include "tests/snpm/model/psp.h"
#include "base/console.h"
#include "csvsm/cpu.h"
#include "base/platform.h"
#include "base/string.h"
#include "base/svsm_call.h"
#include "mm/memmap.h"
#include "tests/snpm/model/rmp.h"
#include "svm.h"
#include "tests/snpm/model/cpuid_page.h"
#include "snp/ghcb.h"

#define SIM_CBIT 51

#define EFER_LMA  (1ULL << 10)
#define CR0_PE	  (1ULL << 0)
#define RF_TF	  (1ULL << 8)
#define RF_IF	  (1ULL << 9)
#define RF_NT	  (1ULL << 14)
#define RF_RF	  (1ULL << 16)
#define RF_VM	  (1ULL << 17)
#define VC_VECTOR 29

static const struct memmap *snp_mm;
/* csvsm.sim_trace=1: print every #VC and VMGEXIT (diagnostics). */
bool sim_snp_trace;

/* ---- counts ---- */
enum { VC_CPUID, VC_IOIO, VC_MSR, VC_MMIO, VC_VMMCALL, VC_OTHER, VC_N };
static uint64_t vc_count[VC_N];
static uint64_t emu_pvalidate, emu_rmpadjust, emu_msr_direct, emu_tlb;
static uint64_t nae_count[16];
static uint64_t nae_unregistered; /* VMGEXITs without a registered GHCB in guest RAM */
static uint64_t implicit_shared;  /* GHCB pages converted to shared on first use */
/* The guest VMPLs' page-state changes: exits (GHCB page and MSR forms) and entries. */
static uint64_t guest_psc_exits, guest_psc_entries;
static uint64_t csvsm_pages_revalidated; /* lost pages of csvsm's it validated again */

void sim_snp_get_counts(struct sim_snp_counts *out)
{
	*out = (struct sim_snp_counts){.pvalidate = emu_pvalidate,
				       .rmpadjust = emu_rmpadjust,
				       .guest_psc_exits = guest_psc_exits,
				       .guest_psc_entries = guest_psc_entries,
				       .csvsm_pages_revalidated = csvsm_pages_revalidated};
}

void sim_snp_init(const struct memmap *mm)
{
	snp_mm = mm;
}

void sim_snp_print_counts(void)
{
	con_printf("%s: snp-view: vc cpuid=%llu ioio=%llu msr=%llu mmio=%llu vmmcall=%llu "
		   "other=%llu; emulated without #VC: pvalidate=%llu rmpadjust=%llu msr=%llu; "
		   "ghcb unregistered=%llu implicit-shared=%llu\n",
		   hv_tag, (unsigned long long)vc_count[VC_CPUID],
		   (unsigned long long)vc_count[VC_IOIO], (unsigned long long)vc_count[VC_MSR],
		   (unsigned long long)vc_count[VC_MMIO], (unsigned long long)vc_count[VC_VMMCALL],
		   (unsigned long long)vc_count[VC_OTHER], (unsigned long long)emu_pvalidate,
		   (unsigned long long)emu_rmpadjust, (unsigned long long)emu_msr_direct,
		   (unsigned long long)nae_unregistered, (unsigned long long)implicit_shared);
}

/* ---- #VC delivery ---- */

static __noreturn void vc_fail(struct svm_vcpu *v, uint64_t code, const char *why)
{
	con_printf("%s: snp-view: #VC (0x%llx) cannot be delivered to vCPU %u at rip 0x%llx: "
		   "%s; the guest would triple-fault\n",
		   hv_tag, (unsigned long long)code, v->gv.id,
		   (unsigned long long)v->vmcb->save.rip, why);
	platform->terminate(false, 0, 0x25);
}

/* A code-segment descriptor from the GDT (8 bytes; an LDT is not supported here). */
static bool read_code_desc(struct svm_vcpu *v, uint16_t sel, uint64_t *desc)
{
	const struct vmcb_seg *gdtr = &v->vmcb->save.gdtr;
	if ((sel & 4) || (sel & ~7u) == 0 || (sel | 7u) > gdtr->limit)
		return false;
	return linear_copy_sys(v, gdtr->base + (sel & ~7u), desc, 8, false);
}

/* VMCB segment attributes from a descriptor: bits 47:40 and 55:52 (APM vol. 2 §15.5.1). */
static uint16_t desc_attrib(uint64_t d)
{
	return (uint16_t)(((d >> 40) & 0xFF) | (((d >> 52) & 0xF) << 8));
}

/*
 * Deliver vector 29 with error code `code` as an interrupt/trap gate of the
 * guest's IDT does (APM vol. 2 §8.9): long mode with IST and the 16-byte
 * alignment, or 32-bit protected mode; a stack switch from the TSS on a
 * privilege change. Everything read or written is the guest's own memory,
 * with its permissions as implicit supervisor accesses.
 */
void sim_snp_vc(struct svm_vcpu *v, uint64_t code)
{
	struct vmcb_save *s = &v->vmcb->save;
	bool lm = (s->efer & EFER_LMA) != 0;
	unsigned gsz = lm ? 16 : 8, cpl = (s->ss.attrib >> 5) & 3;
	uint8_t gate[16];
	uint64_t desc;

	if (redzone_start)
		redzone_vc_delivering(v);
	if (sim_snp_trace)
		con_printf("%s: trace: vCPU %u #VC 0x%llx rip 0x%llx rax 0x%llx rcx 0x%llx\n",
			   hv_tag, v->gv.id, (unsigned long long)code, (unsigned long long)s->rip,
			   (unsigned long long)s->rax, (unsigned long long)v->gprs.rcx);
	switch (code) {
	case SVM_EXIT_CPUID_CODE:
		vc_count[VC_CPUID]++;
		break;
	case SVM_EXIT_IOIO_CODE:
		vc_count[VC_IOIO]++;
		break;
	case SVM_EXIT_MSR_CODE:
		vc_count[VC_MSR]++;
		break;
	case SVM_EXIT_NPF:
		vc_count[VC_MMIO]++;
		break;
	case SVM_EXIT_VMMCALL:
		vc_count[VC_VMMCALL]++;
		break;
	default:
		vc_count[VC_OTHER]++;
	}
	if (!(s->cr0 & CR0_PE))
		vc_fail(v, code, "real mode");
	if (VC_VECTOR * gsz + gsz - 1 > s->idtr.limit ||
	    !linear_copy_sys(v, s->idtr.base + VC_VECTOR * gsz, gate, gsz, false))
		vc_fail(v, code, "no IDT entry");
	uint16_t sel = (uint16_t)(gate[2] | gate[3] << 8);
	unsigned type = gate[5] & 0x1F, ist = lm ? gate[4] & 7 : 0;
	uint64_t off =
	    gate[0] | (uint64_t)gate[1] << 8 | (uint64_t)gate[6] << 16 | (uint64_t)gate[7] << 24;
	if (lm)
		off |=
		    (uint64_t)(gate[8] | gate[9] << 8 | gate[10] << 16 | (uint32_t)gate[11] << 24)
		    << 32;
	if (!(gate[5] & 0x80) || (type != 0xE && type != 0xF))
		vc_fail(v, code, "not a present interrupt or trap gate");
	if (!read_code_desc(v, sel, &desc) || !(desc & (1ULL << 47)) || !(desc & (1ULL << 43)))
		vc_fail(v, code, "gate selector is not a present code segment");
	unsigned dpl = (unsigned)(desc >> 45) & 3;
	bool conforming = (desc >> 42) & 1;
	unsigned ncpl = conforming ? cpl : dpl;
	if (ncpl > cpl)
		vc_fail(v, code, "gate to a less privileged level");

	uint64_t rsp = s->rsp, frame[6];
	unsigned n = 0, w = lm ? 8 : 4;
	uint16_t ss_sel = s->ss.sel;
	bool stack_switch = ncpl < cpl;
	if (lm) {
		uint64_t tss = s->tr.base, nrsp = 0;
		if (stack_switch && !linear_copy_sys(v, tss + 4 + 8 * ncpl, &nrsp, 8, false))
			vc_fail(v, code, "no TSS stack");
		if (ist && !linear_copy_sys(v, tss + 0x24 + 8 * (ist - 1), &nrsp, 8, false))
			vc_fail(v, code, "no IST stack");
		if (stack_switch || ist)
			rsp = nrsp;
		rsp &= ~0xFULL; /* APM vol. 2 §8.9.3: aligned before the push */
		frame[n++] = code;
		frame[n++] = s->rip;
		frame[n++] = s->cs.sel;
		frame[n++] = s->rflags;
		frame[n++] = s->rsp;
		frame[n++] = s->ss.sel;
	} else {
		uint32_t esp0 = 0;
		uint16_t ss0 = 0;
		if (stack_switch &&
		    (!linear_copy_sys(v, s->tr.base + 4 + 8 * ncpl, &esp0, 4, false) ||
		     !linear_copy_sys(v, s->tr.base + 8 + 8 * ncpl, &ss0, 2, false)))
			vc_fail(v, code, "no TSS stack");
		frame[n++] = (uint32_t)code;
		frame[n++] = (uint32_t)s->rip;
		frame[n++] = s->cs.sel;
		frame[n++] = (uint32_t)s->rflags;
		if (stack_switch) {
			frame[n++] = (uint32_t)s->rsp;
			frame[n++] = s->ss.sel;
			rsp = esp0;
			ss_sel = ss0;
		}
		rsp = (uint32_t)rsp;
	}
	/* Write the frame (lowest address first: error code, RIP, CS, ...). */
	uint8_t bytes[48];
	for (unsigned i = 0; i < n; i++)
		memcpy(bytes + i * w, &frame[i], w);
	rsp -= (uint64_t)n * w;
	if (!lm)
		rsp = (uint32_t)(s->ss.base + rsp) - s->ss.base;
	if (!linear_copy_sys(v, (lm ? 0 : s->ss.base) + rsp, bytes, n * w, true))
		vc_fail(v, code, "the stack is not writable");

	/* The new context. */
	if (stack_switch) {
		if (lm) {
			/* 64-bit: SS is the NULL selector with RPL = new CPL. */
			s->ss.sel = (uint16_t)ncpl;
			s->ss.attrib = (uint16_t)(0x93 | (ncpl << 5));
			s->ss.base = 0;
			s->ss.limit = 0xFFFFFFFF;
		} else {
			uint64_t sd;
			if (!read_code_desc(v, ss_sel, &sd)) /* any GDT descriptor */
				vc_fail(v, code, "no stack segment");
			s->ss.sel = ss_sel;
			s->ss.attrib = desc_attrib(sd);
			s->ss.base = ((sd >> 16) & 0xFFFFFF) | ((sd >> 32) & 0xFF000000);
			s->ss.limit = (uint32_t)((sd & 0xFFFF) | ((sd >> 32) & 0xF0000));
			if (sd & (1ULL << 55))
				s->ss.limit = (s->ss.limit << 12) | 0xFFF;
		}
	}
	s->rsp = rsp;
	s->cs.sel = (uint16_t)((sel & ~3u) | ncpl);
	s->cs.attrib = desc_attrib(desc);
	s->cs.base = lm ? 0 : ((desc >> 16) & 0xFFFFFF) | ((desc >> 32) & 0xFF000000);
	s->cs.limit = 0xFFFFFFFF;
	s->cpl = (uint8_t)ncpl;
	s->rip = off;
	s->rflags &= ~(RF_TF | RF_NT | RF_RF | RF_VM);
	if (type == 0xE)
		s->rflags &= ~RF_IF; /* interrupt gate */
	v->vmcb->ctl.event_inj = 0;
}

/* ---- PVALIDATE / RMPADJUST at the guest's VMPL ---- */

/*
 * TCG raises #UD for both (sim notes pitfall 9). PVALIDATE can only be
 * executed at VMPL0 (Linux "x86/sev: Perform PVALIDATE using the SVSM when
 * not at VMPL0"; its documented results are 0, FAIL_INPUT and
 * FAIL_SIZEMISMATCH only, Microsoft's __pvalidate): at the guest VMPL it
 * is #GP(0). RMPADJUST runs on the RMP model with the rules of the caller's
 * VMPL (rmp_adjust_from): OVMF (SevSnpIsVmpl0) and Linux (svsm_setup_ca)
 * target VMPL1 to learn they are not at VMPL0, and get FAIL_PERMISSION.
 */
/*
 * The guest changed an RMP entry (PVALIDATE, RMPADJUST): the nested tables
 * follow, except that permissions it took away stay usable until csvsm's
 * flush (sim_npt_hold). A 2M operation acts on a 2M entry, whose 4K pages
 * share its attributes: one query describes the whole entry.
 */
static void guest_rmp_changed(gpa_t gpa, bool big, const struct rmp_entry_info *before)
{
	uint64_t size = big ? PAGE_SIZE_2M : PAGE_SIZE;
	struct rmp_entry_info after = {0};
	rmp_query(gpa, &after);
	sim_npt_hold(gpa, size, before, &after);
	sim_npt_sync(gpa, size);
}

bool sim_snp_ud(struct svm_vcpu *v)
{
	struct vmcb_save *s = &v->vmcb->save;
	uint8_t insn[4] = {0};
	size_t n = fetch_insn(v, insn, 4);
	/* INVLPGB (0F 01 FE) and TLBSYNC (0F 01 FF), which TCG does not have either. */
	bool invlpgb = n >= 3 && insn[0] == 0x0F && insn[1] == 0x01 && insn[2] == 0xFE;
	bool tlbsync = n >= 3 && insn[0] == 0x0F && insn[1] == 0x01 && insn[2] == 0xFF;
	bool pval =
	    n == 4 && insn[0] == 0xF2 && insn[1] == 0x0F && insn[2] == 0x01 && insn[3] == 0xFF;
	bool radj =
	    n == 4 && insn[0] == 0xF3 && insn[1] == 0x0F && insn[2] == 0x01 && insn[3] == 0xFE;
	if (!pval && !radj && !invlpgb && !tlbsync) {
		if (sim_snp_trace)
			con_printf("%s: trace: vCPU %u #UD at rip 0x%llx: %02x %02x %02x %02x\n",
				   hv_tag, v->gv.id, (unsigned long long)s->rip, insn[0], insn[1],
				   insn[2], insn[3]);
		return false;
	}
	if (((s->ss.attrib >> 5) & 3) != 0) {
		inject_exception(v, 13, true, 0); /* CPL0 instructions */
		return true;
	}
	if (invlpgb || tlbsync) {
		/* The machine's nested tables are shared by all vCPUs: INVLPGB of
		 * everything (what csvsm issues) is a shootdown, done synchronously,
		 * so TLBSYNC finds it complete. */
		if (invlpgb)
			sim_guest_invlpgb();
		emu_tlb++;
		s->rip += 3;
		return true;
	}
	gpa_t gpa;
	bool big = (reg_value(v, 1) & 1) != 0;
	if (pval) {
		emu_pvalidate++;
		if (v->vmpl != 0) {
			inject_exception(v, 13, true, 0); /* VMPL0 only */
			return true;
		}
		if (!sim_translate(v, s->rax, GW_READ, &gpa))
			return true;
		bool unchanged = false;
		/* Not aligned here: a misaligned address is FAIL_INPUT (APM vol. 3
		 * PVALIDATE; check_page), and success implies it is aligned. */
		struct rmp_entry_info before = {0};
		rmp_query(gpa, &before);
		int rc = rmp_pvalidate(gpa, big ? RMP_PG_SIZE_2M : RMP_PG_SIZE_4K,
				       (reg_value(v, 2) & 1) != 0, &unchanged);
		if (rc == 0)
			guest_rmp_changed(gpa, big, &before);
		/* csvsm must never validate a page of its own the host converted
		 * behind it (issue 34 item 6): counted, the tests require 0. */
		if (rc == 0 && !unchanged && (reg_value(v, 2) & 1) && sim_csvsm_page_lost(gpa))
			csvsm_pages_revalidated++;
		s->rax = (uint64_t)rc;
		s->rflags &= ~0x8D5ULL; /* CF = "no change"; the other arithmetic flags cleared */
		if (unchanged)
			s->rflags |= 1;
		s->rip += 4;
		return true;
	}
	emu_rmpadjust++;
	if (!sim_translate(v, s->rax, GW_READ, &gpa))
		return true;
	gpa &= ~(big ? PAGE_SIZE_2M - 1 : PAGE_SIZE - 1);
	struct rmp_entry_info before = {0};
	rmp_query(gpa, &before);
	int rc =
	    rmp_adjust_from(v->vmpl, gpa, big ? RMP_PG_SIZE_2M : RMP_PG_SIZE_4K, reg_value(v, 2));
	if (rc == 0)
		guest_rmp_changed(gpa, big, &before);
	s->rax = (uint64_t)rc;
	s->rflags &= ~0x8D5ULL; /* arithmetic flags cleared, as the instruction does */
	s->rip += 4;
	return true;
}

/* ---- the host side of the GHCB ---- */

/*
 * May the host side touch guest-physical [gpa, gpa + len)? Only guest RAM
 * the guest has made shared: on hardware a private page reads as
 * ciphertext and a host write to it faults (APM vol. 2 §15.36.10), so a
 * guest that forgot to share a page fails here as it would there.
 */
static bool hv_may_touch(gpa_t gpa, uint64_t len)
{
	if (!len || !hv_is_mem(gpa, len))
		return false;
	for (gpa_t p = ALIGN_DOWN(gpa, PAGE_SIZE); p < gpa + len; p += PAGE_SIZE) {
		struct rmp_entry_info e;
		if (rmp_query(p, &e) || e.assigned)
			return false;
	}
	return true;
}

bool sim_snp_host_may_touch(gpa_t gpa, uint64_t len)
{
	return hv_may_touch(gpa, len);
}

static int psc_one(gpa_t gpa, bool big, uint64_t op);

/*
 * The guest's registered GHCB page, or NULL. The guest writes its GHCB
 * with the C-bit clear. KVM with guest_memfd takes such an access to a
 * page it holds private as an implicit conversion to shared (the memory
 * fault exit QEMU answers with a conversion); OVMF's SEC uses a GHCB page
 * at 0x809000 that it never converts itself and that csvsm pre-accepted.
 * TCG's nested walk does not see the C-bit of an access (bits 51:48 are
 * ignored), so the sim makes that conversion when the host first needs
 * the page, and counts it.
 */
static struct ghcb *ghcb_of(struct svm_vcpu *v)
{
	gpa_t g = v->ghcb_gpa;
	if (!g || (v->ghcb_msr & GHCB_MSR_INFO_MASK) || v->ghcb_msr != g ||
	    !hv_is_mem(g, PAGE_SIZE)) {
		nae_unregistered++;
		return NULL;
	}
	if (!hv_may_touch(g, PAGE_SIZE)) {
		if (psc_one(g, false, PSC_OP_SHARED) || !hv_may_touch(g, PAGE_SIZE)) {
			nae_unregistered++;
			return NULL;
		}
		implicit_shared++;
	}
	return (struct ghcb *)(uintptr_t)hv_hpa(g);
}

static uint64_t rd(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

static void wr(struct ghcb *g, uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELAXED);
	size_t off = (size_t)((uint8_t *)p - (uint8_t *)g);
	((volatile uint8_t *)g->valid_bitmap)[off / 64] |= (uint8_t)(1u << ((off / 8) % 8));
}

static void result(struct ghcb *g, uint64_t info1, uint64_t info2)
{
	__atomic_store_n(&g->sw_exit_info_1, info1, __ATOMIC_RELAXED);
	__atomic_store_n(&g->sw_exit_info_2, info2, __ATOMIC_RELAXED);
}

#define VALID(g, field) ghcb_is_valid((g), offsetof(struct ghcb, field))

/* A buffer the guest names in the GHCB (sw_scratch): inside its shared buffer. */
static uint8_t *scratch(struct svm_vcpu *v, struct ghcb *g, uint64_t len)
{
	gpa_t sa = rd(&g->sw_scratch), base = v->ghcb_gpa + offsetof(struct ghcb, shared_buffer);
	if (len == 0 || sa < base || len > sizeof(g->shared_buffer) ||
	    sa - base > sizeof(g->shared_buffer) - len)
		return NULL;
	return g->shared_buffer + (sa - base);
}

static void nae_cpuid(struct svm_vcpu *v, struct ghcb *g)
{
	if (!VALID(g, rax) || !VALID(g, rcx)) {
		result(g, GHCB_RESULT_ERROR, GHCB_ERR_MISSING_INPUT);
		return;
	}
	struct cpuid_regs r;
	uint32_t leaf = (uint32_t)rd(&g->rax), sub = (uint32_t)rd(&g->rcx);
	cpuid_count(leaf, sub, &r); /* this vCPU's own answer (its APIC ID) */
	cpuid_page_adjust(leaf, sub, SIM_CBIT, &r);
	wr(g, &g->rax, r.eax);
	wr(g, &g->rbx, r.ebx);
	wr(g, &g->rcx, r.ecx);
	wr(g, &g->rdx, r.edx);
	result(g, GHCB_RESULT_OK, 0);
}

/* IOIO (56421 §4.1.2; exit_info_1 as the SVM IOIO intercept's EXITINFO1). */
static void nae_ioio(struct svm_vcpu *v, struct ghcb *g)
{
	uint64_t info = rd(&g->sw_exit_info_1);
	uint16_t port = (uint16_t)(info >> 16);
	unsigned size = (info & (1u << 6)) ? 4 : (info & (1u << 5)) ? 2 : 1;
	bool in = info & 1;
	if (!(info & (1u << 2))) { /* not a string */
		/* KVM sev_es_validate_vmgexit: RAX is input for OUT only (Linux's
		 * vc_handle_ioio does not set it for IN). */
		if (!in && !VALID(g, rax)) {
			result(g, GHCB_RESULT_ERROR, GHCB_ERR_MISSING_INPUT);
			return;
		}
		uint32_t val = in ? 0 : (uint32_t)rd(&g->rax);
		if (!sim_io_port(port, size, in, &val))
			return; /* power event: the VM ends */
		if (in)
			wr(g, &g->rax, val);
		result(g, GHCB_RESULT_OK, 0);
		return;
	}
	uint64_t count = rd(&g->sw_exit_info_2), bytes;
	uint8_t *buf;
	if (!VALID(g, sw_scratch) || MUL_OVERFLOW(count, (uint64_t)size, &bytes) ||
	    !(buf = scratch(v, g, bytes))) {
		result(g, GHCB_RESULT_ERROR, GHCB_ERR_INVALID_SCRATCH_AREA);
		return;
	}
	for (uint64_t i = 0; i < count; i++) {
		uint32_t val = 0;
		if (!in)
			memcpy(&val, buf + i * size, size);
		if (!sim_io_port(port, size, in, &val))
			return;
		if (in)
			memcpy(buf + i * size, &val, size);
	}
	result(g, GHCB_RESULT_OK, 0);
}

static void nae_msr(struct svm_vcpu *v, struct ghcb *g)
{
	bool wrt = rd(&g->sw_exit_info_1) & 1;
	if (!VALID(g, rcx) || (wrt && (!VALID(g, rax) || !VALID(g, rdx)))) {
		result(g, GHCB_RESULT_ERROR, GHCB_ERR_MISSING_INPUT);
		return;
	}
	uint32_t msr = (uint32_t)rd(&g->rcx);
	uint64_t val = wrt ? ((rd(&g->rax) & 0xFFFFFFFFULL) | (rd(&g->rdx) << 32)) : 0;
	if (msr == MSR_GHCB || !sim_msr_access(v, msr, wrt, &val)) {
		/* KVM: an MSR it does not have is #GP for the guest (info1 = 1). */
		result(g, GHCB_RESULT_EXCEPTION,
		       SVM_EVTINJ_VALID | SVM_EVTINJ_TYPE_EXEPT | SVM_EVTINJ_VALID_ERR | 13);
		return;
	}
	if (!wrt) {
		wr(g, &g->rax, val & 0xFFFFFFFFULL);
		wr(g, &g->rdx, val >> 32);
	}
	result(g, GHCB_RESULT_OK, 0);
}

static void nae_mmio(struct svm_vcpu *v, struct ghcb *g, bool write)
{
	gpa_t gpa = rd(&g->sw_exit_info_1) & ~(1ULL << SIM_CBIT);
	uint64_t len = rd(&g->sw_exit_info_2), val = 0;
	uint8_t *buf;
	if (!VALID(g, sw_scratch) || (len != 1 && len != 2 && len != 4 && len != 8) ||
	    !(buf = scratch(v, g, len))) {
		result(g, GHCB_RESULT_ERROR, GHCB_ERR_INVALID_SCRATCH_AREA);
		return;
	}
	/* Guest memory is not MMIO: the guest's own accesses reach it directly. */
	if (hv_is_mem(gpa, len)) {
		result(g, GHCB_RESULT_ERROR, GHCB_ERR_INVALID_INPUT);
		return;
	}
	if (write)
		memcpy(&val, buf, len);
	sim_mmio(gpa, (unsigned)len, write, &val);
	if (!write)
		memcpy(buf, &val, len);
	result(g, GHCB_RESULT_OK, 0);
}

/*
 * Page-state change, one entry (56421 §4.1.6) as KVM completes it: a page
 * already in the requested state is left alone (an already-private page
 * keeps its validated state; KVM converts only what changes), private
 * assigns it unvalidated, shared gives it back to the host. 0 or -1.
 */
bool snpm_psc_nonram_error; /* snpm.psc_nonram=error */

/*
 * snpm.frame_swap=N (issue 17 item 2): a hostile host that, at the first N
 * page-state changes to private of pages already private and validated
 * (the guest firmware asking again for memory csvsm pre-accepted or
 * validated), RMPUPDATEs a fresh frame for the first page instead of
 * leaving it alone, and keeps the old frame assigned and validated. A guest
 * that then has csvsm validate the GPA would own two validated frames for
 * it, between which the host could switch. True when it swapped.
 */
unsigned snpm_frame_swap;
/*
 * snpm.frame_swap_2m=N: the same for the first N such changes of a 2M entry
 * (the firmware re-validating RAM in 2 MiB pages, issue 36), the page in the
 * middle of the block swapped: csvsm serves the block from its record, and
 * only the RMP check of its zeroing meets that page.
 */
unsigned snpm_frame_swap_2m;

static bool psc_swap_frame(gpa_t gpa, uint64_t bytes)
{
	for (gpa_t g = gpa; g < gpa + bytes; g += PAGE_SIZE) {
		struct rmp_entry_info e;
		if (rmp_query(g, &e) || !e.validated || e.vmsa)
			return false;
	}
	gpa_t victim = bytes == PAGE_SIZE_2M ? gpa + PAGE_SIZE_2M / 2 : gpa;
	if (sim_host_swap_frame(victim))
		return false;
	if (bytes == PAGE_SIZE_2M && snpm_frame_swap_2m)
		snpm_frame_swap_2m--;
	else
		snpm_frame_swap--;
	con_printf("snpm: hostile: frame swap: GPA 0x%llx is on a fresh frame (asked private "
		   "again, 0x%llx +0x%llx); its old frame stays assigned and validated\n",
		   (unsigned long long)victim, (unsigned long long)gpa, (unsigned long long)bytes);
	return true;
}

static int psc_one(gpa_t gpa, bool big, uint64_t op)
{
	uint64_t bytes = big ? PAGE_SIZE_2M : PAGE_SIZE;
	int rc = 0;
	if (!IS_ALIGNED(gpa, bytes))
		return -1;
	if (!hv_is_mem(gpa, bytes)) {
		/* Memory the host does not back with guest_memfd (the legacy
		 * window, MMIO, memory that is not the VM's): QEMU's conversion
		 * to private fails (accel/kvm/kvm-all.c kvm_convert_memory) and a
		 * failed KVM_HC_MAP_GPA_RANGE exit stops the vCPU with an
		 * internal error (target/i386/kvm/kvm.c kvm_handle_hypercall,
		 * ret < 0). kvm_convert_memory answers a to-shared conversion of
		 * MMIO or unassigned memory with success and does nothing (of
		 * non-guest_memfd RAM or ROM it fails); the machine stops for
		 * that too: harsher, and csvsm converts no such memory. */
		if (snpm_psc_nonram_error)
			return -1;
		con_printf("%s: host: page-state change of GPA 0x%llx (+0x%llx), not guest memory: "
			   "the VM stops here, as QEMU stops it\n",
			   hv_tag, (unsigned long long)gpa, (unsigned long long)bytes);
		platform->terminate(false, 0, 0x26);
	}
	if (op == PSC_OP_PSMASH)
		return big ? rmp_hv_psmash(gpa) : -1;
	if (op != PSC_OP_PRIVATE && op != PSC_OP_SHARED)
		return -1; /* UNSMASH is not offered */
	bool priv = op == PSC_OP_PRIVATE, all_same = true, none_same = true;
	for (gpa_t g = gpa; g < gpa + bytes; g += PAGE_SIZE) {
		struct rmp_entry_info e;
		if (rmp_query(g, &e))
			return -1;
		all_same &= e.assigned == priv;
		none_same &= e.assigned != priv;
	}
	if (all_same) {
		if (priv && (snpm_frame_swap || (big && snpm_frame_swap_2m)))
			psc_swap_frame(gpa, bytes);
		return 0;
	}
	if (none_same || !big) {
		rc = rmp_hv_assign(gpa, big, priv);
	} else {
		for (gpa_t g = gpa; g < gpa + bytes && !rc; g += PAGE_SIZE) {
			struct rmp_entry_info e;
			if (rmp_query(g, &e) == 0 && e.assigned != priv)
				rc = rmp_hv_assign(g, false, priv);
		}
	}
	sim_npt_release(gpa, bytes); /* the host flushes what it changed */
	sim_npt_sync(gpa, bytes);
	if (!priv)
		sim_flush_guest_tlb(); /* private mappings of it are gone everywhere */
	return rc;
}

/*
 * snpm.psc_refuse=S-E (issue 34 item 2): a hostile host that refuses VMPL0's
 * page-state changes to private of [S, E) with KVM's error answer (as for an
 * entry it refuses: snp_begin_psc, cur_entry at it) and grants the guest
 * VMPL's, so RAM it backs is left out of csvsm's pre-acceptance as a "host
 * map error" and the guest can make it private and validate it later.
 */
gpa_t snpm_psc_refuse_start, snpm_psc_refuse_end;
static uint64_t psc_refusals;

static bool psc_refused(const struct svm_vcpu *v, gpa_t gpa, bool big, uint64_t op)
{
	uint64_t bytes = big ? PAGE_SIZE_2M : PAGE_SIZE;
	bool no = v->vmpl == 0 && op == PSC_OP_PRIVATE && gpa < snpm_psc_refuse_end &&
		  snpm_psc_refuse_start < gpa + bytes;
	psc_refusals += no;
	return no;
}

void sim_snp_print_psc_refuse(void)
{
	uint64_t pages = 0, valid = 0;
	if (snpm_psc_refuse_start >= snpm_psc_refuse_end)
		return;
	for (gpa_t g = snpm_psc_refuse_start; g < snpm_psc_refuse_end; g += PAGE_SIZE) {
		struct rmp_entry_info e;
		pages++;
		valid += rmp_query(g, &e) == 0 && e.assigned && e.validated;
	}
	con_printf("snpm: psc-refuse: 0x%llx-0x%llx refused=%llu validated=%llu/%llu\n",
		   (unsigned long long)snpm_psc_refuse_start,
		   (unsigned long long)snpm_psc_refuse_end, (unsigned long long)psc_refusals,
		   (unsigned long long)valid, (unsigned long long)pages);
}

static void nae_psc(struct svm_vcpu *v, struct ghcb *g)
{
	struct psc_desc *d;
	if (!VALID(g, sw_scratch) ||
	    !(d = (struct psc_desc *)scratch(v, g, sizeof(struct psc_desc)))) {
		result(g, GHCB_RESULT_ERROR, GHCB_ERR_INVALID_SCRATCH_AREA);
		return;
	}
	uint16_t cur = __atomic_load_n(&d->cur_entry, __ATOMIC_RELAXED),
		 end = __atomic_load_n(&d->end_entry, __ATOMIC_RELAXED);
	if (v->vmpl != 0) {
		guest_psc_exits++;
		guest_psc_entries += end >= cur ? (uint64_t)(end - cur) + 1 : 0;
	}
	/* The header's reserved field is not checked: KVM does not, and OVMF
	 * does not clear it (it reuses the shared buffer of earlier exits). */
	if (end >= PSC_MAX_ENTRIES) {
		con_printf("%s: snp-view: page-state change with end entry %u refused\n", hv_tag,
			   end);
		result(g, GHCB_RESULT_ERROR, GHCB_ERR_INVALID_INPUT);
		return;
	}
	for (; cur <= end; cur++) {
		uint64_t e = __atomic_load_n(&d->entries[cur], __ATOMIC_RELAXED);
		gpa_t gpa = e & PSC_ENTRY_GFN_MASK;
		bool big = (e & PSC_ENTRY_SIZE_2M) != 0;
		uint64_t op = (e & PSC_ENTRY_OP_MASK) >> PSC_ENTRY_OP_SHIFT;
		if ((e & PSC_ENTRY_RSVD_MASK) || psc_refused(v, gpa, big, op) ||
		    psc_one(gpa, big, op)) {
			con_printf("%s: snp-view: page-state change entry %u (0x%llx) refused\n",
				   hv_tag, cur, (unsigned long long)e);
			__atomic_store_n(&d->cur_entry, cur, __ATOMIC_RELAXED);
			result(g, GHCB_RESULT_OK, 1ULL << 32); /* non-zero: the entry failed */
			return;
		}
	}
	__atomic_store_n(&d->cur_entry, cur, __ATOMIC_RELAXED);
	result(g, GHCB_RESULT_OK, 0);
}

/*
 * SNP guest request under the guest's own VMPCK (the header names it; the
 * PSP model refuses a key it does not hold and a report VMPL above the
 * key's). The pages are guest RAM the guest shared; the host copies the
 * request in once and the response out once, as KVM does with its bounce
 * pages (sev.c snp_handle_guest_req).
 */
static void nae_guest_request(struct svm_vcpu *v, struct ghcb *g, bool ext)
{
	static struct snp_guest_msg req, resp;
	gpa_t rq = rd(&g->sw_exit_info_1), rs = rd(&g->sw_exit_info_2), data = 0;
	uint64_t npages = 0;
	if (ext) {
		if (!VALID(g, rax) || !VALID(g, rbx)) {
			result(g, GHCB_RESULT_ERROR, GHCB_ERR_MISSING_INPUT);
			return;
		}
		data = rd(&g->rax);
		npages = rd(&g->rbx);
	}
	uint64_t dbytes;
	if (!IS_ALIGNED(rq, PAGE_SIZE) || !IS_ALIGNED(rs, PAGE_SIZE) ||
	    !hv_may_touch(rq, PAGE_SIZE) || !hv_may_touch(rs, PAGE_SIZE) ||
	    MUL_OVERFLOW(npages, PAGE_SIZE, &dbytes) ||
	    (npages && (!IS_ALIGNED(data, PAGE_SIZE) || !hv_may_touch(data, dbytes)))) {
		result(g, GHCB_RESULT_ERROR, GHCB_ERR_INVALID_INPUT);
		return;
	}
	if (ext) {
		const uint8_t *certs;
		size_t clen;
		psp_model_certs(&certs, &clen);
		uint64_t need = (clen + PAGE_SIZE - 1) / PAGE_SIZE;
		if (npages < need) {
			wr(g, &g->rbx, need); /* KVM: INVALID_LEN, RBX = pages needed */
			result(g, GHCB_RESULT_OK,
			       (uint64_t)SNP_GUEST_VMM_ERR_INVALID_LEN << SNP_GUEST_VMM_ERR_SHIFT);
			return;
		}
		if (npages) {
			static const uint8_t zero[PAGE_SIZE];
			for (uint64_t i = 0; i < npages; i++)
				hv_copy_to(data + i * PAGE_SIZE, zero, PAGE_SIZE);
			hv_copy_to(data, certs, clen);
		}
	}
	hv_copy_from(&req, rq, sizeof(req));
	sim_fpu_enter(); /* the PSP model's crypto */
	uint32_t fw = psp_model_handle(&req, &resp);
	if (fw == 0)
		hv_copy_to(rs, &resp, sizeof(resp));
	memzero_explicit(&resp, sizeof(resp));
	result(g, GHCB_RESULT_OK, fw);
	(void)v;
}

/*
 * What the host reports (GHCB HV_FEATURES): SNP and AP creation (KVM
 * GHCB_HV_FT_SUPPORTED), restricted injection (KVM "Inject #HV when
 * restricted injection is active": GHCB_HV_FT_SNP_RINJ, bit 2 with AP
 * creation) and the multi-VMPL events an SVSM needs (bit 5, Linux
 * GHCB_HV_FT_SNP_MULTI_VMPL; the planes series).
 */
static const uint64_t hv_features_planes = GHCB_HV_FT_SNP | GHCB_HV_FT_SNP_AP_CREATION |
					   GHCB_HV_FT_RESTRICTED_INJ | GHCB_HV_FT_SNP_MULTI_VMPL;

/* snpm.run_vmpl=msr: a host without the GHCB RUN_VMPL event (MSR form only). */
bool snpm_run_vmpl_msr_only;
/*
 * snpm.multi_vmpl=0: a host without the multi-VMPL events (upstream KVM, or
 * the planes series before PATCH 60/60 "Advertise full multi-VMPL support",
 * which sets bit 5 once RUN_VMPL and the MSR form exist): bit 5 is not
 * reported, RUN_VMPL is an unknown event (sev_es_validate_vmgexit:
 * INVALID_EVENT) and the MSR-form VMPL request an unknown request, whose
 * value KVM leaves in the GHCB MSR (sev_handle_vmgexit_msr_protocol,
 * default case).
 */
bool snpm_no_multi_vmpl;
#define hv_features (hv_features_planes & ~(snpm_no_multi_vmpl ? GHCB_HV_FT_SNP_MULTI_VMPL : 0))

static __noreturn void guest_terminates(struct svm_vcpu *v, unsigned set, unsigned code)
{
	con_printf("%s: guest requested termination (reason set %u code %u) on vCPU %u\n", hv_tag,
		   set, code, v->gv.id);
	sim_snp_print_counts();
	redzone_report();
	hv_guest_terminated(v);
	platform->terminate(false, 0, 0);
}

static void vmgexit_page(struct svm_vcpu *v)
{
	struct ghcb *g = ghcb_of(v);
	if (!g)
		return; /* no registered GHCB to answer into: nothing happens */
	if (!VALID(g, sw_exit_code) || !VALID(g, sw_exit_info_1) || !VALID(g, sw_exit_info_2)) {
		result(g, GHCB_RESULT_ERROR, GHCB_ERR_MISSING_INPUT);
		return;
	}
	uint64_t code = rd(&g->sw_exit_code), info1 = rd(&g->sw_exit_info_1);
	nae_count[code & 0xF]++;
	if (code != SVM_VMGEXIT_SNP_RUN_VMPL) /* the switch itself ends the serving time */
		hv_serving_audit(v);
	if (sim_snp_trace)
		con_printf("%s: trace: vCPU %u GHCB 0x%llx exit 0x%llx info1 0x%llx info2 0x%llx\n",
			   hv_tag, v->gv.id, (unsigned long long)v->ghcb_gpa,
			   (unsigned long long)code, (unsigned long long)info1,
			   (unsigned long long)rd(&g->sw_exit_info_2));
	switch (code) {
	case SVM_EXIT_CPUID_CODE:
		nae_cpuid(v, g);
		break;
	case SVM_EXIT_IOIO_CODE:
		nae_ioio(v, g);
		break;
	case SVM_EXIT_MSR_CODE:
		nae_msr(v, g);
		break;
	case SVM_VMGEXIT_MMIO_READ:
	case SVM_VMGEXIT_MMIO_WRITE:
		nae_mmio(v, g, code == SVM_VMGEXIT_MMIO_WRITE);
		break;
	case SVM_VMGEXIT_PSC:
		nae_psc(v, g);
		break;
	case SVM_VMGEXIT_GUEST_REQUEST:
	case SVM_VMGEXIT_EXT_GUEST_REQUEST:
		nae_guest_request(v, g, code == SVM_VMGEXIT_EXT_GUEST_REQUEST);
		break;
	case SVM_VMGEXIT_AP_CREATION: {
		uint64_t rax = VALID(g, rax) ? rd(&g->rax) : ~0ULL;
		bool ok = ap_create(v, info1, rd(&g->sw_exit_info_2), rax) == 0;
		result(g, ok ? GHCB_RESULT_OK : GHCB_RESULT_ERROR, ok ? 0 : GHCB_ERR_INVALID_INPUT);
		break;
	}
	case SVM_VMGEXIT_HV_DOORBELL: {
		uint64_t out = 0;
		if (hv_doorbell_nae(v, info1, rd(&g->sw_exit_info_2), &out))
			result(g, GHCB_RESULT_OK, out);
		else
			result(g, GHCB_RESULT_ERROR, GHCB_ERR_INVALID_INPUT);
		break;
	}
	case SVM_VMGEXIT_SNP_RUN_VMPL:
		/*
		 * snpm.run_vmpl=msr: refuse the GHCB form from VMPL0 only, as
		 * KVM's sev_es_validate_vmgexit() refuses an exit code it does
		 * not know (INVALID_EVENT). The guest planes keep it: Linux's
		 * svsm_perform_ghcb_protocol() and the probe have no MSR
		 * fallback once they hold a GHCB, so a host without it for
		 * them would end those guests; the option exists to run
		 * csvsm's own fallback to MSR 0x016 (docs/snp-machine.md).
		 */
		if ((snpm_run_vmpl_msr_only || snpm_no_multi_vmpl) && v->vmpl == 0) {
			result(g, GHCB_RESULT_ERROR, GHCB_ERR_INVALID_EVENT);
			break;
		}
		/* Result first: the switch may run another context at once. */
		result(g, GHCB_RESULT_OK, 0);
		if ((info1 >> 32) != 0 || !hv_run_vmpl(v, (unsigned)info1, false))
			result(g, GHCB_RESULT_ERROR, GHCB_ERR_INVALID_INPUT);
		break;
	case SVM_VMGEXIT_HV_FEATURES:
		result(g, GHCB_RESULT_OK, hv_features);
		break;
	case SVM_VMGEXIT_TERMINATE:
		guest_terminates(v, (unsigned)(info1 & 0xF), (unsigned)((info1 >> 4) & 0xFF));
	default:
		result(g, GHCB_RESULT_ERROR, GHCB_ERR_INVALID_EVENT);
	}
}

/* The GHCB MSR protocol (56421 §2.3.1; reference §4.1). */
static void vmgexit_msr(struct svm_vcpu *v)
{
	uint64_t req = v->ghcb_msr, data = req & ~GHCB_MSR_INFO_MASK;
	if (sim_snp_trace)
		con_printf("%s: trace: vCPU %u GHCB MSR 0x%llx\n", hv_tag, v->gv.id,
			   (unsigned long long)req);
	if ((req & GHCB_MSR_INFO_MASK) != GHCB_MSR_VMPL_REQ)
		hv_serving_audit(v);
	switch (req & GHCB_MSR_INFO_MASK) {
	case GHCB_MSR_SEV_INFO_REQ:
		v->ghcb_msr = GHCB_MSR_SEV_INFO_RESP | ((uint64_t)GHCB_PROTOCOL_MAX << 48) |
			      ((uint64_t)GHCB_PROTOCOL_MIN << 32) | ((uint64_t)SIM_CBIT << 24);
		break;
	case GHCB_MSR_CPUID_REQ: {
		struct cpuid_regs r;
		uint32_t fn = (uint32_t)(req >> 32), val;
		cpuid_count(fn, 0, &r);
		cpuid_page_adjust(fn, 0, SIM_CBIT, &r);
		switch ((req >> GHCB_MSR_CPUID_REG_SHIFT) & 3) {
		case 0:
			val = r.eax;
			break;
		case 1:
			val = r.ebx;
			break;
		case 2:
			val = r.ecx;
			break;
		default:
			val = r.edx;
		}
		v->ghcb_msr = GHCB_MSR_CPUID_RESP | ((uint64_t)val << 32);
		break;
	}
	case GHCB_MSR_REG_GPA_REQ:
		if (hv_is_mem(data, PAGE_SIZE)) {
			v->ghcb_gpa = data;
			v->ghcb_msr = GHCB_MSR_REG_GPA_RESP | data;
		} else {
			v->ghcb_msr = GHCB_MSR_REG_GPA_RESP | ~GHCB_MSR_INFO_MASK; /* mismatch */
		}
		break;
	case GHCB_MSR_PSC_REQ: {
		uint64_t op = (req >> GHCB_MSR_PSC_OP_SHIFT) & 0xF;
		gpa_t gpa = ((req >> 12) & GHCB_MSR_PSC_GFN_MASK) << 12;
		if (v->vmpl != 0)
			guest_psc_exits++, guest_psc_entries++;
		int rc =
		    (req >> 56) || psc_refused(v, gpa, false, op) ? -1 : psc_one(gpa, false, op);
		v->ghcb_msr = GHCB_MSR_PSC_RESP | (rc ? (1ULL << 32) : 0);
		break;
	}
	case GHCB_MSR_VMPL_REQ:
		if (snpm_no_multi_vmpl && v->vmpl == 0)
			break; /* unknown request: the value stays (see snpm_no_multi_vmpl) */
		v->ghcb_msr = GHCB_MSR_VMPL_RESP;
		if ((req >> 40) != 0 || !hv_run_vmpl(v, (unsigned)((req >> 32) & 0xFF), true))
			v->ghcb_msr = GHCB_MSR_VMPL_RESP | (1ULL << 32);
		break;
	case GHCB_MSR_HV_FT_REQ:
		v->ghcb_msr = GHCB_MSR_HV_FT_RESP | (hv_features << 12);
		break;
	case GHCB_MSR_TERM_REQ:
		guest_terminates(v, (unsigned)((req >> 12) & 0xF), (unsigned)((req >> 16) & 0xFF));
	default:
		v->ghcb_msr = 0; /* an info value the guest cannot take for an answer */
	}
}

void sim_snp_vmgexit(struct svm_vcpu *v)
{
	if ((v->ghcb_msr & GHCB_MSR_INFO_MASK) == 0) {
		vmgexit_page(v);
		struct ghcb *g = sim_snp_trace ? ghcb_of(v) : NULL;
		if (g)
			con_printf("%s: trace: vCPU %u GHCB result 0x%llx 0x%llx rax 0x%llx\n",
				   hv_tag, v->gv.id, (unsigned long long)rd(&g->sw_exit_info_1),
				   (unsigned long long)rd(&g->sw_exit_info_2),
				   (unsigned long long)rd(&g->rax));
	} else {
		vmgexit_msr(v);
	}
}
