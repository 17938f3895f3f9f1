/*
 * Unit tests of the SEV-SNP guest's CPUID view (tests/snpm/model/cpuid_page.c)
 * on the CPUID of QEMU 7.2's EPYC model as csvsm sees it under TCG: the SEV
 * leaf OVMF and Linux check, the hidden features, and a CPUID page Linux
 * accepts (1..64 entries, the leaves OVMF's reset vector needs).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "tests/snpm/model/cpuid_page.h"

/* A few leaves of `-cpu EPYC,phys-bits=52` (values read in a guest). */
static void host(uint32_t leaf, uint32_t sub, struct cpuid_regs *r)
{
	memset(r, 0, sizeof(*r));
	switch (leaf) {
	case 0x0:
		*r = (struct cpuid_regs){0xD, 0x68747541, 0x444D4163, 0x69746E65};
		break;
	case 0x1:
		*r = (struct cpuid_regs){0x800F12, 0x10800, 0xFED83203, 0x178BFBFF};
		break;
	case 0x4:
		if (sub < 4)
			*r = (struct cpuid_regs){0x121 + 0x20 * sub, 0x1C0003F, 0x3F, 0};
		break;
	case 0x7:
		if (sub == 0)
			*r = (struct cpuid_regs){0, 0x209C01A9, 1u << 16, 0};
		break;
	case 0xD:
		if (sub == 0)
			*r = (struct cpuid_regs){0x7, 0x340, 0x340, 0};
		else if (sub == 1)
			*r = (struct cpuid_regs){0xF, 0x340, 0, 0};
		else if (sub == 2)
			*r = (struct cpuid_regs){0x100, 0x240, 0, 0};
		break;
	case 0x80000000:
		*r = (struct cpuid_regs){0x8000001E, 0x68747541, 0x444D4163, 0x69746E65};
		break;
	case 0x80000001:
		*r = (struct cpuid_regs){0x800F12, 0, 0x35C233FF, 0x2FD3FBFF};
		break;
	case 0x80000008:
		*r = (struct cpuid_regs){0x3034, 0, 0, 0};
		break;
	case 0x8000000A:
		*r = (struct cpuid_regs){1, 0x10, 0, 1};
		break;
	}
}

static const struct snp_cpuid_fn *find(const struct snp_cpuid_page *p, uint32_t leaf, uint32_t sub)
{
	for (uint32_t i = 0; i < p->count; i++)
		if (p->fn[i].eax_in == leaf && p->fn[i].ecx_in == sub)
			return &p->fn[i];
	return NULL;
}

static void test_sev_leaf(void **state)
{
	struct cpuid_regs r;
	host(0x8000001F, 0, &r);
	cpuid_page_adjust(0x8000001F, 0, 51, &r);
	/* OVMF's reset vector: EAX bit 1; C-bit >= 32; Linux: SEV, SEV-ES, SNP bits. */
	assert_int_equal(r.eax, (1u << 1) | (1u << 3) | (1u << 4) | (1u << 5));
	assert_int_equal(r.ebx & 0x3F, 51);
	assert_int_equal((r.ebx >> 12) & 0xF, 4);
	host(0x80000000, 0, &r);
	cpuid_page_adjust(0x80000000, 0, 51, &r);
	assert_true(r.eax >= 0x8000001F);
}

static void test_hidden(void **state)
{
	struct cpuid_regs r;
	host(1, 0, &r);
	cpuid_page_adjust(1, 0, 51, &r);
	assert_false(r.ecx & (1u << 21)); /* x2APIC */
	assert_false(r.ecx & (1u << 3));  /* MONITOR */
	assert_true(r.ecx & (1u << 0));	  /* the rest untouched (SSE3) */
	host(0x80000001, 0, &r);
	cpuid_page_adjust(0x80000001, 0, 51, &r);
	assert_false(r.ecx & (1u << 2)); /* SVM */
	host(0x8000000A, 0, &r);
	cpuid_page_adjust(0x8000000A, 0, 51, &r);
	assert_int_equal(r.eax | r.ebx | r.ecx | r.edx, 0);
	host(7, 0, &r);
	cpuid_page_adjust(7, 0, 51, &r);
	assert_false(r.ecx & (1u << 16)); /* LA57 */
}

static void test_page(void **state)
{
	static struct snp_cpuid_page p;
	int n = cpuid_page_fill(&p, host, 51);
	assert_true(n >= 1 && n <= 64);
	assert_int_equal(p.count, (uint32_t)n);
	/* What OVMF's reset vector needs from the page (snp-guest-view-notes). */
	assert_non_null(find(&p, 0x80000000, 0));
	const struct snp_cpuid_fn *f = find(&p, 0x8000001F, 0);
	assert_non_null(f);
	assert_true(f->eax & (1u << 1));
	assert_int_equal(f->ebx & 0x3F, 51);
	/* Indexed leaves per subleaf; the cache leaf stops at type 0. */
	assert_non_null(find(&p, 4, 3));
	assert_null(find(&p, 4, 4));
	/* The standard range ends below 0xD (no XSAVEC/XSAVES under TCG). */
	assert_null(find(&p, 0xD, 0));
	assert_null(find(&p, 0xD, 2));
	f = find(&p, 0, 0);
	assert_non_null(f);
	assert_int_equal(f->eax, 0xC);
	/* The page and the per-call view agree. */
	f = find(&p, 1, 0);
	assert_non_null(f);
	assert_false(f->ecx & (1u << 21));
	assert_false(f->ecx & (3u << 26)); /* XSAVE, OSXSAVE */
	assert_false(f->ecx & (1u << 28)); /* AVX: its state needs XSAVE */
	f = find(&p, 7, 0);
	assert_true(f == NULL || !(f->ebx & (1u << 5))); /* AVX2 */
	/* All-zero leaves are left out (they read as zero). */
	assert_null(find(&p, 0x80000009, 0));
}

/* cpuid_page_show_xsave(true): XSAVE, AVX and leaf 0xD as QEMU enters it. */
static void test_page_xsave(void **state)
{
	static struct snp_cpuid_page p;
	cpuid_page_show_xsave(true);
	int n = cpuid_page_fill(&p, host, 51);
	cpuid_page_show_xsave(false);
	assert_true(n >= 1 && n <= 64);
	const struct snp_cpuid_fn *f = find(&p, 0, 0);
	assert_non_null(f);
	assert_int_equal(f->eax, 0xD);
	f = find(&p, 1, 0);
	assert_non_null(f);
	assert_true(f->ecx & (1u << 26));  /* XSAVE */
	assert_false(f->ecx & (1u << 27)); /* OSXSAVE: CR4's, filled in by the reader */
	assert_true(f->ecx & (1u << 28));  /* AVX */
	assert_false(f->ecx & (1u << 21)); /* x2APIC still hidden */
	f = find(&p, 7, 0);
	assert_non_null(f);
	assert_true(f->ebx & (1u << 5));   /* AVX2 */
	assert_false(f->ebx & (1u << 16)); /* AVX512F: state beyond XCR0 bit 2 */
	/* QEMU sev_snp_cpuid_info_fill: subleaves 0 and 1 for XCR0_IN 1, EBX 0x240. */
	for (uint32_t sub = 0; sub <= 1; sub++) {
		f = find(&p, 0xD, sub);
		assert_non_null(f);
		assert_int_equal(f->xcr0_in, 1);
		assert_int_equal(f->xss_in, 0);
		assert_int_equal(f->ebx, 0x240);
	}
	f = find(&p, 0xD, 0);
	assert_int_equal(f->eax, 7);	 /* x87 | SSE | AVX */
	assert_int_equal(f->ecx, 0x340); /* all three */
	f = find(&p, 0xD, 1);
	assert_int_equal(f->ecx | f->edx, 0); /* no XSS state */
	f = find(&p, 0xD, 2);
	assert_non_null(f);
	assert_int_equal(f->eax, 0x100);
	assert_int_equal(f->ebx, 0x240);
	/* The default view again: no XSAVE. */
	struct cpuid_regs r;
	host(1, 0, &r);
	cpuid_page_adjust(1, 0, 51, &r);
	assert_false(r.ecx & (1u << 26));
}

static void too_many(uint32_t leaf, uint32_t sub, struct cpuid_regs *r)
{
	host(leaf, sub, r);
	if (leaf == 0)
		r->eax = 0x1F;
	if (leaf == 0x80000000)
		r->eax = 0x80000028;
	if (leaf == 4 || leaf == 0x8000001D)
		r->eax |= 1; /* a cache type in every subleaf */
	if (leaf >= 0x80000000 || leaf <= 0x1F)
		r->ecx |= 1; /* every leaf non-zero */
}

static void test_largest(void **state)
{
	static struct snp_cpuid_page p;
	/* Every leaf and subleaf non-zero: standard 0..0xC (leaf 4 with 8
	 * subleaves, 7 and 0xB with 2) and extended 0x80000000..0x80000021
	 * (0x8000001D with 8): 22 + 41 entries less leaves 5 and 0x8000000A,
	 * which the view zeroes: 61, within the page's 64. */
	assert_int_equal(cpuid_page_fill(&p, too_many, 51), 61);
	assert_int_equal(p.count, 61);
	assert_null(find(&p, 0x80000022, 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sev_leaf), cmocka_unit_test(test_hidden),
	    cmocka_unit_test(test_page),     cmocka_unit_test(test_page_xsave),
	    cmocka_unit_test(test_largest),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
