/*
 * #VC (VMM communication exception, vector 29) handling for csvsm's own code
 * under SEV-SNP (src/vc.c): CPUID from the SNP CPUID page and port I/O
 * forwarded through the GHCB. AMD pub. 56421 §4.1 (#VC), APM vol. 2 §15.35.
 */
#ifndef SNP_VC_H
#define SNP_VC_H

#include "base/types.h"
#include "arch/x86/insn.h"
#include "snp/cpuid_page.h"

struct ghcb;
struct percpu;

#define X86_TRAP_VC 29

/*
 * General registers saved by the #VC entry stub, in this order; rip is the
 * faulting instruction (from the exception frame) and is written back.
 */
struct vc_regs {
	uint64_t rax, rbx, rcx, rdx, rsi, rdi, rbp;
	uint64_t r8, r9, r10, r11, r12, r13, r14, r15;
	uint64_t rip;
};
_Static_assert(offsetof(struct vc_regs, rax) == 0x00, "vc_regs layout used by the entry stub");
_Static_assert(offsetof(struct vc_regs, rcx) == 0x10, "vc_regs layout used by the entry stub");
_Static_assert(offsetof(struct vc_regs, rdx) == 0x18, "vc_regs layout used by the entry stub");
_Static_assert(offsetof(struct vc_regs, r8) == 0x38, "vc_regs layout used by the entry stub");
_Static_assert(offsetof(struct vc_regs, rip) == 0x78, "vc_regs layout used by the entry stub");

/*
 * #VC error code of a failed page validation check: a private access to a
 * page whose RMP entry is not validated (APM vol. 2 §15.36.10). csvsm ends
 * the VM on it (src/vc.c), with this reason once a report is impossible.
 */
#define VC_EXIT_PAGE_NOT_VALIDATED 0x404
#define VC_TERM_SET		   1	/* csvsm's reason set (as panic()) */
#define VC_TERM_NOT_VALIDATED	   0x60 /* after a #VC 0x404 that faulted again */

enum vc_result {
	VC_OK = 0,
	VC_ERR_DECODE = -1,	 /* malformed or truncated instruction */
	VC_ERR_UNSUPPORTED = -2, /* string/REP I/O, unknown exit code, no CPUID page */
	VC_ERR_HV = -3,		 /* the hypervisor broke the protocol or failed */
	VC_ERR_EXCEPTION = -4,	 /* the hypervisor asked to inject #GP/#UD */
	VC_ERR_CPUID = -5,	 /* CPUID page cannot answer (e.g. XSAVE size) */
};

/* --- port I/O --- */
#define VC_INSN_MAX 15

struct vc_ioio_insn {
	uint8_t len;	   /* instruction length in bytes */
	uint8_t size;	   /* data size: 1, 2 or 4 */
	uint8_t addr_size; /* 8, or 4 with a 0x67 prefix */
	bool in;	   /* IN (true) or OUT */
	bool port_in_dx;   /* port from DX, else port_imm */
	uint8_t port_imm;
};

/* Decode IN/OUT (E4-E7 imm8, EC-EF DX) with 66/67/segment/REX prefixes. */
int vc_decode_ioio(const uint8_t *insn, size_t avail, struct vc_ioio_insn *out);
/* sw_exit_info_1 for SVM_EXIT_IOIO (APM vol. 2 figure 15-2; Linux vc_ioio_exitinfo). */
uint64_t vc_ioio_exitinfo(const struct vc_ioio_insn *io, uint16_t dx);
/* Fill the GHCB for the IOIO exit (RAX only for OUT). */
void vc_ioio_fill(struct ghcb *g, const struct vc_ioio_insn *io, const struct vc_regs *regs);
/* Check the reply and, for IN, merge the data into regs->rax. */
int vc_ioio_complete(const struct ghcb *g, const struct vc_ioio_insn *io, struct vc_regs *regs);

/* --- CPUID --- */
struct vc_cpuid_env {
	const struct snp_cpuid_page *page;
	uint64_t cr4, xcr0, xss; /* the vCPU's current values */
	/* Hypervisor CPUID for the host-owned fields (APIC IDs): 0 or a VC_ERR_*. */
	int (*hv_cpuid)(void *ctx, uint32_t fn, uint32_t subfn, struct cpuid_regs *out);
	void *hv_ctx;
};

/* Look up (fn, subfn) in the page with Linux snp_cpuid_get_validated_func rules. */
bool vc_cpuid_page_lookup(const struct snp_cpuid_page *page, uint32_t fn, uint32_t subfn,
			  struct cpuid_regs *out);
/* Full SNP CPUID (Linux sev-shared.c snp_cpuid + snp_cpuid_postprocess). */
int vc_snp_cpuid(const struct vc_cpuid_env *env, uint32_t fn, uint32_t subfn,
		 struct cpuid_regs *out);
/* GHCB CPUID exit (0x72) used for the hypervisor's part. */
void vc_cpuid_hv_fill(struct ghcb *g, uint32_t fn, uint32_t subfn, uint64_t xcr0);
int vc_cpuid_hv_check(const struct ghcb *g, struct cpuid_regs *out);

/* --- the handler --- */
/* Copy and check the CPUID page, record CR4/XCR0/XSS; 0 or VC_ERR_UNSUPPORTED. */
int vc_init(const struct snp_cpuid_page *page, uint64_t cr4, uint64_t xcr0, uint64_t xss);
/* Update CR4/XCR0/XSS after csvsm enables XSAVE/AVX. */
void vc_set_xstate(uint64_t cr4, uint64_t xcr0, uint64_t xss);
/* Handle one #VC: exit_code is the #VC error code. Advances regs->rip on success. */
int vc_handle(struct vc_regs *regs, uint64_t exit_code, struct percpu *cpu);
/* Called by the #VC entry stub: vc_handle, terminate the VM on failure. */
void vc_entry(struct vc_regs *regs, uint64_t exit_code);
/* For src/idt.c: `exception_vc_handler = vc_exception;` on the snp platform. */
struct exc_frame;
bool vc_exception(struct exc_frame *f);

#endif
