/*
 * The CPUID view of an SEV-SNP guest, as the host and the PSP put it in the
 * guest's CPUID page (cpuid_page.h; the SNP machine's model). Leaf
 * layouts from the AMD APM vol. 3 appendix E; which leaves the page carries
 * follows what Linux (arch/x86/boot/startup/sev-shared.c snp_cpuid,
 * snp_cpuid_postprocess) and OVMF (ResetVector AmdSev.asm, CcExitVcHandler
 * SnpCpuidInfo) look up: every standard leaf up to the maximum, the
 * indexed ones (4, 7, 0xB, 0xD, 0x8000001D) per subleaf, and the extended
 * leaves up to 0x8000001F. A subleaf not in the table reads as zeros, which
 * ends the enumeration of leaves 4 and 0x8000001D.
 *
 * Standard leaves stop at 0xC and XSAVE is hidden: SNP hardware always has
 * XSAVEC and XSAVES, and Linux's SNP CPUID code refuses leaf 0xD subleaf 1
 * without one of them (snp_cpuid_postprocess: -EINVAL, then termination),
 * which QEMU 7.2's TCG implements neither of. Linux queries leaf 0xD
 * whenever the standard range reaches it (get_cpu_cap), so the range ends
 * below it, and the features whose state only XSAVE saves (AVX...) are
 * hidden with XSAVE. Nothing is claimed that the vCPU does not do.
 *
 * cpuid_page_show_xsave(true) (the SNP machine's snpm.xsave=1) shows XSAVE
 * and the features whose state lives in the x87, SSE and AVX components
 * (XCR0 bits 0-2: AVX, FMA, F16C, AVX2, VAES, VPCLMULQDQ, AVX-VNNI, XOP,
 * FMA4) as far as the host has them, the standard range up to 0xD, and leaf
 * 0xD for those three components only (subleaf 0 EAX/ECX, subleaf 2). Its
 * subleaf 1 is the host's: under QEMU TCG it has XSAVEOPT and XGETBV1 but
 * neither XSAVEC nor XSAVES, so OVMF and csvsm run with it and Linux stops
 * at snp_cpuid_postprocess (above); it is for firmware-only runs.
 */
#include "tests/snpm/model/cpuid_page.h"
#include "base/string.h"

#define L1_ECX_MONITOR (1u << 3)
#define L1_ECX_X2APIC  (1u << 21)
#define L1_ECX_XSAVE   (1u << 26)
#define L1_ECX_OSXSAVE (1u << 27)
/* Features whose state XSAVE manages (Linux cpuid-deps.c: they depend on
 * XSAVE), hidden with it: FMA, AVX, F16C; AVX2 and the AVX-512 family,
 * PKU/OSPKE, VAES, VPCLMULQDQ; AVX-VNNI, AVX512_BF16; XOP, FMA4. */
#define L1_ECX_XSTATE ((1u << 12) | L1_ECX_XSAVE | L1_ECX_OSXSAVE | (1u << 28) | (1u << 29))
#define L7_EBX_XSTATE                                                                              \
	((1u << 5) | (1u << 16) | (1u << 17) | (1u << 21) | (1u << 26) | (1u << 27) | (1u << 28) | \
	 (1u << 30) | (1u << 31))
#define L7_ECX_XSTATE                                                                              \
	((1u << 1) | (1u << 3) | (1u << 4) | (1u << 6) | (1u << 9) | (1u << 10) | (1u << 11) |     \
	 (1u << 12) | (1u << 14))
#define L7_EDX_XSTATE	    ((1u << 2) | (1u << 3) | (1u << 23))
#define L7_1_EAX_XSTATE	    ((1u << 4) | (1u << 5))
#define EXT1_ECX_XSTATE	    ((1u << 11) | (1u << 16))
#define L7_EBX_AVX2	    (1u << 5)
#define L7_ECX_VAES_VPCLMUL ((1u << 9) | (1u << 10))
#define L7_1_EAX_AVX_VNNI   (1u << 4)
#define L1_ECX_AVX_STATE    ((1u << 12) | L1_ECX_XSAVE | (1u << 28) | (1u << 29))
#define XSTATE_X87_SSE_AVX  0x7u
#define XSAVE_LEGACY_END    0x240u /* legacy area 512 + header 64 (SDM vol. 1 §13.4) */
#define XSAVE_AVX_END	    0x340u /* AVX: offset 0x240, 256 bytes (CPUID 0xD.2) */
#define SNP_STD_MAX	    0xC
#define SNP_STD_MAX_XSAVE   0xD
#define EXT1_ECX_SVM	    (1u << 2)
#define L7_ECX_LA57	    (1u << 16)
#define SNP_NUM_VMPLS	    4

static bool show_xsave;

void cpuid_page_show_xsave(bool on)
{
	show_xsave = on;
}

/* Leaf 0xD with show_xsave: the x87, SSE and AVX components only. */
static void adjust_xstate_leaf(uint32_t subleaf, struct cpuid_regs *r)
{
	switch (subleaf) {
	case 0:
		r->eax &= XSTATE_X87_SSE_AVX;
		r->edx = 0;
		r->ecx = (r->eax & 4) ? XSAVE_AVX_END : XSAVE_LEGACY_END;
		if (r->ebx > r->ecx)
			r->ebx = r->ecx;
		break;
	case 1:
		r->ecx = r->edx = 0; /* no supervisor state (XSS) */
		break;
	case 2:
		break;
	default:
		r->eax = r->ebx = r->ecx = r->edx = 0;
	}
}

void cpuid_page_adjust(uint32_t leaf, uint32_t subleaf, unsigned cbit, struct cpuid_regs *r)
{
	uint32_t host;

	switch (leaf) {
	case 0x00000000: {
		uint32_t max = show_xsave ? SNP_STD_MAX_XSAVE : SNP_STD_MAX;
		if (r->eax > max)
			r->eax = max;
		break;
	}
	case 0x00000001:
		/* xAPIC only (csvsm filters local APIC stores, not x2APIC MSRs);
		 * no MONITOR/MWAIT (idle by HLT, which csvsm sees). No XSAVE: the
		 * guest saves its FPU state with FXSAVE (see SNP_STD_MAX). OSXSAVE
		 * is CR4's: the reader fills it in. */
		host = r->ecx;
		r->ecx &= ~(L1_ECX_MONITOR | L1_ECX_X2APIC | L1_ECX_XSTATE);
		if (show_xsave)
			r->ecx |= host & L1_ECX_AVX_STATE;
		break;
	case 0x00000005:
		r->eax = r->ebx = r->ecx = r->edx = 0;
		break;
	case 0x00000007:
		if (subleaf == 0) {
			struct cpuid_regs h = *r;
			r->ecx &= ~L7_ECX_LA57; /* 4-level paging: the C-bit is bit 51 */
			r->ebx &= ~L7_EBX_XSTATE;
			r->ecx &= ~L7_ECX_XSTATE;
			r->edx &= ~L7_EDX_XSTATE;
			if (show_xsave) {
				r->ebx |= h.ebx & L7_EBX_AVX2;
				r->ecx |= h.ecx & L7_ECX_VAES_VPCLMUL;
			}
		} else if (subleaf == 1) {
			host = r->eax;
			r->eax &= ~L7_1_EAX_XSTATE;
			if (show_xsave)
				r->eax |= host & L7_1_EAX_AVX_VNNI;
		}
		break;
	case 0x0000000D:
		if (show_xsave)
			adjust_xstate_leaf(subleaf, r);
		break;
	case 0x80000000:
		if (r->eax < 0x8000001F)
			r->eax = 0x8000001F;
		break;
	case 0x80000001:
		host = r->ecx;
		r->ecx &= ~(EXT1_ECX_SVM | EXT1_ECX_XSTATE); /* no nested virtualization */
		if (show_xsave)
			r->ecx |= host & EXT1_ECX_XSTATE; /* XOP, FMA4: AVX state */
		break;
	case 0x8000000A: /* SVM features: none */
		r->eax = r->ebx = r->ecx = r->edx = 0;
		break;
	case 0x8000001F:
		r->eax = CPUID_8000001F_SEV | CPUID_8000001F_SEV_ES | CPUID_8000001F_SNP |
			 CPUID_8000001F_VMPL;
		/* EBX[5:0] C-bit, [11:6] physical address reduction 0, [15:12] VMPLs */
		r->ebx = (cbit & 0x3F) | (SNP_NUM_VMPLS << 12);
		r->ecx = 0;
		r->edx = 0;
		break;
	default:
		break;
	}
}

static int add(struct snp_cpuid_page *p, cpuid_host_fn host, unsigned cbit, uint32_t leaf,
	       uint32_t subleaf)
{
	struct cpuid_regs r;
	host(leaf, subleaf, &r);
	cpuid_page_adjust(leaf, subleaf, cbit, &r);
	if (!r.eax && !r.ebx && !r.ecx && !r.edx)
		return 0; /* a leaf missing from the table reads as zeros anyway */
	if (p->count >= SNP_CPUID_COUNT_MAX)
		return -1;
	struct snp_cpuid_fn *f = &p->fn[p->count++];
	*f = (struct snp_cpuid_fn){.eax_in = leaf,
				   .ecx_in = subleaf,
				   .eax = r.eax,
				   .ebx = r.ebx,
				   .ecx = r.ecx,
				   .edx = r.edx};
	/* QEMU target/i386/sev.c sev_snp_cpuid_info_fill: leaf 0xD subleaves 0
	 * and 1 carry the legacy area's size for XCR0_IN = 1, XSS_IN = 0; the
	 * guest computes the rest from the component subleaves (Linux
	 * snp_cpuid_get_validated_func uses only such an entry). */
	if (leaf == 0xD && subleaf <= 1) {
		f->ebx = XSAVE_LEGACY_END;
		f->xcr0_in = 1;
		f->xss_in = 0;
	}
	return 0;
}

/* Subleaves of a cache-descriptor leaf (4, 0x8000001D) until the type field is 0. */
static int add_cache_leaf(struct snp_cpuid_page *p, cpuid_host_fn host, unsigned cbit,
			  uint32_t leaf)
{
	for (uint32_t sub = 0; sub < 8; sub++) {
		struct cpuid_regs r;
		host(leaf, sub, &r);
		if ((r.eax & 0x1F) == 0)
			break;
		if (add(p, host, cbit, leaf, sub))
			return -1;
	}
	return 0;
}

int cpuid_page_fill(struct snp_cpuid_page *p, cpuid_host_fn host, unsigned cbit)
{
	struct cpuid_regs r;
	memset(p, 0, sizeof(*p));

	host(0, 0, &r);
	cpuid_page_adjust(0, 0, cbit, &r);
	uint32_t max_std = r.eax < 0x20 ? r.eax : 0x1F;
	for (uint32_t leaf = 0; leaf <= max_std; leaf++) {
		int rc = 0;
		switch (leaf) {
		case 0x4:
			rc = add_cache_leaf(p, host, cbit, leaf);
			break;
		case 0x7:
			rc = add(p, host, cbit, leaf, 0) || add(p, host, cbit, leaf, 1);
			break;
		case 0xB:
			rc = add(p, host, cbit, leaf, 0) || add(p, host, cbit, leaf, 1);
			break;
		case 0xD: {
			/* Subleaf 0 and 1, then one per state component in XCR0's range. */
			struct cpuid_regs d;
			host(0xD, 0, &d);
			cpuid_page_adjust(0xD, 0, cbit, &d);
			rc = add(p, host, cbit, leaf, 0) || add(p, host, cbit, leaf, 1);
			for (uint32_t c = 2; c < 32 && !rc; c++)
				if (d.eax & (1u << c))
					rc = add(p, host, cbit, leaf, c);
			break;
		}
		default:
			rc = add(p, host, cbit, leaf, 0);
		}
		if (rc)
			return -1;
	}
	host(0x80000000, 0, &r);
	uint32_t max_ext = r.eax;
	cpuid_page_adjust(0x80000000, 0, cbit, &r);
	if (r.eax > max_ext)
		max_ext = r.eax;
	if (max_ext > 0x80000021)
		max_ext = 0x80000021;
	for (uint32_t leaf = 0x80000000; leaf <= max_ext; leaf++) {
		int rc;
		if (leaf == 0x8000001D)
			rc = add_cache_leaf(p, host, cbit, leaf);
		else
			rc = add(p, host, cbit, leaf, 0);
		if (rc)
			return -1;
	}
	return (int)p->count;
}
