/*
 * Layout tests for the SNP/SVSM spec headers: every offset and encoding is
 * compared with the value transcribed from shared/reference/
 * snp-svsm-interfaces.md (section cited per test), which cites the public
 * code (Linux, edk2, coconut-svsm) that encodes the AMD specs. The headers
 * also carry _Static_asserts; these tests pin the same numbers at run time
 * from an independent transcription and check the bit encodings.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "snp/ghcb.h"
#include "snp/svsm.h"
#include "snp/secrets.h"
#include "snp/vmsa.h"
#include "snp/cpuid_page.h"
#include "snp/snp.h"

/* reference §4.2 GHCB page layout table (coconut ghcb.rs, edk2 Ghcb.h). */
static void test_ghcb_offsets(void **state)
{
	(void)state;
	assert_int_equal(sizeof(struct ghcb), 4096);
	assert_int_equal(offsetof(struct ghcb, cpl), 0x0CB);
	assert_int_equal(offsetof(struct ghcb, xss), 0x140);
	assert_int_equal(offsetof(struct ghcb, dr7), 0x160);
	assert_int_equal(offsetof(struct ghcb, rax), 0x1F8);
	assert_int_equal(offsetof(struct ghcb, rcx), 0x308);
	assert_int_equal(offsetof(struct ghcb, rdx), 0x310);
	assert_int_equal(offsetof(struct ghcb, rbx), 0x318);
	assert_int_equal(offsetof(struct ghcb, sw_exit_code), 0x390);
	assert_int_equal(offsetof(struct ghcb, sw_exit_info_1), 0x398);
	assert_int_equal(offsetof(struct ghcb, sw_exit_info_2), 0x3A0);
	assert_int_equal(offsetof(struct ghcb, sw_scratch), 0x3A8);
	assert_int_equal(offsetof(struct ghcb, xcr0), 0x3E8);
	assert_int_equal(offsetof(struct ghcb, valid_bitmap), 0x3F0);
	assert_int_equal(offsetof(struct ghcb, x87_state_gpa), 0x400);
	assert_int_equal(offsetof(struct ghcb, shared_buffer), 0x800);
	assert_int_equal(sizeof(((struct ghcb *)0)->shared_buffer), 2032);
	assert_int_equal(offsetof(struct ghcb, protocol_version), 0xFFA);
	assert_int_equal(offsetof(struct ghcb, ghcb_usage), 0xFFC);
}

/* reference §4.4: PSC entry [11:0] cur_page, [51:12] GFN, [55:52] op, [56] 2M. */
static void test_psc_entry(void **state)
{
	(void)state;
	/* 2 MiB private entry at 1 GiB: GFN 0x40000, op 1, size bit 56. */
	assert_int_equal(psc_entry(0x40000000ULL, PSC_OP_PRIVATE, true), 0x0110000040000000ULL);
	/* 4 KiB shared entry: op 2, no size bit. */
	assert_int_equal(psc_entry(0x12345000ULL, PSC_OP_SHARED, false), 0x0020000012345000ULL);
	/* The GFN field stops at bit 51 and the page offset is dropped. */
	assert_int_equal(psc_entry(0xFFF0000000000FFFULL, PSC_OP_PRIVATE, false),
			 0x0010000000000000ULL);
	assert_int_equal(PSC_MAX_ENTRIES, 253);
	assert_int_equal(offsetof(struct psc_desc, cur_entry), 0);
	assert_int_equal(offsetof(struct psc_desc, end_entry), 2);
	assert_int_equal(offsetof(struct psc_desc, reserved), 4);
	assert_int_equal(offsetof(struct psc_desc, entries), 8);
}

/* reference §6.4 (Linux snp_secrets_page, edk2 SnpSecretsPage.h). */
static void test_secrets_page(void **state)
{
	(void)state;
	assert_int_equal(sizeof(struct snp_secrets_page), 4096);
	assert_int_equal(offsetof(struct snp_secrets_page, vmpck[0]), 0x020);
	assert_int_equal(offsetof(struct snp_secrets_page, vmpck[1]), 0x040);
	assert_int_equal(offsetof(struct snp_secrets_page, vmpck[2]), 0x060);
	assert_int_equal(offsetof(struct snp_secrets_page, vmpck[3]), 0x080);
	assert_int_equal(offsetof(struct snp_secrets_page, os_area), 0x0A0);
	assert_int_equal(offsetof(struct snp_secrets_page, vmsa_tweak_bitmap), 0x100);
	assert_int_equal(offsetof(struct snp_secrets_page, svsm_base), 0x140);
	assert_int_equal(offsetof(struct snp_secrets_page, svsm_size), 0x148);
	assert_int_equal(offsetof(struct snp_secrets_page, svsm_caa), 0x150);
	assert_int_equal(offsetof(struct snp_secrets_page, svsm_max_version), 0x158);
	assert_int_equal(offsetof(struct snp_secrets_page, svsm_guest_vmpl), 0x15C);
	assert_int_equal(offsetof(struct snp_secrets_page, tsc_factor), 0x160);

	/* Byte-level: a field written through the struct lands at the spec offset. */
	static struct snp_secrets_page p;
	uint8_t *b = (uint8_t *)&p;
	memset(&p, 0, sizeof(p));
	p.svsm_caa = 0x1122334455667788ULL;
	p.svsm_guest_vmpl = 2;
	assert_int_equal(b[0x150], 0x88);
	assert_int_equal(b[0x157], 0x11);
	assert_int_equal(b[0x15C], 2);
}

/* reference §5.3 (coconut cpuarch vmsa.rs, sev-snp-measure). */
static void test_vmsa_offsets(void **state)
{
	(void)state;
	assert_int_equal(sizeof(struct vmsa), 4096);
	assert_int_equal(sizeof(struct vmsa_seg), 16);
	assert_int_equal(offsetof(struct vmsa, es), 0x000);
	assert_int_equal(offsetof(struct vmsa, cs), 0x010);
	assert_int_equal(offsetof(struct vmsa, gdtr), 0x060);
	assert_int_equal(offsetof(struct vmsa, idtr), 0x080);
	assert_int_equal(offsetof(struct vmsa, tr), 0x090);
	assert_int_equal(offsetof(struct vmsa, vmpl), 0x0CA);
	assert_int_equal(offsetof(struct vmsa, cpl), 0x0CB);
	assert_int_equal(offsetof(struct vmsa, efer), 0x0D0);
	assert_int_equal(offsetof(struct vmsa, xss), 0x140);
	assert_int_equal(offsetof(struct vmsa, cr4), 0x148);
	assert_int_equal(offsetof(struct vmsa, cr3), 0x150);
	assert_int_equal(offsetof(struct vmsa, cr0), 0x158);
	assert_int_equal(offsetof(struct vmsa, dr7), 0x160);
	assert_int_equal(offsetof(struct vmsa, dr6), 0x168);
	assert_int_equal(offsetof(struct vmsa, rflags), 0x170);
	assert_int_equal(offsetof(struct vmsa, rip), 0x178);
	assert_int_equal(offsetof(struct vmsa, rsp), 0x1D8);
	assert_int_equal(offsetof(struct vmsa, rax), 0x1F8);
	assert_int_equal(offsetof(struct vmsa, g_pat), 0x268);
	assert_int_equal(offsetof(struct vmsa, pkru), 0x2E8);
	assert_int_equal(offsetof(struct vmsa, rcx), 0x308);
	assert_int_equal(offsetof(struct vmsa, rdx), 0x310);
	assert_int_equal(offsetof(struct vmsa, rbx), 0x318);
	assert_int_equal(offsetof(struct vmsa, rbp), 0x328);
	assert_int_equal(offsetof(struct vmsa, rsi), 0x330);
	assert_int_equal(offsetof(struct vmsa, rdi), 0x338);
	assert_int_equal(offsetof(struct vmsa, r8), 0x340);
	assert_int_equal(offsetof(struct vmsa, r9), 0x348);
	assert_int_equal(offsetof(struct vmsa, r15), 0x378);
	assert_int_equal(offsetof(struct vmsa, guest_exit_info_1), 0x390);
	assert_int_equal(offsetof(struct vmsa, guest_exit_info_2), 0x398);
	assert_int_equal(offsetof(struct vmsa, guest_nrip), 0x3A8);
	assert_int_equal(offsetof(struct vmsa, sev_features), 0x3B0);
	assert_int_equal(offsetof(struct vmsa, vintr_ctrl), 0x3B8);
	assert_int_equal(offsetof(struct vmsa, guest_exit_code), 0x3C0);
	assert_int_equal(offsetof(struct vmsa, virtual_tom), 0x3C8);
	assert_int_equal(offsetof(struct vmsa, event_inj), 0x3E0);
	assert_int_equal(offsetof(struct vmsa, xcr0), 0x3E8);
	assert_int_equal(offsetof(struct vmsa, mxcsr), 0x408);
	assert_int_equal(offsetof(struct vmsa, x87_fcw), 0x410);
	/* Segment: sel u16 @0, attr u16 @2, limit u32 @4, base u64 @8. */
	assert_int_equal(offsetof(struct vmsa_seg, selector), 0);
	assert_int_equal(offsetof(struct vmsa_seg, attrib), 2);
	assert_int_equal(offsetof(struct vmsa_seg, limit), 4);
	assert_int_equal(offsetof(struct vmsa_seg, base), 8);
	/* coconut types.rs SVSM_CS_FLAGS 0x29B, SVSM_DS_FLAGS 0xC93; reference §8 SVSM-mode
	 * 0xC9B/0xC93. */
	assert_int_equal(VMSA_ATTR_CODE64, 0x29B);
	assert_int_equal(VMSA_ATTR_DATA, 0xC93);
}

/* reference §1.2 calling area, §1.5 PVALIDATE structure and entry bits. */
static void test_calling_area_and_pvalidate(void **state)
{
	(void)state;
	assert_int_equal(sizeof(struct svsm_ca), 4096);
	assert_int_equal(offsetof(struct svsm_ca, call_pending), 0x000);
	assert_int_equal(offsetof(struct svsm_ca, mem_available), 0x001);
	assert_int_equal(offsetof(struct svsm_ca, svsm_buffer), 0x008);
	assert_int_equal(sizeof(struct svsm_pvalidate_hdr), 8);
	assert_int_equal(offsetof(struct svsm_pvalidate_hdr, entries), 0x00);
	assert_int_equal(offsetof(struct svsm_pvalidate_hdr, next), 0x02);
	assert_int_equal(SVSM_PVALIDATE_ENTRY_OFF, 0x08);
	assert_int_equal(SVSM_PVALIDATE_MAX_IN_CA, (4096 - 8 - 8) / 8);
	/* Entry: [1:0] size, [2] validate, [3] ignore CF, [11:4] reserved, [63:12] GFN. */
	assert_int_equal(svsm_pval_entry(0x200000, true, true, false), 0x200005ULL);
	assert_int_equal(svsm_pval_entry(0x1234000, false, false, true), 0x1234008ULL);
	assert_int_equal(svsm_pval_entry(0x1234FFF, false, true, false), 0x1234004ULL);
	assert_int_equal(SVSM_PVAL_RSVD_MASK, 0xFF0);
}

/* reference §1.1/§1.3/§1.5: call encoding, result codes, QUERY_PROTOCOL. */
static void test_svsm_calls(void **state)
{
	(void)state;
	assert_int_equal(SVSM_CALL(SVSM_PROTOCOL_CORE, SVSM_CORE_PVALIDATE), 0x1ULL);
	assert_int_equal(SVSM_CALL(SVSM_PROTOCOL_VTPM, SVSM_VTPM_CMD), 0x0000000200000001ULL);
	assert_int_equal(SVSM_CALL(SVSM_PROTOCOL_ATTEST, SVSM_ATTEST_SINGLE_SERVICE),
			 0x0000000100000001ULL);
	assert_int_equal(svsm_call_protocol(0x0000000200000001ULL), 2);
	assert_int_equal(svsm_call_id(0x0000000200000001ULL), 1);
	assert_int_equal(SVSM_CORE_QUERY_PROTOCOL, 6);
	assert_int_equal(SVSM_CORE_CONFIGURE_VTOM, 7);
	assert_int_equal(SVSM_ERR_INCOMPLETE, 0x80000000ULL);
	assert_int_equal(SVSM_ERR_INVALID_PARAMETER, 0x80000005ULL);
	assert_int_equal(SVSM_ERR_BUSY, 0x80000007ULL);
	assert_int_equal(SVSM_PVALIDATE_FAIL_SIZEMISMATCH, 0x80001006ULL);
	assert_int_equal(SVSM_PVALIDATE_FAIL_NO_CHANGE, 0x80001010ULL);
	assert_int_equal(svsm_query_protocol_in(2, 1), 0x0000000200000001ULL);
	assert_int_equal(svsm_query_protocol_out(1, 1), 0x0000000100000001ULL);
}

/* reference §1 "SNP CPUID page" (Linux snp_cpuid_table). */
static void test_cpuid_page_layout(void **state)
{
	(void)state;
	assert_int_equal(sizeof(struct snp_cpuid_page), 4096);
	assert_int_equal(sizeof(struct snp_cpuid_fn), 48);
	assert_int_equal(offsetof(struct snp_cpuid_page, fn), 16);
	assert_int_equal(offsetof(struct snp_cpuid_page, fn[1]), 16 + 48);
	assert_int_equal(offsetof(struct snp_cpuid_fn, xcr0_in), 8);
	assert_int_equal(offsetof(struct snp_cpuid_fn, xss_in), 16);
	assert_int_equal(offsetof(struct snp_cpuid_fn, eax), 24);
	assert_int_equal(offsetof(struct snp_cpuid_fn, edx), 36);
	assert_int_equal(SNP_CPUID_COUNT_MAX, 64);
}

/* snp_build_ap_vmsa: the bytes land where the VMSA layout says (reference §5.3, §8). */
static void test_build_ap_vmsa(void **state)
{
	(void)state;
	static struct vmsa v;
	const uint8_t *b = (const uint8_t *)&v;
	struct snp_ap_context ctx = {
	    .rip = 0xFFFFFFFF80101000ULL,
	    .rsp = 0x800000,
	    .rdi = 0xABCD,
	    .cr0 = 0x80010033,
	    .cr3 = 0x1000,
	    .cr4 = 0x406A0,
	    .efer = 0x500,
	    .gdtr_base = 0x123000,
	    .gdtr_limit = 0x37,
	    .idtr_base = 0x124000,
	    .idtr_limit = 0xFFF,
	    .cs_sel = 0x8,
	    .ds_sel = 0x10,
	    .sev_features = 0x5,
	};
	uint64_t q;
	uint16_t w;

	memset(&v, 0xEE, sizeof(v));
	snp_build_ap_vmsa(&v, &ctx);
	memcpy(&q, b + 0x178, 8);
	assert_int_equal(q, ctx.rip);
	memcpy(&q, b + 0x1D8, 8);
	assert_int_equal(q, 0x800000);
	memcpy(&q, b + 0x338, 8);
	assert_int_equal(q, 0xABCD);
	memcpy(&q, b + 0x0D0, 8);
	assert_int_equal(q, 0x500 | (1ULL << 12)); /* EFER.SVME forced */
	memcpy(&q, b + 0x150, 8);
	assert_int_equal(q, 0x1000);
	memcpy(&q, b + 0x3B0, 8);
	assert_int_equal(q, 5);
	memcpy(&q, b + 0x170, 8);
	assert_int_equal(q, 2);
	memcpy(&q, b + 0x268, 8);
	assert_int_equal(q, 0x0007040600070406ULL);
	memcpy(&w, b + 0x010, 2);
	assert_int_equal(w, 0x8); /* CS selector */
	memcpy(&w, b + 0x012, 2);
	assert_int_equal(w, 0x29B);
	memcpy(&w, b + 0x032, 2);
	assert_int_equal(w, 0xC93); /* DS attrib */
	memcpy(&q, b + 0x068, 8);
	assert_int_equal(q, 0x123000); /* GDTR base */
	assert_int_equal(b[0x0CA], 0); /* VMPL0 */
	memcpy(&w, b + 0x408, 2);
	assert_int_equal(w, 0x1F80);
	/* Untouched fields are zero, not left over from before. */
	assert_int_equal(b[0x7C8], 0);
	assert_int_equal(b[0xFFF], 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ghcb_offsets),
	    cmocka_unit_test(test_psc_entry),
	    cmocka_unit_test(test_secrets_page),
	    cmocka_unit_test(test_vmsa_offsets),
	    cmocka_unit_test(test_calling_area_and_pvalidate),
	    cmocka_unit_test(test_svsm_calls),
	    cmocka_unit_test(test_cpuid_page_layout),
	    cmocka_unit_test(test_build_ap_vmsa),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
