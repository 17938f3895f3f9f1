/*
 * Unit tests for the ATTESTATION_REPORT decoder (attest/report.c) and the
 * strict SPL INTEGER decoding and the named policy checks of the verifier
 * (attest/snp_verify.c):
 * well-formed synthetic reports of each version, then one broken rule at a
 * time, and malformed sizes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include <attest/report.h>
#include <attest/snp_verify.h>

static uint8_t buf[SNP_REPORT_SIZE];
static struct snp_report rep;

static void put32(size_t off, uint32_t v)
{
	memcpy(buf + off, &v, 4);
}
static void put64(size_t off, uint64_t v)
{
	memcpy(buf + off, &v, 8);
}

/* A structurally valid report of a version (signature bytes arbitrary). */
static void make(uint32_t version)
{
	memset(buf, 0, sizeof(buf));
	put32(0x000, version);
	put64(0x008, 0x30000); /* SMT | reserved bit 17 */
	put32(0x034, 1);       /* ECDSA P-384 SHA-384 */
	memset(buf + 0x050, 0xAA, 64);
	memset(buf + 0x090, 0xBB, 48);
	memset(buf + 0x1A0, 0xCC, 64);
	memset(buf + 0x2A0, 0x11, 48);
	memset(buf + 0x2E8, 0x22, 48);
	if (version >= 3) {
		buf[0x188] = 0x19;
		buf[0x189] = 0x01;
		buf[0x18A] = 0x01;
	}
	if (version >= 5) {
		put64(0x1F8, 0x5);
		put64(0x200, 0x7);
	}
}

static void test_valid_versions(void **s)
{
	for (uint32_t v = 2; v <= 5; v++) {
		make(v);
		assert_int_equal(snp_report_parse(buf, sizeof(buf), &rep), SNP_REPORT_OK);
		assert_int_equal(rep.raw.version, v);
		assert_memory_equal(rep.raw.measurement, buf + 0x90, 48);
		assert_int_equal(rep.product, v >= 3 ? SNP_PRODUCT_MILAN : SNP_PRODUCT_UNKNOWN);
	}
}

static void test_sizes(void **s)
{
	make(3);
	assert_int_equal(snp_report_parse(buf, 0, &rep), SNP_REPORT_ERR_SIZE);
	assert_int_equal(snp_report_parse(buf, SNP_REPORT_SIZE - 1, &rep), SNP_REPORT_ERR_SIZE);
	assert_int_equal(snp_report_parse(buf, SNP_REPORT_SIZE + 1, &rep), SNP_REPORT_ERR_SIZE);
	assert_int_equal(snp_report_parse(buf, (size_t)-1, &rep), SNP_REPORT_ERR_SIZE);
	assert_int_equal(snp_report_parse(NULL, SNP_REPORT_SIZE, &rep), SNP_REPORT_ERR_INVAL);
	assert_int_equal(snp_report_parse(buf, SNP_REPORT_SIZE, NULL), SNP_REPORT_ERR_INVAL);
	assert_int_equal(snp_report_check(NULL), SNP_REPORT_ERR_INVAL);
}

static void test_version(void **s)
{
	uint32_t bad[] = {0, 1, 6, 0x100, 0xFFFFFFFF};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		make(3);
		put32(0, bad[i]);
		assert_int_equal(snp_report_parse(buf, sizeof(buf), &rep), SNP_REPORT_ERR_VERSION);
	}
}

static void test_sig_algo(void **s)
{
	uint32_t bad[] = {0, 2, 0x101};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		make(2);
		put32(0x34, bad[i]);
		assert_int_equal(snp_report_parse(buf, sizeof(buf), &rep), SNP_REPORT_ERR_SIG_ALGO);
	}
}

static void test_policy(void **s)
{
	make(3);
	put64(0x8, 0x10000); /* bit 17 clear */
	assert_int_equal(snp_report_parse(buf, sizeof(buf), &rep), SNP_REPORT_ERR_POLICY);
	for (int bit = 26; bit < 64; bit++) {
		make(3);
		put64(0x8, 0x30000 | (1ull << bit));
		assert_int_equal(snp_report_parse(buf, sizeof(buf), &rep), SNP_REPORT_ERR_POLICY);
	}
	make(3);
	put64(0x8, 0x20000 | SNP_POLICY_DEBUG | SNP_POLICY_PAGE_SWAP_DISABLE | 0x0201);
	assert_int_equal(snp_report_parse(buf, sizeof(buf), &rep), SNP_REPORT_OK);
	assert_true(rep.policy.debug);
	assert_true(rep.policy.page_swap_disable);
	assert_false(rep.policy.smt);
	assert_int_equal(rep.policy.abi_major, 2);
	assert_int_equal(rep.policy.abi_minor, 1);
}

static void test_signer_info(void **s)
{
	make(3);
	put32(0x48, 1u << 5); /* MBZ */
	assert_int_equal(snp_report_parse(buf, sizeof(buf), &rep), SNP_REPORT_ERR_SIGNER);
	for (uint32_t k = 2; k <= 6; k++) { /* reserved SIGNING_KEY values */
		make(3);
		put32(0x48, k << 2);
		assert_int_equal(snp_report_parse(buf, sizeof(buf), &rep), SNP_REPORT_ERR_SIGNER);
	}
	make(3);
	put32(0x48, (1u << 2) | 3); /* VLEK, AUTHOR_KEY_EN, MASK_CHIP_KEY */
	assert_int_equal(snp_report_parse(buf, sizeof(buf), &rep), SNP_REPORT_OK);
	assert_int_equal(rep.signer.signing_key, SNP_SIGNING_KEY_VLEK);
	assert_true(rep.signer.author_key_en);
	assert_true(rep.signer.mask_chip_key);
	make(3);
	put32(0x48, 7u << 2);
	assert_int_equal(snp_report_parse(buf, sizeof(buf), &rep), SNP_REPORT_OK);
	assert_int_equal(rep.signer.signing_key, SNP_SIGNING_KEY_NONE);
}

static void test_vmpl(void **s)
{
	make(3);
	put32(0x30, 3);
	assert_int_equal(snp_report_parse(buf, sizeof(buf), &rep), SNP_REPORT_OK);
	put32(0x30, 4);
	assert_int_equal(snp_report_parse(buf, sizeof(buf), &rep), SNP_REPORT_ERR_VMPL);
}

/* Every reserved byte, in every version, is refused; fields are not. */
static bool reserved_in(uint32_t v, size_t off)
{
	if (off >= 0x04C && off < 0x050)
		return true;
	if (off >= (v >= 3 ? 0x18B : 0x188) && off < 0x1A0)
		return true;
	if (off == 0x1EB || off == 0x1EF)
		return true;
	if (off >= (v >= 5 ? 0x208u : 0x1F8u) && off < 0x2A0)
		return true;
	if (off >= 0x330 && off < 0x4A0)
		return true;
	return false;
}

static void test_reserved_every_byte(void **s)
{
	for (uint32_t v = 2; v <= 5; v++) {
		for (size_t off = 0; off < SNP_REPORT_SIZE; off++) {
			if (!reserved_in(v, off))
				continue;
			make(v);
			buf[off] = 0x80;
			assert_int_equal(snp_report_parse(buf, sizeof(buf), &rep),
					 SNP_REPORT_ERR_RESERVED);
			assert_int_equal(snp_report_first_reserved_nonzero(&rep), (long)off);
		}
	}
	/* Version-dependent fields are accepted where they exist. */
	make(3);
	buf[0x188] = 0x1A;
	assert_int_equal(snp_report_parse(buf, sizeof(buf), &rep), SNP_REPORT_OK);
	make(5);
	assert_int_equal(snp_report_parse(buf, sizeof(buf), &rep), SNP_REPORT_OK);
	make(4);
	put64(0x1F8, 1); /* mitigation vectors only from version 5 */
	assert_int_equal(snp_report_parse(buf, sizeof(buf), &rep), SNP_REPORT_ERR_RESERVED);
	make(2);
	buf[0x188] = 0x19; /* CPUID bytes are reserved in version 2 */
	assert_int_equal(snp_report_parse(buf, sizeof(buf), &rep), SNP_REPORT_ERR_RESERVED);
}

static void test_signature_width(void **s)
{
	make(3);
	buf[0x2A0 + 48] = 1;
	assert_int_equal(snp_report_parse(buf, sizeof(buf), &rep), SNP_REPORT_ERR_SIGNATURE);
	make(3);
	buf[0x2E8 + 71] = 1;
	assert_int_equal(snp_report_parse(buf, sizeof(buf), &rep), SNP_REPORT_ERR_SIGNATURE);
}

static void test_decode_keeps_bad_report(void **s)
{
	make(3);
	buf[0x300] = 0;
	buf[0x4C] = 1;
	assert_int_equal(snp_report_decode(buf, sizeof(buf), &rep), SNP_REPORT_OK);
	assert_int_equal(snp_report_check(&rep), SNP_REPORT_ERR_RESERVED);
	assert_int_equal(rep.raw.version, 3);
}

static void test_tcb(void **s)
{
	struct snp_tcb t;
	/* milan-v2 fixture REPORTED_TCB bytes 03 00 00 00 00 00 08 73 */
	snp_tcb_decode(0x7308000000000003ull, SNP_PRODUCT_MILAN, &t);
	assert_int_equal(t.bl, 3);
	assert_int_equal(t.tee, 0);
	assert_int_equal(t.snp, 8);
	assert_int_equal(t.ucode, 0x73);
	assert_false(t.has_fmc);
	snp_tcb_decode(0x5419000000000000ull | 0x0a, SNP_PRODUCT_GENOA, &t);
	assert_int_equal(t.bl, 10);
	assert_int_equal(t.snp, 0x19);
	assert_int_equal(t.ucode, 0x54);
	/* turin-v5 fixture bytes 00 01 00 02 00 00 00 47: FMC BL TEE SNP ... UCODE */
	snp_tcb_decode(0x4700000002000100ull, SNP_PRODUCT_TURIN, &t);
	assert_true(t.has_fmc);
	assert_int_equal(t.fmc, 0);
	assert_int_equal(t.bl, 1);
	assert_int_equal(t.tee, 0);
	assert_int_equal(t.snp, 2);
	assert_int_equal(t.ucode, 0x47);
	snp_tcb_decode(0x8800000033221144ull, SNP_PRODUCT_TURIN, &t);
	assert_int_equal(t.fmc, 0x44);
	assert_int_equal(t.bl, 0x11);
	assert_int_equal(t.tee, 0x22);
	assert_int_equal(t.snp, 0x33);
	assert_int_equal(t.ucode, 0x88);
	/* Unknown product: the Milan/Genoa layout. */
	snp_tcb_decode(0x8877000000002211ull, SNP_PRODUCT_UNKNOWN, &t);
	assert_int_equal(t.bl, 0x11);
	assert_int_equal(t.tee, 0x22);
	assert_int_equal(t.snp, 0x77);
	assert_int_equal(t.ucode, 0x88);
}

static void test_tcb_at_least(void **s)
{
	struct snp_tcb a = {.bl = 3, .tee = 0, .snp = 8, .ucode = 115};
	struct snp_tcb m = a;
	assert_true(snp_tcb_at_least(&a, &m));
	m.snp = 9;
	assert_false(snp_tcb_at_least(&a, &m));
	m = a;
	m.ucode = 116;
	assert_false(snp_tcb_at_least(&a, &m));
	m = a;
	m.bl = 2;
	assert_true(snp_tcb_at_least(&a, &m));
	struct snp_tcb ta = {.bl = 1, .snp = 2, .ucode = 0x47, .fmc = 0, .has_fmc = true};
	struct snp_tcb tm = {.fmc = 1, .has_fmc = true};
	assert_false(snp_tcb_at_least(&ta, &tm));
	tm.fmc = 0;
	assert_true(snp_tcb_at_least(&ta, &tm));
}

static void test_product(void **s)
{
	assert_int_equal(snp_report_product_from_cpuid(0x19, 0x01), SNP_PRODUCT_MILAN);
	assert_int_equal(snp_report_product_from_cpuid(0x19, 0x11), SNP_PRODUCT_GENOA);
	assert_int_equal(snp_report_product_from_cpuid(0x19, 0xA0), SNP_PRODUCT_GENOA); /* Siena */
	assert_int_equal(snp_report_product_from_cpuid(0x1A, 0x02), SNP_PRODUCT_TURIN);
	assert_int_equal(snp_report_product_from_cpuid(0x19, 0x50), SNP_PRODUCT_UNKNOWN);
	assert_int_equal(snp_report_product_from_cpuid(0x17, 0x31), SNP_PRODUCT_UNKNOWN);
	assert_int_equal(snp_report_product_from_cpuid(0, 0), SNP_PRODUCT_UNKNOWN);
	make(3);
	buf[0x188] = 0x1A;
	buf[0x189] = 0x02;
	assert_int_equal(snp_report_parse(buf, sizeof(buf), &rep), SNP_REPORT_OK);
	assert_int_equal(rep.product, SNP_PRODUCT_TURIN);
	assert_string_equal(snp_product_name(SNP_PRODUCT_TURIN), "Turin");
	assert_string_equal(snp_product_name(SNP_PRODUCT_UNKNOWN), "unknown");
}

static void test_strerror(void **s)
{
	for (int e = 0; e >= -9; e--)
		assert_string_not_equal(snp_report_strerror(e), "unknown error");
	assert_string_equal(snp_report_strerror(-100), "unknown error");
}

static void test_der_spl(void **s)
{
	uint8_t v = 0xEE;
	const uint8_t ok1[] = {0x02, 0x01, 0x00}, ok2[] = {0x02, 0x01, 0x7F},
		      ok3[] = {0x02, 0x02, 0x00, 0x80}, ok4[] = {0x02, 0x02, 0x00, 0xFF};
	assert_true(snp_der_spl(ok1, 3, &v));
	assert_int_equal(v, 0);
	assert_true(snp_der_spl(ok2, 3, &v));
	assert_int_equal(v, 0x7F);
	assert_true(snp_der_spl(ok3, 4, &v));
	assert_int_equal(v, 0x80);
	assert_true(snp_der_spl(ok4, 4, &v));
	assert_int_equal(v, 0xFF);
	const uint8_t neg[] = {0x02, 0x01, 0x80}, /* negative */
	    nonmin[] = {0x02, 0x02, 0x00, 0x05},  /* not minimal */
	    big[] = {0x02, 0x02, 0x01, 0x00},	  /* 256 */
	    tag[] = {0x04, 0x01, 0x05},		  /* OCTET STRING */
	    trail[] = {0x02, 0x01, 0x05, 0x00},	  /* trailing byte */
	    len0[] = {0x02, 0x00};
	assert_false(snp_der_spl(neg, 3, &v));
	assert_false(snp_der_spl(nonmin, 4, &v));
	assert_false(snp_der_spl(big, 4, &v));
	assert_false(snp_der_spl(tag, 3, &v));
	assert_false(snp_der_spl(trail, 4, &v));
	assert_false(snp_der_spl(len0, 2, &v));
	assert_false(snp_der_spl(ok1, 2, &v));
	assert_false(snp_der_spl(ok1, 0, &v));
}

static void test_pinned(void **s)
{
	uint8_t fp[SNP_FP_LEN] = {0};
	assert_int_equal(snp_pinned_ark_product(fp), SNP_PRODUCT_UNKNOWN);
	for (int p = SNP_PRODUCT_MILAN; p <= SNP_PRODUCT_TURIN; p++)
		assert_int_equal(snp_pinned_ark_product(snp_pinned_ark_fp((enum snp_product)p)), p);
	assert_null(snp_pinned_ark_fp(SNP_PRODUCT_UNKNOWN));
	/* Milan ARK fingerprint begins 69d063b4 (fixtures README). */
	const uint8_t *m = snp_pinned_ark_fp(SNP_PRODUCT_MILAN);
	assert_int_equal(m[0], 0x69);
	assert_int_equal(m[31], 0xcd);
}

/*
 * The named policy checks of snp_verify_run() (GUEST_POLICY, AMD SEV-SNP ABI
 * 56860; interfaces §7). No chain: signature and chain fail, the policy
 * checks are independent of them.
 */
static const struct snp_check *last_check; /* the check policy_state() found */

static enum snp_check_state policy_state(uint64_t policy, const struct snp_verify_opts *o,
					 const char *name, struct snp_verify_result *res)
{
	struct snp_chain ch;

	make(3);
	put64(0x8, policy);
	assert_int_equal(snp_report_decode(buf, sizeof(buf), &rep), SNP_REPORT_OK);
	snp_chain_init(&ch);
	snp_verify_run(&rep, snp_report_check(&rep), &ch, o, res);
	snp_chain_free(&ch);
	assert_true(res->n <= SNP_MAX_CHECKS);
	for (size_t i = 0; i < res->n; i++)
		if (!strcmp(res->checks[i].name, name)) {
			last_check = &res->checks[i];
			return res->checks[i].state;
		}
	fail_msg("check %s absent", name);
	return SNP_CHECK_FAIL;
}

static void test_policy_checks(void **s)
{
	struct snp_verify_opts o, allow;
	struct snp_verify_result res;

	memset(&o, 0, sizeof(o));
	allow = o;
	allow.allow_debug = true;
	allow.allow_migrate_ma = true;

	/* 0x30000 (SMT | bit 17): every policy check passes. */
	assert_int_equal(policy_state(0x30000, &o, "policy.migrate_ma", &res), SNP_CHECK_PASS);
	assert_int_equal(policy_state(0x30000, &o, "policy.debug", &res), SNP_CHECK_PASS);
	assert_int_equal(policy_state(0x30000, &o, "policy.reserved", &res), SNP_CHECK_PASS);
	assert_int_equal(policy_state(0x30000, &o, "policy.mbz", &res), SNP_CHECK_PASS);
	/* Every other defined bit (16, 20..25) is accepted. */
	assert_int_equal(policy_state(0x3F30000, &o, "policy.mbz", &res), SNP_CHECK_PASS);
	assert_int_equal(policy_state(0x3F30000, &o, "policy.migrate_ma", &res), SNP_CHECK_PASS);
	assert_int_equal(policy_state(0x3F30000, &o, "policy.debug", &res), SNP_CHECK_PASS);

	/* MIGRATE_MA (bit 18): refused unless allow_migrate_ma; allow_debug is not enough. */
	uint64_t ma = 0x30000 | SNP_POLICY_MIGRATE_MA;
	assert_int_equal(policy_state(ma, &o, "policy.migrate_ma", &res), SNP_CHECK_FAIL);
	assert_false(res.verified);
	o.allow_debug = true;
	assert_int_equal(policy_state(ma, &o, "policy.migrate_ma", &res), SNP_CHECK_FAIL);
	o.allow_debug = false;
	assert_int_equal(policy_state(ma, &allow, "policy.migrate_ma", &res), SNP_CHECK_PASS);

	/* DEBUG (bit 19): refused unless allow_debug; allow_migrate_ma is not enough. */
	uint64_t dbg = 0x30000 | SNP_POLICY_DEBUG;
	assert_int_equal(policy_state(dbg, &o, "policy.debug", &res), SNP_CHECK_FAIL);
	o.allow_migrate_ma = true;
	assert_int_equal(policy_state(dbg, &o, "policy.debug", &res), SNP_CHECK_FAIL);
	o.allow_migrate_ma = false;
	assert_int_equal(policy_state(dbg, &allow, "policy.debug", &res), SNP_CHECK_PASS);

	/* Bit 17 clear: policy.reserved (and parse) fail, whatever is allowed. */
	assert_int_equal(policy_state(0x10000, &allow, "policy.reserved", &res), SNP_CHECK_FAIL);
	assert_int_equal(policy_state(0x10000, &allow, "parse", &res), SNP_CHECK_FAIL);
	assert_int_equal(policy_state(0x10000, &allow, "policy.mbz", &res), SNP_CHECK_PASS);

	/* Any of bits 63:26: policy.mbz (and parse) fail. */
	for (int bit = 26; bit < 64; bit++) {
		uint64_t p = 0x30000 | (1ull << bit);
		assert_int_equal(policy_state(p, &allow, "policy.mbz", &res), SNP_CHECK_FAIL);
		assert_non_null(strstr(last_check->detail, "63:26"));
		assert_int_equal(policy_state(p, &allow, "parse", &res), SNP_CHECK_FAIL);
		assert_int_equal(policy_state(p, &allow, "policy.reserved", &res), SNP_CHECK_PASS);
	}

	/* What was bound: nothing beyond signature/chain without expectations. */
	policy_state(0x30000, &o, "parse", &res);
	assert_false(res.measurement_checked);
	assert_false(res.report_data_checked);
	o.have_measurement = true;
	memset(o.measurement, 0xBB, 48);
	assert_int_equal(policy_state(0x30000, &o, "measurement", &res), SNP_CHECK_PASS);
	assert_true(res.measurement_checked);
	assert_false(res.report_data_checked);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_valid_versions),
	    cmocka_unit_test(test_sizes),
	    cmocka_unit_test(test_version),
	    cmocka_unit_test(test_sig_algo),
	    cmocka_unit_test(test_policy),
	    cmocka_unit_test(test_signer_info),
	    cmocka_unit_test(test_vmpl),
	    cmocka_unit_test(test_reserved_every_byte),
	    cmocka_unit_test(test_signature_width),
	    cmocka_unit_test(test_decode_keeps_bad_report),
	    cmocka_unit_test(test_tcb),
	    cmocka_unit_test(test_tcb_at_least),
	    cmocka_unit_test(test_product),
	    cmocka_unit_test(test_strerror),
	    cmocka_unit_test(test_der_spl),
	    cmocka_unit_test(test_pinned),
	    cmocka_unit_test(test_policy_checks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
