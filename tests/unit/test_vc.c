/*
 * #VC handling (src/vc.c): the IN/OUT decoder, the IOIO exit_info_1
 * encoding (APM vol. 2 figure 15-2 / reference §4.3, as Linux
 * vc_ioio_exitinfo builds it), the SNP CPUID page lookup with Linux
 * sev-shared.c snp_cpuid() semantics, and whole #VC round trips against a
 * software hypervisor behind the fake VMGEXIT, including hostile replies.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "snp/vc.h"
#include "snp/ghcb.h"
#include "snp/snp.h"
#include "base/percpu.h"
#include "csvsm/exception.h"
#include "base/platform.h"
#include "tests/fake/insn_fake.h"

/* --- decoder + exit_info_1 --- */

static void decode_ok(const uint8_t *b, size_t n, struct vc_ioio_insn *io)
{
	assert_int_equal(vc_decode_ioio(b, n, io), VC_OK);
}

static void test_ioio_encodings(void **state)
{
	(void)state;
	struct vc_ioio_insn io;

	/* out dx, al (EE), DX = 0x3F8: port<<16 | DATA_8 (bit 4) | ADDR_64 (bit 9), OUT (bit 0
	 * clear). */
	decode_ok((const uint8_t[]){0xEE}, 1, &io);
	assert_int_equal(io.len, 1);
	assert_int_equal(io.size, 1);
	assert_false(io.in);
	assert_true(io.port_in_dx);
	assert_int_equal(vc_ioio_exitinfo(&io, 0x3F8), 0x03F80210ULL);

	/* in eax, dx (ED), DX = 0xCFC: IN (bit 0) | DATA_32 (bit 6) | ADDR_64. */
	decode_ok((const uint8_t[]){0xED}, 1, &io);
	assert_true(io.in);
	assert_int_equal(io.size, 4);
	assert_int_equal(vc_ioio_exitinfo(&io, 0xCFC), 0x0CFC0241ULL);

	/* out 0x80, al (E6 80): port from the immediate, DX ignored. */
	decode_ok((const uint8_t[]){0xE6, 0x80}, 2, &io);
	assert_int_equal(io.len, 2);
	assert_false(io.port_in_dx);
	assert_int_equal(vc_ioio_exitinfo(&io, 0xFFFF), 0x00800210ULL);

	/* in ax, dx (66 ED): DATA_16 (bit 5). */
	decode_ok((const uint8_t[]){0x66, 0xED}, 2, &io);
	assert_int_equal(io.len, 2);
	assert_int_equal(io.size, 2);
	assert_int_equal(vc_ioio_exitinfo(&io, 0x1F0), 0x01F00221ULL);

	/* in al, 0x71 (E4 71). */
	decode_ok((const uint8_t[]){0xE4, 0x71}, 2, &io);
	assert_true(io.in);
	assert_int_equal(vc_ioio_exitinfo(&io, 0), 0x00710211ULL);

	/* out 0xf4, eax (E7 F4): isa-debug-exit. */
	decode_ok((const uint8_t[]){0xE7, 0xF4}, 2, &io);
	assert_int_equal(vc_ioio_exitinfo(&io, 0), 0x00F40240ULL);

	/* REX.W is ignored by OUT (48 EF = out dx, eax), 0x67 selects ADDR_32 (bit 8). */
	decode_ok((const uint8_t[]){0x48, 0xEF}, 2, &io);
	assert_int_equal(io.size, 4);
	assert_int_equal(io.len, 2);
	decode_ok((const uint8_t[]){0x67, 0xEE}, 2, &io);
	assert_int_equal(vc_ioio_exitinfo(&io, 0x3F8), 0x03F80110ULL);
	/* Segment override is harmless. */
	decode_ok((const uint8_t[]){0x3E, 0xEC}, 2, &io);
	assert_int_equal(io.len, 2);
	/* Trailing bytes after the instruction are not consumed. */
	decode_ok((const uint8_t[]){0xEE, 0x90, 0x90}, 3, &io);
	assert_int_equal(io.len, 1);
}

static void test_decoder_rejects(void **state)
{
	(void)state;
	struct vc_ioio_insn io;
	uint8_t many[16];

	assert_int_equal(vc_decode_ioio((const uint8_t[]){0xEE}, 0, &io),
			 VC_ERR_DECODE); /* empty */
	assert_int_equal(vc_decode_ioio((const uint8_t[]){0xE4}, 1, &io),
			 VC_ERR_DECODE); /* imm8 missing */
	assert_int_equal(vc_decode_ioio((const uint8_t[]){0x66}, 1, &io),
			 VC_ERR_DECODE); /* prefix only */
	assert_int_equal(vc_decode_ioio((const uint8_t[]){0x0F, 0x0B}, 2, &io),
			 VC_ERR_DECODE); /* ud2 */
	assert_int_equal(vc_decode_ioio((const uint8_t[]){0x0F, 0xA2}, 2, &io),
			 VC_ERR_DECODE); /* cpuid */
	assert_int_equal(vc_decode_ioio((const uint8_t[]){0x90}, 1, &io), VC_ERR_DECODE);
	assert_int_equal(vc_decode_ioio((const uint8_t[]){0xF0, 0xEE}, 2, &io),
			 VC_ERR_DECODE); /* lock */
	assert_int_equal(vc_decode_ioio((const uint8_t[]){0x48, 0x66, 0xEE}, 3, &io),
			 VC_ERR_DECODE); /* prefix after REX */
	assert_int_equal(vc_decode_ioio((const uint8_t[]){0x40, 0x41, 0xEE}, 3, &io),
			 VC_ERR_DECODE); /* two REX */
	/* String and REP I/O: unsupported (fatal in vc_entry). */
	assert_int_equal(vc_decode_ioio((const uint8_t[]){0x6E}, 1, &io), VC_ERR_UNSUPPORTED);
	assert_int_equal(vc_decode_ioio((const uint8_t[]){0x6D}, 1, &io), VC_ERR_UNSUPPORTED);
	assert_int_equal(vc_decode_ioio((const uint8_t[]){0xF3, 0x6E}, 2, &io), VC_ERR_UNSUPPORTED);
	assert_int_equal(vc_decode_ioio((const uint8_t[]){0xF3, 0xEE}, 2, &io), VC_ERR_UNSUPPORTED);
	/* Longer than 15 bytes (the architectural limit). */
	memset(many, 0x66, sizeof(many));
	many[15] = 0xEE;
	assert_int_equal(vc_decode_ioio(many, sizeof(many), &io), VC_ERR_DECODE);
	/* 14 prefixes + opcode = 15 bytes is still legal. */
	assert_int_equal(vc_decode_ioio(many + 1, 15, &io), VC_OK);
	assert_int_equal(io.len, 15);
}

/* --- IOIO GHCB fill/complete --- */

static struct ghcb *new_ghcb(void)
{
	struct ghcb *g = aligned_alloc(4096, sizeof(struct ghcb));
	assert_non_null(g);
	memset(g, 0, sizeof(*g));
	return g;
}

static void test_ioio_ghcb(void **state)
{
	(void)state;
	struct ghcb *g = new_ghcb();
	struct vc_ioio_insn io;
	struct vc_regs regs = {.rax = 0x1122334455667788ULL, .rdx = 0x3F8};

	/* OUT: RAX masked to the data size and marked valid. */
	decode_ok((const uint8_t[]){0xEE}, 1, &io);
	vc_ioio_fill(g, &io, &regs);
	assert_int_equal(g->sw_exit_code, 0x7B);
	assert_int_equal(g->sw_exit_info_1, 0x03F80210ULL);
	assert_int_equal(g->sw_exit_info_2, 0);
	assert_int_equal(g->rax, 0x88);
	assert_true(GHCB_VALID(g, rax));
	g->sw_exit_info_1 = 0;
	assert_int_equal(vc_ioio_complete(g, &io, &regs), VC_OK);
	assert_int_equal(regs.rax, 0x1122334455667788ULL);

	/* IN AL: RAX not sent; the reply's low byte merged, the rest kept. */
	decode_ok((const uint8_t[]){0xEC}, 1, &io);
	vc_ioio_fill(g, &io, &regs);
	assert_false(GHCB_VALID(g, rax));
	g->sw_exit_info_1 = 0;
	GHCB_SET(g, rax, 0xFFFFFFFFFFFFFF5AULL);
	assert_int_equal(vc_ioio_complete(g, &io, &regs), VC_OK);
	assert_int_equal(regs.rax, 0x112233445566775AULL);

	/* IN EAX zero-extends. */
	decode_ok((const uint8_t[]){0xED}, 1, &io);
	vc_ioio_fill(g, &io, &regs);
	g->sw_exit_info_1 = 0;
	GHCB_SET(g, rax, 0xAAAAAAAA12345678ULL);
	assert_int_equal(vc_ioio_complete(g, &io, &regs), VC_OK);
	assert_int_equal(regs.rax, 0x12345678ULL);

	/* Hostile replies: IN without a valid RAX, error, malformed, exception. */
	vc_ioio_fill(g, &io, &regs);
	g->sw_exit_info_1 = 0;
	assert_int_equal(vc_ioio_complete(g, &io, &regs), VC_ERR_HV);
	assert_int_equal(regs.rax, 0x12345678ULL); /* untouched */
	g->sw_exit_info_1 = 2;
	assert_int_equal(vc_ioio_complete(g, &io, &regs), VC_ERR_HV);
	g->sw_exit_info_1 = 9;
	assert_int_equal(vc_ioio_complete(g, &io, &regs), VC_ERR_HV);
	g->sw_exit_info_1 = 1;
	g->sw_exit_info_2 = (1ULL << 31) | (3ULL << 8) | 13;
	assert_int_equal(vc_ioio_complete(g, &io, &regs), VC_ERR_EXCEPTION);
	free(g);
}

/* --- CPUID page --- */

static struct snp_cpuid_page page;

static void add(uint32_t fn, uint32_t sub, uint64_t xcr0_in, uint32_t a, uint32_t b, uint32_t c,
		uint32_t d)
{
	struct snp_cpuid_fn *e = &page.fn[page.count++];
	e->eax_in = fn;
	e->ecx_in = sub;
	e->xcr0_in = xcr0_in;
	e->eax = a;
	e->ebx = b;
	e->ecx = c;
	e->edx = d;
}

static void build_page(void)
{
	memset(&page, 0, sizeof(page));
	add(0x0, 0, 0, 0xD, 0x68747541, 0x444D4163,
	    0x69746E65); /* max std leaf 0xD, "AuthenticAMD" */
	add(0x1, 0, 0, 0x00A00F11, 0x00020800, 0x76F8320B, 0x178BFBFF);
	add(0x7, 0, 0, 0, 0x219C91A9, 0x00000010, 0); /* OSPKE set in the template */
	add(0x7, 1, 0, 0, 0, 0x00000010, 0);
	add(0xD, 0, 7, 0x7, 0x999, 0x988, 0); /* XCR0_IN 7: skipped (Linux) */
	add(0xD, 0, 1, 0x7, 0x240, 0x340, 0); /* legacy entry */
	add(0xD, 1, 1, 0xF, 0x240, 0, 0);     /* XSAVEC|XSAVES... */
	add(0xD, 2, 0, 0x100, 0x240, 0, 0);   /* AVX: size 0x100 at 0x240 */
	add(0x80000000, 0, 0, 0x80000021, 0x68747541, 0x444D4163, 0x69746E65);
	add(0x80000000, 5, 0, 0xBAD, 0xBAD, 0xBAD, 0xBAD); /* never matched: not indexed */
	add(0x8000001F, 0, 0, 0x0001B0FB, 0x0B3, 0, 0);
	add(0x8000001E, 0, 0, 0, 0x100, 0x300, 0);
}

static int hv_calls;
static int hv_fail;
static int hv_cpuid(void *ctx, uint32_t fn, uint32_t subfn, struct cpuid_regs *out)
{
	(void)ctx;
	hv_calls++;
	if (hv_fail)
		return VC_ERR_HV;
	out->eax = 0xE0000000 | fn;
	out->ebx = 0x07FFFF09; /* APIC ID 7 in [31:24], compute unit 9 */
	out->ecx = 0xFFFFFF02;
	out->edx = (fn == 0xB) ? 7 : 0xFFFFFDFF; /* APIC enabled (bit 9) clear */
	return VC_OK;
}

static void test_cpuid_lookup(void **state)
{
	(void)state;
	struct vc_cpuid_env env = {.page = &page, .cr4 = 0, .xcr0 = 1, .hv_cpuid = hv_cpuid};
	struct cpuid_regs r;

	build_page();
	/* Non-indexed leaf: ECX ignored, first entry wins. */
	assert_int_equal(vc_snp_cpuid(&env, 0x80000000, 5, &r), VC_OK);
	assert_int_equal(r.eax, 0x80000021);
	assert_int_equal(vc_snp_cpuid(&env, 0x8000001F, 0, &r), VC_OK);
	assert_int_equal(r.eax, 0x0001B0FB);
	/* Indexed leaf 7: subleaf selects; CR4.PKE clear -> OSPKE cleared in subleaf 0 only. */
	assert_int_equal(vc_snp_cpuid(&env, 0x7, 0, &r), VC_OK);
	assert_int_equal(r.ebx, 0x219C91A9);
	assert_int_equal(r.ecx, 0);
	env.cr4 = 1ULL << 22;
	assert_int_equal(vc_snp_cpuid(&env, 0x7, 0, &r), VC_OK);
	assert_int_equal(r.ecx, 0x10);
	assert_int_equal(vc_snp_cpuid(&env, 0x7, 1, &r), VC_OK);
	assert_int_equal(r.ecx, 0x10);
	/* Missing leaf in range (0x5 <= 0xD): zeros; missing subleaf of 7: zeros. */
	assert_int_equal(vc_snp_cpuid(&env, 0x5, 0, &r), VC_OK);
	assert_int_equal(r.eax | r.ebx | r.ecx | r.edx, 0);
	assert_int_equal(vc_snp_cpuid(&env, 0x7, 2, &r), VC_OK);
	assert_int_equal(r.eax | r.ebx | r.ecx | r.edx, 0);
	/* Out of every range: zeros and no hypervisor call. */
	hv_calls = 0;
	assert_int_equal(vc_snp_cpuid(&env, 0x40000000, 0, &r), VC_OK);
	assert_int_equal(r.eax | r.ebx | r.ecx | r.edx, 0);
	assert_int_equal(vc_snp_cpuid(&env, 0x80000030, 0, &r), VC_OK);
	assert_int_equal(r.eax | r.ebx | r.ecx | r.edx, 0);
	assert_int_equal(vc_snp_cpuid(&env, 0x1, 0, &r), VC_OK);
	assert_int_equal(hv_calls, 1);
	/* Leaf 1: APIC ID [31:24] and APIC-enabled bit from the hypervisor, rest from the page. */
	assert_int_equal(r.eax, 0x00A00F11);
	assert_int_equal(r.ebx, 0x07020800);
	assert_int_equal(r.edx, 0x178BFBFF & ~(1u << 9));
	assert_int_equal(r.ecx, 0x76F8320B); /* OSXSAVE off: template bit 27 clear */
	env.cr4 = 1ULL << 18;
	assert_int_equal(vc_snp_cpuid(&env, 0x1, 0, &r), VC_OK);
	assert_int_equal(r.ecx, 0x76F8320B | (1u << 27));
	/* 0x8000001E: extended APIC ID, compute unit and node from the hypervisor. */
	assert_int_equal(vc_snp_cpuid(&env, 0x8000001E, 0, &r), VC_OK);
	assert_int_equal(r.eax, 0xE000001E | 0x80000000);
	assert_int_equal(r.ebx, 0x109);
	assert_int_equal(r.ecx, 0x302);
	/* The hypervisor failing is an error, not silently ignored. */
	hv_fail = 1;
	assert_int_equal(vc_snp_cpuid(&env, 0x1, 0, &r), VC_ERR_HV);
	hv_fail = 0;
}

static void test_cpuid_xsave(void **state)
{
	(void)state;
	struct vc_cpuid_env env = {
	    .page = &page, .cr4 = 1ULL << 18, .xcr0 = 7, .hv_cpuid = hv_cpuid};
	struct cpuid_regs r;

	build_page();
	/* 0xD.0 uses the XCR0_IN=1 entry; EBX = max(0x240, 0x240 + 0x100) for XCR0 = x87|SSE|AVX.
	 */
	assert_int_equal(vc_snp_cpuid(&env, 0xD, 0, &r), VC_OK);
	assert_int_equal(r.eax, 0x7);
	assert_int_equal(r.ecx, 0x340);
	assert_int_equal(r.ebx, 0x340);
	/* 0xD.1 compacted: 0x240 + 0x100. */
	assert_int_equal(vc_snp_cpuid(&env, 0xD, 1, &r), VC_OK);
	assert_int_equal(r.ebx, 0x340);
	/* XCR0 = x87|SSE only: legacy size. */
	env.xcr0 = 3;
	assert_int_equal(vc_snp_cpuid(&env, 0xD, 0, &r), VC_OK);
	assert_int_equal(r.ebx, 0x240);
	/* Without OSXSAVE, XCR0 counts as 1. */
	env.cr4 = 0;
	env.xcr0 = 7;
	assert_int_equal(vc_snp_cpuid(&env, 0xD, 0, &r), VC_OK);
	assert_int_equal(r.ebx, 0x240);
	/* A feature enabled in XCR0 without a page entry (bit 9): cannot answer. */
	env.cr4 = 1ULL << 18;
	env.xcr0 = 7 | (1ULL << 9);
	assert_int_equal(vc_snp_cpuid(&env, 0xD, 0, &r), VC_ERR_CPUID);
	/* Subleaf 2 is served as it is. */
	assert_int_equal(vc_snp_cpuid(&env, 0xD, 2, &r), VC_OK);
	assert_int_equal(r.eax, 0x100);
}

static void test_cpuid_bad_page(void **state)
{
	(void)state;
	struct vc_cpuid_env env = {.page = &page, .hv_cpuid = hv_cpuid};
	struct cpuid_regs r;

	memset(&page, 0, sizeof(page));
	assert_int_equal(vc_snp_cpuid(&env, 0, 0, &r), VC_ERR_UNSUPPORTED);
	assert_int_equal(vc_init(&page, 0, 1, 0), VC_ERR_UNSUPPORTED);
	page.count = 65;
	assert_int_equal(vc_snp_cpuid(&env, 0, 0, &r), VC_ERR_UNSUPPORTED);
	assert_int_equal(vc_init(&page, 0, 1, 0), VC_ERR_UNSUPPORTED);
	page.count = 0xFFFFFFFF;
	assert_false(vc_cpuid_page_lookup(&page, 0x12345, 0, &r)); /* clamped, no overrun */
}

static void test_cpuid_hv_exit(void **state)
{
	(void)state;
	struct ghcb *g = new_ghcb();
	struct cpuid_regs r;

	vc_cpuid_hv_fill(g, 0xB, 1, 7);
	assert_int_equal(g->sw_exit_code, 0x72);
	assert_int_equal(g->rax, 0xB);
	assert_int_equal(g->rcx, 1);
	assert_int_equal(g->xcr0, 7);
	assert_true(GHCB_VALID(g, rax) && GHCB_VALID(g, rcx) && GHCB_VALID(g, xcr0));
	/* The hypervisor must return all four registers as valid. */
	g->sw_exit_info_1 = 0;
	GHCB_SET(g, rax, 0x100000001ULL);
	GHCB_SET(g, rbx, 2);
	GHCB_SET(g, rcx, 3);
	assert_int_equal(vc_cpuid_hv_check(g, &r), VC_ERR_HV);
	GHCB_SET(g, rdx, 4);
	assert_int_equal(vc_cpuid_hv_check(g, &r), VC_OK);
	assert_int_equal(r.eax, 1);
	assert_int_equal(r.edx, 4);
	g->sw_exit_info_1 = 2;
	assert_int_equal(vc_cpuid_hv_check(g, &r), VC_ERR_HV);
	free(g);
}

/* --- whole #VC round trips --- */

static uint64_t last_port_val;
static int pval_ok(vaddr_t va, unsigned size, bool validate, bool *unchanged)
{
	*unchanged = false;
	return 0;
}
static void hv_ioio(void)
{
	uint64_t v = rdmsr(MSR_GHCB);

	/* MSR protocol during GHCB set-up: a well-behaved host. */
	switch (v & 0xFFF) {
	case 0x000:
		break;
	case 0x002:
		wrmsr(MSR_GHCB, 0x0002000233000001ULL);
		return;
	case 0x080:
		wrmsr(MSR_GHCB, (0x23ULL << 12) | 0x081);
		return;
	case 0x012:
		wrmsr(MSR_GHCB, (v & ~0xFFFULL) | 0x013);
		return;
	case 0x014:
		wrmsr(MSR_GHCB, 0x015);
		return;
	default:
		fail_msg("unexpected MSR request %#llx", (unsigned long long)v);
	}
	struct ghcb *g = (struct ghcb *)(uintptr_t)v;
	assert_int_equal(g->sw_exit_code, 0x7B);
	if (g->sw_exit_info_1 & IOIO_TYPE_IN) {
		g->rax = 0xC3;
		g->valid_bitmap[0x1F8 / 64] |= 1u << ((0x1F8 / 8) % 8);
	} else {
		last_port_val = g->rax;
	}
	g->sw_exit_info_1 = 0;
}

static void test_vc_handle(void **state)
{
	(void)state;
	struct ghcb *g = new_ghcb();
	struct percpu *cpu = &percpus[0];
	static const uint8_t code_in[] = {0xEC, 0x90};	      /* in al, dx */
	static const uint8_t code_out[] = {0xE6, 0xF4, 0x90}; /* out 0xf4, al */
	static const uint8_t code_cpuid[] = {0x0F, 0xA2};
	static const uint8_t code_outs[] = {0x6E}; /* outsb */
	struct vc_regs regs;

	fake_msr_reset();
	cpu->id = 0;
	cpu->ghcb = g;
	cpu->ghcb_gpa = (uint64_t)(uintptr_t)g;
	fake_vmgexit = hv_ioio;
	fake_pvalidate = pval_ok;

	/* Before the page is shared, port I/O cannot be forwarded and the page is not touched. */
	memset(&regs, 0, sizeof(regs));
	regs.rip = (uint64_t)(uintptr_t)code_out;
	memset(g, 0x5A, 64);
	assert_int_equal(vc_handle(&regs, SVM_EXIT_IOIO, cpu), VC_ERR_UNSUPPORTED);
	assert_int_equal(((uint8_t *)g)[0], 0x5A);
	assert_int_equal(snp_ghcb_init(cpu), 0);

	/* The interrupted code's GHCB contents survive the #VC. */
	g->sw_exit_code = 0x1234;
	g->rbx = 0x5678;

	memset(&regs, 0, sizeof(regs));
	regs.rip = (uint64_t)(uintptr_t)code_in;
	regs.rdx = 0x3FD;
	regs.rax = 0xFFFF;
	assert_int_equal(vc_handle(&regs, SVM_EXIT_IOIO, cpu), VC_OK);
	assert_int_equal(regs.rax, 0xFFC3);
	assert_int_equal(regs.rip, (uint64_t)(uintptr_t)code_in + 1);
	assert_int_equal(g->sw_exit_code, 0x1234);
	assert_int_equal(g->rbx, 0x5678);

	regs.rip = (uint64_t)(uintptr_t)code_out;
	regs.rax = 0x131;
	assert_int_equal(vc_handle(&regs, SVM_EXIT_IOIO, cpu), VC_OK);
	assert_int_equal(last_port_val, 0x31);
	assert_int_equal(regs.rip, (uint64_t)(uintptr_t)code_out + 2);

	/* String I/O and unknown exit codes are refused, RIP unchanged. */
	regs.rip = (uint64_t)(uintptr_t)code_outs;
	assert_int_equal(vc_handle(&regs, SVM_EXIT_IOIO, cpu), VC_ERR_UNSUPPORTED);
	assert_int_equal(regs.rip, (uint64_t)(uintptr_t)code_outs);
	assert_int_equal(vc_handle(&regs, SVM_EXIT_MSR, cpu), VC_ERR_UNSUPPORTED);

	/* CPUID from the page registered with vc_init (leaf 0x8000001F needs no hypervisor). */
	build_page();
	assert_int_equal(vc_init(&page, 0, 1, 0), VC_OK);
	memset(&page, 0, sizeof(page)); /* vc_init copied it */
	regs.rip = (uint64_t)(uintptr_t)code_cpuid;
	regs.rax = 0xFFFFFFFF8000001FULL;
	regs.rcx = 0;
	assert_int_equal(vc_handle(&regs, SVM_EXIT_CPUID, cpu), VC_OK);
	assert_int_equal(regs.rax, 0x0001B0FB);
	assert_int_equal(regs.rbx, 0x0B3);
	assert_int_equal(regs.rip, (uint64_t)(uintptr_t)code_cpuid + 2);
	/* A CPUID #VC whose RIP is not a CPUID instruction is refused. */
	regs.rip = (uint64_t)(uintptr_t)code_in;
	assert_int_equal(vc_handle(&regs, SVM_EXIT_CPUID, cpu), VC_ERR_DECODE);

	fake_vmgexit = NULL;
	fake_pvalidate = NULL;
	cpu->ghcb = NULL;
	free(g);
}

/* CPUID leaf 1 before a GHCB exists: the MSR protocol serves the hypervisor part. */
static void hv_msr_cpuid(void)
{
	uint64_t req = rdmsr(MSR_GHCB);
	uint32_t fn = (uint32_t)(req >> 32);
	unsigned reg = (unsigned)(req >> 30) & 3;
	uint32_t vals[4] = {fn, 0x05000000, 0, 1u << 9};

	assert_int_equal(req & 0xFFF, 0x004);
	wrmsr(MSR_GHCB, ((uint64_t)vals[reg] << 32) | 0x005);
}

static void test_vc_cpuid_msr_fallback(void **state)
{
	(void)state;
	static const uint8_t code_cpuid[] = {0x0F, 0xA2};
	struct percpu *cpu = &percpus[0];
	struct vc_regs regs = {.rax = 1, .rip = (uint64_t)(uintptr_t)code_cpuid};

	fake_msr_reset();
	cpu->ghcb = NULL;
	build_page();
	assert_int_equal(vc_init(&page, 0, 1, 0), VC_OK);
	fake_vmgexit = hv_msr_cpuid;
	assert_int_equal(vc_handle(&regs, SVM_EXIT_CPUID, cpu), VC_OK);
	assert_int_equal(regs.rbx, 0x05020800);
	assert_int_equal(regs.rdx, 0x178BFBFF);
	/* Port I/O has no MSR-protocol form. */
	static const uint8_t code_out[] = {0xEE};
	regs.rip = (uint64_t)(uintptr_t)code_out;
	assert_int_equal(vc_handle(&regs, SVM_EXIT_IOIO, cpu), VC_ERR_UNSUPPORTED);
	fake_vmgexit = NULL;
}

/* The idt.c adapter: registers go in and come back through struct exc_frame. */
static void test_vc_exception_adapter(void **state)
{
	(void)state;
	static const uint8_t code_cpuid[] = {0x0F, 0xA2};
	struct exc_frame f;

	fake_msr_reset(); /* GS base 0: no percpu yet, page-only CPUID */
	build_page();
	assert_int_equal(vc_init(&page, 0, 1, 0), VC_OK);
	memset(&f, 0, sizeof(f));
	f.vector = X86_TRAP_VC;
	f.error_code = SVM_EXIT_CPUID;
	f.rax = 0x80000000;
	f.rcx = 7;
	f.rbx = 0xFFFFFFFFFFFFFFFFULL;
	f.r12 = 0x1234;
	f.rip = (uint64_t)(uintptr_t)code_cpuid;
	assert_true(vc_exception(&f));
	assert_int_equal(f.rax, 0x80000021);
	assert_int_equal(f.rbx, 0x68747541); /* zero-extended */
	assert_int_equal(f.rip, (uint64_t)(uintptr_t)code_cpuid + 2);
	assert_int_equal(f.r12, 0x1234);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ioio_encodings),
	    cmocka_unit_test(test_decoder_rejects),
	    cmocka_unit_test(test_ioio_ghcb),
	    cmocka_unit_test(test_cpuid_lookup),
	    cmocka_unit_test(test_cpuid_xsave),
	    cmocka_unit_test(test_cpuid_bad_page),
	    cmocka_unit_test(test_cpuid_hv_exit),
	    cmocka_unit_test(test_vc_handle),
	    cmocka_unit_test(test_vc_cpuid_msr_fallback),
	    cmocka_unit_test(test_vc_exception_adapter),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
