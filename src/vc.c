/*
 * #VC handler logic for csvsm's own code under SEV-SNP. Under SEV-ES/SNP the
 * CPU raises #VC (vector 29) instead of exiting to the hypervisor for
 * intercepted instructions; csvsm's code only executes CPUID and port I/O
 * (console, debug exit), so those are all this handles:
 *  - CPUID is served from the PSP-checked SNP CPUID page, following Linux
 *    arch/x86/boot/startup/sev-shared.c snp_cpuid(): lookup rules, zeros for
 *    leaves missing from the page, post-processing of the few fields only
 *    the hypervisor knows (APIC IDs) and of the XSAVE size.
 *  - IN/OUT (imm8 and DX forms, 8/16/32-bit) go through the GHCB IOIO exit
 *    (0x7B, 56421 §4.1.4; Linux arch/x86/coco/sev/vc-handle.c vc_handle_ioio).
 *    String and REP I/O are not supported: csvsm never uses them.
 * Decoding and encoding are pure functions unit-tested on the host.
 * A #VC 0x404 (PAGE_NOT_VALIDATED) ends the VM: csvsm touches only pages it
 * validated, so one that is no longer validated was changed by the host
 * (vc_page_not_validated below).
 */
#include "snp/vc.h"
#include "snp/ghcb.h"
#include "snp/snp.h"
#include "base/console.h"
#include "csvsm/exception.h"
#include "base/percpu.h"
#include "base/platform.h"
#include "base/string.h"
#include "mm/guest_mem.h"

#define VC_MSR_GS_BASE	0xC0000101u
#define X86_CR4_OSXSAVE (1ULL << 18)
#define X86_CR4_PKE	(1ULL << 22)
/* Legacy area + header, APM vol. 3 appendix E.3.8 (Linux uses the constant as-is). */
#define XSAVE_LEGACY_SIZE 0x240

/* --- port I/O --- */

int vc_decode_ioio(const uint8_t *insn, size_t avail, struct vc_ioio_insn *out)
{
	size_t i = 0, max = MIN(avail, (size_t)VC_INSN_MAX);
	bool opsize16 = false, addr32 = false, rex = false;
	uint8_t op;

	memset(out, 0, sizeof(*out));
	/* Legacy prefixes, then at most one REX immediately before the opcode (APM vol. 3 §1.2). */
	for (;; i++) {
		if (i >= max)
			return VC_ERR_DECODE;
		op = insn[i];
		if (rex && !(op >= 0xE4 && op <= 0xEF) && !(op >= 0x6C && op <= 0x6F))
			return VC_ERR_DECODE; /* REX not followed by the opcode */
		if (op == 0x66)
			opsize16 = true;
		else if (op == 0x67)
			addr32 = true;
		else if (op == 0x26 || op == 0x2E || op == 0x36 || op == 0x3E || op == 0x64 ||
			 op == 0x65)
			; /* segment override: no effect on non-string I/O */
		else if (op == 0xF2 || op == 0xF3)
			return VC_ERR_UNSUPPORTED; /* REP: only meaningful for string I/O */
		else if (op == 0xF0)
			return VC_ERR_DECODE; /* LOCK IN/OUT is #UD */
		else if ((op & 0xF0) == 0x40) {
			if (rex)
				return VC_ERR_DECODE;
			rex = true; /* REX.W is ignored by IN/OUT */
		} else
			break;
	}
	i++; /* opcode */
	switch (op) {
	case 0x6C:
	case 0x6D:
	case 0x6E:
	case 0x6F:
		return VC_ERR_UNSUPPORTED; /* INS/OUTS */
	case 0xE4:
	case 0xE5:
	case 0xE6:
	case 0xE7:
		if (i >= max)
			return VC_ERR_DECODE; /* imm8 missing */
		out->port_imm = insn[i++];
		out->port_in_dx = false;
		break;
	case 0xEC:
	case 0xED:
	case 0xEE:
	case 0xEF:
		out->port_in_dx = true;
		break;
	default:
		return VC_ERR_DECODE;
	}
	out->in = (op & 0x02) == 0; /* E4/E5/EC/ED are IN */
	out->size = (op & 0x01) ? (opsize16 ? 2 : 4) : 1;
	out->addr_size = addr32 ? 4 : 8;
	out->len = (uint8_t)i;
	return VC_OK;
}

uint64_t vc_ioio_exitinfo(const struct vc_ioio_insn *io, uint16_t dx)
{
	uint16_t port = io->port_in_dx ? dx : io->port_imm;
	uint64_t info = (uint64_t)port << IOIO_PORT_SHIFT;

	if (io->in)
		info |= IOIO_TYPE_IN;
	info |= io->size == 1 ? IOIO_DATA_8 : io->size == 2 ? IOIO_DATA_16 : IOIO_DATA_32;
	/* Linux vc_ioio_exitinfo sets the address size of the decoded insn; segment 0 (ES) for
	 * non-string. */
	info |= io->addr_size == 4 ? IOIO_ADDR_32 : IOIO_ADDR_64;
	return info;
}

static uint64_t io_mask(unsigned size)
{
	return size == 4 ? 0xFFFFFFFFULL : size == 2 ? 0xFFFFULL : 0xFFULL;
}

void vc_ioio_fill(struct ghcb *g, const struct vc_ioio_insn *io, const struct vc_regs *regs)
{
	ghcb_prepare(g, SVM_EXIT_IOIO, vc_ioio_exitinfo(io, (uint16_t)regs->rdx), 0);
	/* KVM sev_es_validate_vmgexit requires RAX only for OUT. */
	if (!io->in)
		GHCB_SET(g, rax, regs->rax & io_mask(io->size));
}

int vc_ioio_complete(const struct ghcb *g, const struct vc_ioio_insn *io, struct vc_regs *regs)
{
	uint64_t mask = io_mask(io->size), v;

	switch (ghcb_check_result(g, NULL)) {
	case GHCB_STATUS_OK:
		break;
	case GHCB_STATUS_EXCEPTION:
		return VC_ERR_EXCEPTION;
	default:
		return VC_ERR_HV;
	}
	if (!io->in)
		return VC_OK;
	if (!GHCB_VALID(g, rax))
		return VC_ERR_HV; /* Linux: ES_VMM_ERROR when RAX is not valid */
	v = *(const volatile uint64_t *)&g->rax & mask;
	/* IN AL/AX keeps the other RAX bits; IN EAX zero-extends (APM vol. 3 "IN"). */
	if (io->size == 4)
		regs->rax = v;
	else
		regs->rax = (regs->rax & ~mask) | v;
	return VC_OK;
}

/* --- CPUID --- */

/* Linux arch/x86/include/asm/cpuid.h cpuid_function_is_indexed(). */
static bool cpuid_is_indexed(uint32_t fn)
{
	switch (fn) {
	case 0x4:
	case 0x7:
	case 0xB:
	case 0xD:
	case 0xF:
	case 0x10:
	case 0x12:
	case 0x14:
	case 0x17:
	case 0x18:
	case 0x1D:
	case 0x1E:
	case 0x1F:
	case 0x24:
	case 0x8000001D:
		return true;
	default:
		return false;
	}
}

static unsigned page_count(const struct snp_cpuid_page *page)
{
	return MIN(page->count, (uint32_t)SNP_CPUID_COUNT_MAX);
}

/*
 * Linux snp_cpuid_get_validated_func(): match eax_in, and ecx_in for indexed
 * leaves; for 0xD subleaves 0 and 1 use only the entry describing the
 * legacy XSAVE area (XCR0_IN 1 or 3, XSS_IN 0), the size is recomputed.
 */
bool vc_cpuid_page_lookup(const struct snp_cpuid_page *page, uint32_t fn, uint32_t subfn,
			  struct cpuid_regs *out)
{
	for (unsigned i = 0; i < page_count(page); i++) {
		const struct snp_cpuid_fn *e = &page->fn[i];

		if (e->eax_in != fn)
			continue;
		if (cpuid_is_indexed(fn) && e->ecx_in != subfn)
			continue;
		if (e->eax_in == 0xD && (e->ecx_in == 0 || e->ecx_in == 1) &&
		    (!(e->xcr0_in == 1 || e->xcr0_in == 3) || e->xss_in))
			continue;
		out->eax = e->eax;
		out->ebx = e->ebx;
		out->ecx = e->ecx;
		out->edx = e->edx;
		return true;
	}
	return false;
}

/* Linux snp_cpuid_calc_xsave_size(): 0 when an enabled feature has no entry. */
static uint32_t xsave_size(const struct snp_cpuid_page *page, uint64_t xfeatures, bool compacted)
{
	uint64_t found = 0;
	uint32_t size = XSAVE_LEGACY_SIZE;

	for (unsigned i = 0; i < page_count(page); i++) {
		const struct snp_cpuid_fn *e = &page->fn[i];

		if (!(e->eax_in == 0xD && e->ecx_in > 1 && e->ecx_in < 64))
			continue;
		if (!(xfeatures & (1ULL << e->ecx_in)) || (found & (1ULL << e->ecx_in)))
			continue;
		found |= 1ULL << e->ecx_in;
		if (compacted)
			size += e->eax;
		else
			size = MAX(size, e->eax + e->ebx);
	}
	if (found != (xfeatures & ~3ULL))
		return 0;
	return size;
}

static void range_max(const struct snp_cpuid_page *page, uint32_t *std, uint32_t *hyp,
		      uint32_t *ext)
{
	*std = *hyp = *ext = 0;
	for (unsigned i = 0; i < page_count(page); i++) {
		const struct snp_cpuid_fn *e = &page->fn[i];

		if (e->eax_in == 0x0)
			*std = e->eax;
		else if (e->eax_in == 0x40000000)
			*hyp = e->eax;
		else if (e->eax_in == 0x80000000)
			*ext = e->eax;
	}
}

/* Linux snp_cpuid_postprocess(). */
static int cpuid_postprocess(const struct vc_cpuid_env *env, uint32_t fn, uint32_t subfn,
			     struct cpuid_regs *r)
{
	struct cpuid_regs hv;
	int rc;

	switch (fn) {
	case 0x1:
		if ((rc = env->hv_cpuid(env->hv_ctx, fn, 0, &hv)))
			return rc;
		r->ebx = (hv.ebx & 0xFF000000u) | (r->ebx & 0x00FFFFFFu); /* initial APIC ID */
		r->edx = (hv.edx & (1u << 9)) | (r->edx & ~(1u << 9));	  /* APIC enabled */
		if (env->cr4 & X86_CR4_OSXSAVE)
			r->ecx |= 1u << 27; /* OSXSAVE */
		break;
	case 0x7:
		/* OSPKE; Linux applies it to every subleaf, it only exists in subleaf 0. */
		if (subfn == 0) {
			r->ecx &= ~(1u << 4);
			if (env->cr4 & X86_CR4_PKE)
				r->ecx |= 1u << 4;
		}
		break;
	case 0xB:
		if ((rc = env->hv_cpuid(env->hv_ctx, fn, 0, &hv)))
			return rc;
		r->edx = hv.edx; /* x2APIC ID */
		break;
	case 0xD: {
		uint64_t xcr0 = 1, xss = 0;
		bool compacted = false;
		uint32_t size;

		if (subfn != 0 && subfn != 1)
			return VC_OK;
		if (env->cr4 & X86_CR4_OSXSAVE)
			xcr0 = env->xcr0;
		if (subfn == 1) {
			if (r->eax & (1u << 3)) /* XSAVES */
				xss = env->xss;
			/* Linux: no compaction (XSAVEC/XSAVES) is treated as unsupported. */
			if (!(r->eax & ((1u << 1) | (1u << 3))))
				return VC_ERR_CPUID;
			compacted = true;
		}
		size = xsave_size(env->page, xcr0 | xss, compacted);
		if (!size)
			return VC_ERR_CPUID;
		r->ebx = size;
		break;
	}
	case 0x8000001E:
		if ((rc = env->hv_cpuid(env->hv_ctx, fn, 0, &hv)))
			return rc;
		r->eax = hv.eax;				    /* extended APIC ID */
		r->ebx = (r->ebx & 0xFFFFFF00u) | (hv.ebx & 0xFFu); /* compute unit ID */
		r->ecx = (r->ecx & 0xFFFFFF00u) | (hv.ecx & 0xFFu); /* node ID */
		break;
	default:
		break;
	}
	return VC_OK;
}

/*
 * Linux snp_cpuid(): a leaf missing from the page reads as zeros (hypervisors
 * may omit all-zero leaves); inside a valid range it is still post-processed,
 * outside every range the zeros are returned as they are.
 */
int vc_snp_cpuid(const struct vc_cpuid_env *env, uint32_t fn, uint32_t subfn,
		 struct cpuid_regs *out)
{
	uint32_t std, hyp, ext;

	if (!env->page || env->page->count == 0 || env->page->count > SNP_CPUID_COUNT_MAX)
		return VC_ERR_UNSUPPORTED;
	if (!vc_cpuid_page_lookup(env->page, fn, subfn, out)) {
		memset(out, 0, sizeof(*out));
		range_max(env->page, &std, &hyp, &ext);
		if (!(fn <= std || (fn >= 0x40000000 && fn <= hyp) ||
		      (fn >= 0x80000000 && fn <= ext)))
			return VC_OK;
	}
	return cpuid_postprocess(env, fn, subfn, out);
}

/* Linux vc_handle_cpuid: RAX, RCX, XCR0 in (XCR0 = 1 without OSXSAVE); all four outputs must be
 * valid. */
void vc_cpuid_hv_fill(struct ghcb *g, uint32_t fn, uint32_t subfn, uint64_t xcr0)
{
	ghcb_prepare(g, SVM_EXIT_CPUID, 0, 0);
	GHCB_SET(g, rax, fn);
	GHCB_SET(g, rcx, subfn);
	GHCB_SET(g, xcr0, xcr0);
}

int vc_cpuid_hv_check(const struct ghcb *g, struct cpuid_regs *out)
{
	switch (ghcb_check_result(g, NULL)) {
	case GHCB_STATUS_OK:
		break;
	case GHCB_STATUS_EXCEPTION:
		return VC_ERR_EXCEPTION;
	default:
		return VC_ERR_HV;
	}
	if (!GHCB_VALID(g, rax) || !GHCB_VALID(g, rbx) || !GHCB_VALID(g, rcx) ||
	    !GHCB_VALID(g, rdx))
		return VC_ERR_HV;
	out->eax = (uint32_t) * (const volatile uint64_t *)&g->rax;
	out->ebx = (uint32_t) * (const volatile uint64_t *)&g->rbx;
	out->ecx = (uint32_t) * (const volatile uint64_t *)&g->rcx;
	out->edx = (uint32_t) * (const volatile uint64_t *)&g->rdx;
	return VC_OK;
}

/* --- the handler --- */

/*
 * Handler state: a private copy of the CPUID page (Linux copies it too, so
 * later changes of the original do not matter) and the xstate registers.
 * Written at boot before APs run, read-only afterwards.
 */
static struct snp_cpuid_page vc_cpuid_copy;
static uint64_t vc_cr4, vc_xcr0 = 1, vc_xss;
/* The interrupted code may be using its GHCB: save the save area around our exit. */
static uint8_t vc_ghcb_backup[MAX_CPUS][GHCB_SHARED_BUF_OFF];

int vc_init(const struct snp_cpuid_page *page, uint64_t cr4, uint64_t xcr0, uint64_t xss)
{
	uint32_t count = *(const volatile uint32_t *)&page->count;

	if (count == 0 || count > SNP_CPUID_COUNT_MAX)
		return VC_ERR_UNSUPPORTED;
	memcpy(&vc_cpuid_copy, page, sizeof(vc_cpuid_copy));
	vc_cpuid_copy.count = count; /* the value checked above */
	vc_set_xstate(cr4, xcr0, xss);
	return VC_OK;
}

void vc_set_xstate(uint64_t cr4, uint64_t xcr0, uint64_t xss)
{
	vc_cr4 = cr4;
	vc_xcr0 = xcr0;
	vc_xss = xss;
}

/* Hypervisor CPUID: GHCB page if this vCPU has one, else the MSR protocol (leaf only). */
static int vc_hv_cpuid(void *ctx, uint32_t fn, uint32_t subfn, struct cpuid_regs *out)
{
	struct percpu *cpu = ctx;
	uint32_t *regs[4] = {&out->eax, &out->ebx, &out->ecx, &out->edx};

	if (snp_ghcb_usable(cpu)) {
		vc_cpuid_hv_fill(cpu->ghcb, fn, subfn, (vc_cr4 & X86_CR4_OSXSAVE) ? vc_xcr0 : 1);
		snp_ghcb_call(cpu, cpu->ghcb);
		return vc_cpuid_hv_check(cpu->ghcb, out);
	}
	if (subfn)
		return VC_ERR_UNSUPPORTED; /* the MSR protocol has no subleaf (Linux
					      __sev_cpuid_hv_msr) */
	for (unsigned r = 0; r < 4; r++)
		if (ghcb_msr_cpuid_check(snp_ghcb_msr_call(ghcb_msr_cpuid_req(fn, r)), regs[r]))
			return VC_ERR_HV;
	return VC_OK;
}

static int vc_handle_cpuid(struct vc_regs *regs, struct percpu *cpu)
{
	const uint8_t *ip = (const uint8_t *)(uintptr_t)regs->rip;
	struct vc_cpuid_env env = {
	    .page = &vc_cpuid_copy,
	    .cr4 = vc_cr4,
	    .xcr0 = vc_xcr0,
	    .xss = vc_xss,
	    .hv_cpuid = vc_hv_cpuid,
	    .hv_ctx = cpu,
	};
	struct cpuid_regs r;
	int rc;

	if (ip[0] != 0x0F || ip[1] != 0xA2)
		return VC_ERR_DECODE;
	rc = vc_snp_cpuid(&env, (uint32_t)regs->rax, (uint32_t)regs->rcx, &r);
	if (rc)
		return rc;
	/* CPUID writes the 32-bit registers, zero-extending them. */
	regs->rax = r.eax;
	regs->rbx = r.ebx;
	regs->rcx = r.ecx;
	regs->rdx = r.edx;
	regs->rip += 2;
	return VC_OK;
}

static int vc_handle_ioio(struct vc_regs *regs, struct percpu *cpu)
{
	struct vc_ioio_insn io;
	int rc;

	rc = vc_decode_ioio((const uint8_t *)(uintptr_t)regs->rip, VC_INSN_MAX, &io);
	if (rc)
		return rc;
	if (!snp_ghcb_usable(cpu))
		return VC_ERR_UNSUPPORTED; /* IOIO has no MSR-protocol form */
	vc_ioio_fill(cpu->ghcb, &io, regs);
	snp_ghcb_call(cpu, cpu->ghcb);
	rc = vc_ioio_complete(cpu->ghcb, &io, regs);
	if (rc)
		return rc;
	regs->rip += io.len;
	return VC_OK;
}

/*
 * #VC 0x404 (PAGE_NOT_VALIDATED): one of csvsm's own private accesses met a
 * page whose RMP entry is not validated; the validation check ranks above
 * every other RMP check (APM vol. 2 §15.36.10, Table 15-39). csvsm touches
 * only pages it validated itself: its region, and guest pages through
 * mm/guest_mem.c, whose record holds exactly what csvsm validated and the
 * guest never rescinded. So the frame behind that GPA is not the one csvsm
 * validated: the host RMPUPDATEd another frame there (a swap), or converted
 * the page (KVM and QEMU convert a page on an access of the other kind,
 * accel/kvm/kvm-all.c kvm_convert_memory; converted back to private it is
 * assigned and not validated, arch/x86/kvm/svm/sev.c sev_gmem_prepare).
 * Validating it now would give the GPA a second validated frame, which the
 * host could swap with the first at will (validate once, §15.36.5): csvsm
 * never does; it ends the VM (docs/protocol.md "Validate once").
 *
 * The report itself may fault again (the lost page can hold csvsm's
 * console code): the second time on this vCPU csvsm terminates without
 * printing (the wipe runs), the third time (the wipe faulted) without the
 * wipe, through the MSR protocol alone.
 */
static uint32_t vc_not_validated_depth[MAX_CPUS];

static __noreturn void vc_page_not_validated(const struct vc_regs *regs, struct percpu *cpu)
{
	unsigned id = cpu && cpu->id < MAX_CPUS ? cpu->id : 0;
	unsigned depth = __atomic_fetch_add(&vc_not_validated_depth[id], 1, __ATOMIC_RELAXED);
	gpa_t gpa;
	uint64_t size;
	const char *what;

	if (depth == 0 && guest_mem_touching(&gpa, &size, &what))
		panic("host tampering: GPA 0x%llx (+0x%llx), validated by csvsm and never "
		      "rescinded, is no longer validated: #VC 0x404 (PAGE_NOT_VALIDATED) as csvsm "
		      "%s it (rip 0x%llx); csvsm does not validate it again",
		      (unsigned long long)gpa, (unsigned long long)size, what,
		      (unsigned long long)regs->rip);
	if (depth == 0)
		panic("host tampering: a page of csvsm's own is no longer validated: #VC 0x404 "
		      "(PAGE_NOT_VALIDATED) at rip 0x%llx (cr2 0x%llx); csvsm does not validate "
		      "it again",
		      (unsigned long long)regs->rip, (unsigned long long)read_cr2());
	if (depth == 1)
		platform_snp.terminate(false, VC_TERM_SET, VC_TERM_NOT_VALIDATED);
	for (;;) {
		wrmsr(MSR_GHCB, ghcb_msr_term_req(VC_TERM_SET, VC_TERM_NOT_VALIDATED));
		vmgexit();
	}
}

int vc_handle(struct vc_regs *regs, uint64_t exit_code, struct percpu *cpu)
{
	if (exit_code == VC_EXIT_PAGE_NOT_VALIDATED)
		vc_page_not_validated(regs, cpu);
	uint8_t *save = NULL;
	int rc;

	/* A GHCB page that is not shared yet must not be touched (snp_ghcb_init). */
	if (snp_ghcb_usable(cpu)) {
		save = vc_ghcb_backup[cpu->id];
		memcpy(save, cpu->ghcb, GHCB_SHARED_BUF_OFF);
	}
	switch (exit_code) {
	case SVM_EXIT_CPUID:
		rc = vc_handle_cpuid(regs, cpu);
		break;
	case SVM_EXIT_IOIO:
		rc = vc_handle_ioio(regs, cpu);
		break;
	default:
		rc = VC_ERR_UNSUPPORTED;
		break;
	}
	if (save)
		memcpy(cpu->ghcb, save, GHCB_SHARED_BUF_OFF);
	return rc;
}

/*
 * A #VC csvsm cannot serve is fatal: printing would itself need port I/O,
 * so terminate through the MSR protocol (reason set 0, general request;
 * Linux do_vc_no_ghcb does the same).
 */
void vc_entry(struct vc_regs *regs, uint64_t exit_code)
{
	/*
	 * this_cpu() reads %gs:0; an AP can take a #VC (CPUID in
	 * cpu_enable_fpu) before its GS base is set. FS/GS base MSRs are
	 * swapped VMSA state, not intercepted, so reading them raises no #VC.
	 */
	struct percpu *cpu = rdmsr(VC_MSR_GS_BASE) ? this_cpu() : NULL;

	if (vc_handle(regs, exit_code, cpu) != VC_OK)
		platform_snp.terminate(false, GHCB_TERM_SET_GEN, GHCB_TERM_GEN_REQ);
}

/*
 * Adapter for src/idt.c exception_dispatch (exception_vc_handler): the
 * exception frame carries the same registers; the error code of #VC is the
 * exit code (56421 §4.1). Returns true when handled (else terminates).
 */
bool vc_exception(struct exc_frame *f)
{
	struct vc_regs r = {
	    .rax = f->rax,
	    .rbx = f->rbx,
	    .rcx = f->rcx,
	    .rdx = f->rdx,
	    .rsi = f->rsi,
	    .rdi = f->rdi,
	    .rbp = f->rbp,
	    .r8 = f->r8,
	    .r9 = f->r9,
	    .r10 = f->r10,
	    .r11 = f->r11,
	    .r12 = f->r12,
	    .r13 = f->r13,
	    .r14 = f->r14,
	    .r15 = f->r15,
	    .rip = f->rip,
	};

	vc_entry(&r, f->error_code);
	f->rax = r.rax;
	f->rbx = r.rbx;
	f->rcx = r.rcx;
	f->rdx = r.rdx;
	f->rip = r.rip;
	return true;
}
