/*
 * GHCB helpers (base/ghcb.c), the snp platform ops (src/platform/snp.c) and
 * platform detection (src/platform/detect.c). Expected encodings are
 * transcribed from shared/reference/snp-svsm-interfaces.md §4 (GHCB spec
 * 56421 as encoded by Linux sev-common.h / core.c and coconut ghcb.rs).
 * Hypervisor replies are played by the fake VMGEXIT hook, including
 * malformed ones that must be rejected.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "snp/ghcb.h"
#include "snp/snp.h"
#include "base/percpu.h"
#include "base/platform.h"
#include "tests/fake/insn_fake.h"

/* detect.c refers to the sim ops; this test only needs its address. */

static struct ghcb *new_ghcb(void)
{
	struct ghcb *g = aligned_alloc(4096, sizeof(struct ghcb));
	assert_non_null(g);
	memset(g, 0xA5, sizeof(*g));
	return g;
}

static uint64_t u64_at(const void *base, size_t off)
{
	uint64_t v;
	memcpy(&v, (const uint8_t *)base + off, 8);
	return v;
}

/* --- page helpers --- */

static void test_clear_and_valid_bits(void **state)
{
	(void)state;
	struct ghcb *g = new_ghcb();
	const uint8_t *b = (const uint8_t *)g;

	ghcb_clear(g);
	/* 56421 §2.5: version 2 at 0xFFA, usage 0 at 0xFFC; save area and bitmap zero. */
	assert_int_equal(b[0xFFA], 2);
	assert_int_equal(b[0xFFB], 0);
	assert_int_equal(u64_at(g, 0xFF8) >> 32, 0);
	for (size_t i = 0; i < 0x800; i++)
		assert_int_equal(b[i], 0);
	assert_int_equal(b[0x800], 0xA5); /* shared buffer untouched */

	/* Valid bit = offset / 8: RAX 0x1F8 -> bit 63 = byte 7 bit 7. */
	GHCB_SET(g, rax, 0x1122334455667788ULL);
	assert_int_equal(b[0x3F0 + 7], 0x80);
	assert_int_equal(u64_at(g, 0x1F8), 0x1122334455667788ULL);
	/* sw_exit_code 0x390 -> bit 114 = byte 14 bit 2; RCX 0x308 -> bit 97 = byte 12 bit 1. */
	GHCB_SET(g, sw_exit_code, 0x7B);
	GHCB_SET(g, rcx, 1);
	assert_int_equal(b[0x3F0 + 14], 0x04);
	assert_int_equal(b[0x3F0 + 12], 0x02);
	/* XCR0 0x3E8 -> bit 125 = byte 15 bit 5. */
	GHCB_SET(g, xcr0, 1);
	assert_int_equal(b[0x3F0 + 15], 0x20);
	assert_true(GHCB_VALID(g, rax));
	assert_false(GHCB_VALID(g, rbx));
	assert_false(ghcb_is_valid(g, 0x800)); /* beyond the bitmap: never valid */
	free(g);
}

static void test_check_result(void **state)
{
	(void)state;
	struct ghcb *g = new_ghcb();
	uint64_t i2;

	ghcb_clear(g);
	g->sw_exit_info_1 = 0;
	assert_int_equal(ghcb_check_result(g, NULL), GHCB_STATUS_OK);
	/* Only [31:0] count (Linux lower_32_bits). */
	g->sw_exit_info_1 = 0xFFFFFFFF00000000ULL;
	assert_int_equal(ghcb_check_result(g, NULL), GHCB_STATUS_OK);
	/* 1 + a valid #GP exception event. */
	g->sw_exit_info_1 = 1;
	g->sw_exit_info_2 = (1ULL << 31) | (3ULL << 8) | 13;
	assert_int_equal(ghcb_check_result(g, &i2), GHCB_STATUS_EXCEPTION);
	assert_int_equal(i2, g->sw_exit_info_2);
	/* #UD accepted, #PF (14) not, missing valid bit not, wrong type not. */
	g->sw_exit_info_2 = (1ULL << 31) | (3ULL << 8) | 6;
	assert_int_equal(ghcb_check_result(g, NULL), GHCB_STATUS_EXCEPTION);
	g->sw_exit_info_2 = (1ULL << 31) | (3ULL << 8) | 14;
	assert_int_equal(ghcb_check_result(g, NULL), GHCB_STATUS_MALFORMED);
	g->sw_exit_info_2 = (3ULL << 8) | 13;
	assert_int_equal(ghcb_check_result(g, NULL), GHCB_STATUS_MALFORMED);
	g->sw_exit_info_2 = (1ULL << 31) | (0ULL << 8) | 13;
	assert_int_equal(ghcb_check_result(g, NULL), GHCB_STATUS_MALFORMED);
	/* 2 = error with GHCB_ERR_* in info_2. */
	g->sw_exit_info_1 = 2;
	g->sw_exit_info_2 = GHCB_ERR_INVALID_INPUT;
	assert_int_equal(ghcb_check_result(g, &i2), GHCB_STATUS_ERROR);
	assert_int_equal(i2, 5);
	/* Anything else is a protocol violation. */
	g->sw_exit_info_1 = 3;
	assert_int_equal(ghcb_check_result(g, NULL), GHCB_STATUS_MALFORMED);
	g->sw_exit_info_1 = 0x80000000;
	assert_int_equal(ghcb_check_result(g, NULL), GHCB_STATUS_MALFORMED);
	free(g);
}

/* --- MSR protocol, reference §4.1 --- */

static void test_msr_sev_info(void **state)
{
	(void)state;
	unsigned cbit = 0;

	assert_int_equal(ghcb_msr_sev_info_req(), 0x002);
	/* max 2, min 2, C-bit 51. */
	assert_int_equal(ghcb_msr_sev_info_check(0x0002000233000001ULL, &cbit), 0);
	assert_int_equal(cbit, 51);
	/* [1, 3] contains 2. */
	assert_int_equal(ghcb_msr_sev_info_check(0x0003000133000001ULL, NULL), 0);
	/* min 3 > 2, max 1 < 2, min > max, wrong response code. */
	assert_int_equal(ghcb_msr_sev_info_check(0x0003000333000001ULL, NULL), -1);
	assert_int_equal(ghcb_msr_sev_info_check(0x0001000133000001ULL, NULL), -1);
	assert_int_equal(ghcb_msr_sev_info_check(0x0001000333000001ULL, NULL), -1);
	assert_int_equal(ghcb_msr_sev_info_check(0x0002000233000002ULL, NULL), -1);
}

static void test_msr_register_gpa(void **state)
{
	(void)state;
	assert_int_equal(ghcb_msr_reg_gpa_req(0x12345000), 0x12345012ULL);
	assert_int_equal(ghcb_msr_reg_gpa_check(0x12345013ULL, 0x12345000), 0);
	/* The hypervisor must echo the same GFN with response code 0x013. */
	assert_int_equal(ghcb_msr_reg_gpa_check(0x12346013ULL, 0x12345000), -1);
	assert_int_equal(ghcb_msr_reg_gpa_check(0x12345012ULL, 0x12345000), -1);
	assert_int_equal(ghcb_msr_reg_gpa_check(0xFFFFFFFFFFFFF013ULL, 0x12345000), -1);
	assert_int_equal(ghcb_msr_reg_gpa_check(0x12345013ULL, 0x12345008), -1);
}

static void test_msr_hv_features(void **state)
{
	(void)state;
	uint64_t ft = 0;

	assert_int_equal(ghcb_msr_hv_features_req(), 0x080);
	/* SNP (0) + AP_CREATION (1) + SNP_MULTI_VMPL (5) in [63:12]. */
	assert_int_equal(ghcb_msr_hv_features_check((0x23ULL << 12) | 0x081, &ft), 0);
	assert_int_equal(ft, 0x23);
	/* Without MULTI_VMPL or without SNP: refused. */
	assert_int_equal(ghcb_msr_hv_features_check((0x03ULL << 12) | 0x081, NULL), -1);
	assert_int_equal(ghcb_msr_hv_features_check((0x22ULL << 12) | 0x081, NULL), -1);
	assert_int_equal(ghcb_msr_hv_features_check((0x23ULL << 12) | 0x080, NULL), -1);
}

static void test_msr_vmpl_term_psc_cpuid(void **state)
{
	(void)state;
	uint32_t v = 0;

	/* Run at VMPL: 0x016 | vmpl << 32; reply 0x017 with [63:12] == 0. */
	assert_int_equal(ghcb_msr_vmpl_req(0), 0x016ULL);
	assert_int_equal(ghcb_msr_vmpl_req(2), 0x0000000200000016ULL);
	assert_int_equal(ghcb_msr_vmpl_check(0x017), 0);
	assert_int_equal(ghcb_msr_vmpl_check(0x0000000100000017ULL), -1); /* KVM: invalid VMPL */
	assert_int_equal(ghcb_msr_vmpl_check(0x1017ULL), -1);		  /* [31:12] must be 0 */
	assert_int_equal(ghcb_msr_vmpl_check(0x016ULL), -1);
	/* Terminate: 0x100 | set << 12 | code << 16. */
	assert_int_equal(ghcb_msr_term_req(0, 0), 0x100ULL);
	assert_int_equal(ghcb_msr_term_req(1, 3), 0x31100ULL);
	assert_int_equal(ghcb_msr_term_req(0, 2), 0x20100ULL);
	/* One-page PSC: op [55:52], GFN [51:12]. */
	assert_int_equal(ghcb_msr_psc_req(0x12345000, PSC_OP_SHARED), 0x0020000012345014ULL);
	assert_int_equal(ghcb_msr_psc_check(0x015), 0);
	assert_int_equal(ghcb_msr_psc_check(0x0000000100000015ULL), -1);
	/* CPUID: fn [63:32], reg [31:30], reply 0x005 with the value in [63:32]. */
	assert_int_equal(ghcb_msr_cpuid_req(0x8000001F, 1), 0x8000001F40000004ULL);
	assert_int_equal(ghcb_msr_cpuid_check(0xDEADBEEF00000005ULL, &v), 0);
	assert_int_equal(v, 0xDEADBEEF);
	assert_int_equal(ghcb_msr_cpuid_check(0xDEADBEEF00000004ULL, &v), -1);
}

/* --- AP creation, reference §4.5 --- */

static void test_ap_create(void **state)
{
	(void)state;
	struct ghcb *g = new_ghcb();
	const uint8_t *b = (const uint8_t *)g;

	assert_int_equal(ghcb_ap_create_fill(g, SVM_VMGEXIT_AP_CREATE, 0, 3, 0x7000, 0x5), 0);
	assert_int_equal(u64_at(g, 0x390), 0x80000013ULL);
	assert_int_equal(u64_at(g, 0x398), 0x0000000300000001ULL);
	assert_int_equal(u64_at(g, 0x3A0), 0x7000);
	assert_int_equal(u64_at(g, 0x1F8), 0x5);
	assert_true(GHCB_VALID(g, rax));
	assert_true(GHCB_VALID(g, sw_exit_info_2));
	assert_int_equal(b[0xFFA], 2);
	/* VMPL in [19:16]: a VMPL2 VMSA for APIC ID 0x11. */
	assert_int_equal(ghcb_ap_create_fill(g, SVM_VMGEXIT_AP_CREATE, 2, 0x11, 0x8000, 0x1), 0);
	assert_int_equal(u64_at(g, 0x398), 0x0000001100020001ULL);
	/* DESTROY carries no SEV_FEATURES. */
	assert_int_equal(ghcb_ap_create_fill(g, SVM_VMGEXIT_AP_DESTROY, 0, 1, 0x7000, 0x5), 0);
	assert_int_equal(u64_at(g, 0x398), 0x0000000100000002ULL);
	assert_false(GHCB_VALID(g, rax));
	/* Bad arguments. */
	assert_int_equal(ghcb_ap_create_fill(g, 3, 0, 1, 0x7000, 0), -1);
	assert_int_equal(ghcb_ap_create_fill(g, 1, 4, 1, 0x7000, 0), -1);
	assert_int_equal(ghcb_ap_create_fill(g, 1, 0, 1, 0x7010, 0), -1);
	/* Result check. */
	g->sw_exit_info_1 = 0;
	assert_int_equal(ghcb_ap_create_check(g), 0);
	g->sw_exit_info_1 = 2;
	assert_int_equal(ghcb_ap_create_check(g), -1);
	g->sw_exit_info_1 = 7;
	assert_int_equal(ghcb_ap_create_check(g), -1);

	ghcb_run_vmpl_fill(g, 2);
	assert_int_equal(u64_at(g, 0x390), 0x80000018ULL);
	assert_int_equal(u64_at(g, 0x398), 2);
	assert_int_equal(u64_at(g, 0x3A0), 0);
	free(g);
}

/* RUN_VMPL's result, and the #HV doorbell page event (0x8000_0014). */
static void test_run_vmpl_result_and_hv_doorbell(void **state)
{
	(void)state;
	struct ghcb *g = new_ghcb();

	ghcb_run_vmpl_fill(g, 2);
	g->sw_exit_info_1 = 0;
	assert_int_equal(ghcb_run_vmpl_result(g), 0);
	/* INVALID_EVENT: a host that does not know the event (the MSR form then). */
	g->sw_exit_info_1 = 2;
	g->sw_exit_info_2 = GHCB_ERR_INVALID_EVENT;
	assert_int_equal(ghcb_run_vmpl_result(g), 1);
	/* Any other error, an exception, a malformed answer: refused. */
	g->sw_exit_info_2 = GHCB_ERR_INVALID_INPUT;
	assert_int_equal(ghcb_run_vmpl_result(g), -1);
	g->sw_exit_info_1 = 1;
	g->sw_exit_info_2 = (1ULL << 31) | (3ULL << 8) | 13;
	assert_int_equal(ghcb_run_vmpl_result(g), -1);
	g->sw_exit_info_1 = 5;
	g->sw_exit_info_2 = GHCB_ERR_INVALID_EVENT;
	assert_int_equal(ghcb_run_vmpl_result(g), -1);

	ghcb_hv_doorbell_fill(g, GHCB_HVDB_SET, 0x12345000);
	assert_int_equal(u64_at(g, 0x390), 0x80000014ULL);
	assert_int_equal(u64_at(g, 0x398), GHCB_HVDB_SET);
	assert_int_equal(u64_at(g, 0x3A0), 0x12345000);
	/* SET succeeds only if the host answers OK with the same GPA. */
	g->sw_exit_info_1 = 0;
	g->sw_exit_info_2 = 0x12345000;
	assert_int_equal(ghcb_hv_doorbell_check(g, 0x12345000), 0);
	g->sw_exit_info_2 = 0x12346000;
	assert_int_equal(ghcb_hv_doorbell_check(g, 0x12345000), -1);
	g->sw_exit_info_2 = ~0ULL;
	assert_int_equal(ghcb_hv_doorbell_check(g, 0x12345000), -1);
	g->sw_exit_info_1 = 2;
	g->sw_exit_info_2 = 0x12345000;
	assert_int_equal(ghcb_hv_doorbell_check(g, 0x12345000), -1);
	g->sw_exit_info_1 = 9;
	assert_int_equal(ghcb_hv_doorbell_check(g, 0x12345000), -1);
	free(g);
}

/* --- platform_snp through the instruction fake --- */

static uint64_t hv_seen_req;
static uint64_t hv_reply;
static void hv_msr(void)
{
	hv_seen_req = rdmsr(MSR_GHCB);
	wrmsr(MSR_GHCB, hv_reply);
}

static void test_snp_msr_call(void **state)
{
	(void)state;
	fake_msr_reset();
	wrmsr(MSR_GHCB, 0xABC000); /* a registered GHCB GPA */
	fake_vmgexit = hv_msr;
	hv_reply = 0x017;
	assert_int_equal(platform_snp.ghcb_msr_call(ghcb_msr_vmpl_req(2)), 0x017);
	assert_int_equal(hv_seen_req, 0x0000000200000016ULL);
	assert_int_equal(rdmsr(MSR_GHCB), 0xABC000); /* restored */
	fake_vmgexit = NULL;
}

/*
 * A software hypervisor: MSR-protocol requests (info != 0) get the replies
 * a well-behaved host sends unless hv_bad names the one to corrupt; GHCB
 * page calls (info 0 = the registered GPA) go to the AP-creation model.
 */
static uint64_t hv_bad;	       /* request code whose reply is corrupted */
static uint64_t hv_registered; /* GPA the guest registered */
static unsigned hv_msr_calls;
static int hv_ap_result;
static struct ghcb hv_expect_snapshot;
static void hv_ap(void);
static void hv_any(void)
{
	uint64_t v = rdmsr(MSR_GHCB), info = v & 0xFFF, resp = 0;

	if (!info) {
		assert_int_equal(v, hv_registered); /* only a registered GHCB is used */
		hv_ap();
		return;
	}
	hv_msr_calls++;
	switch (info) {
	case 0x002:
		resp = 0x0002000233000001ULL;
		break;
	case 0x080:
		resp = (0x23ULL << 12) | 0x081;
		break;
	case 0x012:
		resp = (v & ~0xFFFULL) | 0x013;
		hv_registered = v & ~0xFFFULL;
		break;
	case 0x014:
		resp = 0x015;
		break;
	default:
		fail_msg("unexpected MSR request %#llx", (unsigned long long)v);
	}
	if (info == hv_bad)
		resp = info == 0x080 ? (0x03ULL << 12) | 0x081 /* no SNP_MULTI_VMPL */
				     : resp ^ (1ULL << 40);    /* wrong GFN / error code */
	wrmsr(MSR_GHCB, resp);
}

static vaddr_t pval_va;
static int pval_validate = -1;
static int pval_fake(vaddr_t va, unsigned size, bool validate, bool *unchanged)
{
	assert_int_equal(size, RMP_PG_SIZE_4K);
	pval_va = va;
	pval_validate = validate;
	*unchanged = false;
	return 0;
}

static void test_snp_ghcb_init(void **state)
{
	(void)state;
	struct ghcb *g = new_ghcb();
	struct percpu *cpu = &percpus[5];

	fake_msr_reset();
	fake_vmgexit = hv_any;
	fake_pvalidate = pval_fake;
	cpu->id = 5;
	cpu->ghcb = g;
	cpu->ghcb_gpa = (uint64_t)(uintptr_t)g;
	assert_false(snp_ghcb_usable(cpu));
	/* A corrupted registration echo fails, after the page became shared. */
	hv_bad = 0x012;
	assert_int_equal(snp_ghcb_init(cpu), -1);
	assert_int_equal(pval_va, (vaddr_t)(uintptr_t)g);
	assert_int_equal(pval_validate, 0); /* rescind before the PSC to shared */
	assert_true(snp_ghcb_usable(cpu));
	/* A host without SNP_MULTI_VMPL is refused. */
	hv_bad = 0x080;
	assert_int_equal(snp_ghcb_init(cpu), -1);
	hv_bad = 0;
	hv_msr_calls = 0;
	assert_int_equal(snp_ghcb_init(cpu), 0);
	assert_int_equal(hv_msr_calls, 3); /* SEV_INFO, HV features, register */
	assert_int_equal(rdmsr(MSR_GHCB), cpu->ghcb_gpa);
	assert_int_equal(hv_registered, cpu->ghcb_gpa);
	/* Idempotent. */
	hv_msr_calls = 0;
	assert_int_equal(snp_ghcb_init(cpu), 0);
	assert_int_equal(hv_msr_calls, 0);
	/* A PSC the host fails leaves the page private. */
	struct percpu *c2 = &percpus[6];
	struct ghcb *g2 = new_ghcb();
	c2->id = 6;
	c2->ghcb = g2;
	c2->ghcb_gpa = (uint64_t)(uintptr_t)g2;
	hv_bad = 0x014;
	assert_int_equal(snp_ghcb_init(c2), -1);
	assert_false(snp_ghcb_usable(c2));
	hv_bad = 0;
	c2->ghcb = NULL;
	cpu->ghcb = NULL;
	fake_vmgexit = NULL;
	fake_pvalidate = NULL;
	free(g);
	free(g2);
}

/* AP creation model behind hv_any. */
static void hv_ap(void)
{
	struct ghcb *g = (struct ghcb *)(uintptr_t)rdmsr(MSR_GHCB);
	memcpy(&hv_expect_snapshot, g, sizeof(*g));
	g->sw_exit_info_1 = (uint64_t)hv_ap_result;
	g->sw_exit_info_2 = hv_ap_result ? GHCB_ERR_INVALID_INPUT : 0;
}

static vaddr_t rmp_va[4];
static uint64_t rmp_attrs[4];
static unsigned rmp_calls;
static int rmp_fake(vaddr_t va, unsigned size, uint64_t attrs)
{
	assert_int_equal(size, RMP_PG_SIZE_4K);
	if (rmp_calls < 4) {
		rmp_va[rmp_calls] = va;
		rmp_attrs[rmp_calls] = attrs;
	}
	rmp_calls++;
	return 0;
}

static void test_snp_start_ap(void **state)
{
	(void)state;
	struct ghcb *g = new_ghcb();
	struct percpu *bsp = &percpus[0], *ap = &percpus[1];
	struct snp_ap_context tmpl = {
	    .rip = 0x100200,
	    .cr0 = 0x80010033,
	    .cr3 = 0x5000,
	    .cr4 = 0x6A0,
	    .efer = 0x500,
	    .gdtr_base = 0x9000,
	    .gdtr_limit = 0x27,
	    .cs_sel = 8,
	    .ds_sel = 0x10,
	    .sev_features = 0x1,
	};
	struct vmsa *v;

	fake_msr_reset();
	bsp->id = 0;
	bsp->ghcb = g;
	bsp->ghcb_gpa = (uint64_t)(uintptr_t)g;
	fake_pvalidate = pval_fake;
	fake_vmgexit = hv_any;
	/* platform_snp.setup makes the boot vCPU's GHCB shared and registers it. */
	assert_int_equal(platform_snp.setup(NULL, NULL, 0), 0);
	ap->id = 1;
	ap->apic_id = 6;
	ap->stack_top = 0x77000;
	/* No template yet: refused. */
	assert_int_equal(platform_snp.start_ap(ap), -1);
	snp_set_ap_context(&tmpl);

	fake_rmpadjust = rmp_fake;
	rmp_calls = 0;
	hv_ap_result = 0;
	assert_int_equal(platform_snp.start_ap(ap), 0);
	v = snp_ap_vmsa_page(1);
	assert_false(((uintptr_t)v) & 0xFFF);
	assert_true(((uintptr_t)v) & (PAGE_SIZE_2M - 1)); /* never 2 MiB aligned */
	/* Linux snp_set_vmsa at VMPL0: target VMPL1 + VMSA bit 16. */
	assert_int_equal(rmp_calls, 1);
	assert_int_equal(rmp_va[0], (vaddr_t)(uintptr_t)v);
	assert_int_equal(rmp_attrs[0], 0x10001);
	/* What the hypervisor saw. */
	assert_int_equal(hv_expect_snapshot.sw_exit_code, 0x80000013ULL);
	assert_int_equal(hv_expect_snapshot.sw_exit_info_1, 0x0000000600000001ULL);
	assert_int_equal(hv_expect_snapshot.sw_exit_info_2, (uint64_t)(uintptr_t)v);
	assert_int_equal(hv_expect_snapshot.rax, 0x1);
	/* The VMSA the AP starts from. */
	assert_int_equal(v->rip, 0x100200);
	assert_int_equal(v->rsp, 0x77000);
	assert_int_equal(v->rdi, (uint64_t)(uintptr_t)ap);
	assert_int_equal(v->efer, 0x1500);
	assert_int_equal(v->sev_features, 1);
	assert_int_equal(v->gs.base, (uint64_t)(uintptr_t)ap);

	/* The hypervisor refuses: start_ap fails and the VMSA bit is cleared again. */
	rmp_calls = 0;
	hv_ap_result = 2;
	assert_int_equal(platform_snp.start_ap(ap), -1);
	assert_int_equal(rmp_calls, 2);
	assert_int_equal(rmp_attrs[1], 0x1);
	/* A malformed reply (3) is a failure too. */
	rmp_calls = 0;
	hv_ap_result = 3;
	assert_int_equal(platform_snp.start_ap(ap), -1);

	/* The AP's GHCB page is made shared before the AP runs. */
	struct ghcb *apg = new_ghcb();
	ap->ghcb = apg;
	ap->ghcb_gpa = (uint64_t)(uintptr_t)apg;
	hv_ap_result = 0;
	assert_int_equal(platform_snp.start_ap(ap), 0);
	assert_int_equal(pval_va, (vaddr_t)(uintptr_t)apg);
	assert_true(snp_ghcb_usable(ap));
	ap->ghcb = NULL;
	free(apg);

	fake_rmpadjust = NULL;
	fake_vmgexit = NULL;
	fake_pvalidate = NULL;
	bsp->ghcb = NULL;
	free(g);
}

static void test_snp_vmsa_pages_distinct(void **state)
{
	(void)state;
	for (unsigned i = 0; i + 1 < MAX_CPUS; i++) {
		uintptr_t a = (uintptr_t)snp_ap_vmsa_page(i),
			  b = (uintptr_t)snp_ap_vmsa_page(i + 1);
		assert_true(b > a);
		assert_true(a & (PAGE_SIZE_2M - 1));
	}
}

/* --- detection --- */

static uint32_t cpu_ext_max, cpu_svm_ecx, cpu_np_edx, cpu_sev_eax;
static void fake_cpu(uint32_t leaf, uint32_t subleaf, struct cpuid_regs *r)
{
	(void)subleaf;
	memset(r, 0, sizeof(*r));
	if (leaf == 0x80000000)
		r->eax = cpu_ext_max;
	else if (leaf > cpu_ext_max)
		return;
	else if (leaf == 0x80000001)
		r->ecx = cpu_svm_ecx;
	else if (leaf == 0x8000000A)
		r->edx = cpu_np_edx;
	else if (leaf == 0x8000001F)
		r->eax = cpu_sev_eax;
}

static void test_detect(void **state)
{
	(void)state;
	fake_cpuid = fake_cpu;
	fake_msr_reset();

	/* QEMU TCG -cpu EPYC: SVM + NPT, leaf 0x8000001F absent. */
	cpu_ext_max = 0x8000001E;
	cpu_svm_ecx = 1u << 2;
	cpu_np_edx = 1u << 0;
	cpu_sev_eax = 0;
	wrmsr(MSR_SEV_STATUS, 7); /* must not be consulted without the SEV CPUID bit */
	assert_false(snp_platform_detect());

	/* SNP guest: SEV bit in CPUID, SEV_STATUS = SEV|ES|SNP. */
	cpu_ext_max = 0x8000001F;
	cpu_sev_eax = 1u << 1;
	assert_true(snp_platform_detect());

	/* SEV-capable host CPU, unencrypted VM: not SNP. */
	wrmsr(MSR_SEV_STATUS, 0);
	assert_false(snp_platform_detect());
	/* SEV but not SNP (SEV_STATUS = SEV|ES). */
	wrmsr(MSR_SEV_STATUS, 3);
	assert_false(snp_platform_detect());

	fake_cpuid = NULL;
	fake_msr_reset();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_clear_and_valid_bits),
	    cmocka_unit_test(test_check_result),
	    cmocka_unit_test(test_msr_sev_info),
	    cmocka_unit_test(test_msr_register_gpa),
	    cmocka_unit_test(test_msr_hv_features),
	    cmocka_unit_test(test_msr_vmpl_term_psc_cpuid),
	    cmocka_unit_test(test_ap_create),
	    cmocka_unit_test(test_run_vmpl_result_and_hv_doorbell),
	    cmocka_unit_test(test_snp_msr_call),
	    cmocka_unit_test(test_snp_ghcb_init),
	    cmocka_unit_test(test_snp_start_ap),
	    cmocka_unit_test(test_snp_vmsa_pages_distinct),
	    cmocka_unit_test(test_detect),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
