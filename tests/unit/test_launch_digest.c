/*
 * Launch digest (attest/launch_digest.c): the two published
 * sev-snp-measure vectors (tests/test_guest.py), byte layout of the VMSA,
 * PAGE_INFO and kernel-hashes page, the seed mode, the snp:svsm chain
 * rebuilt from the primitives, and the error paths.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tests/fake/files.h"
#include <attest/launch_digest.h>

#define SIG_EPYC_V4 0x00800F12u

static uint8_t *load(const char *path, size_t *len)
{
	return host_load_file(path, len);
}

static uint8_t *load_fixture(const char *name, size_t *len)
{
	char rel[256];
	snprintf(rel, sizeof(rel), "measure/%s", name);
	return host_load_fixture(rel, len);
}

static void hex(const uint8_t *d, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", d[i]);
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static void vector(const char *fixture, uint64_t features, const char *expect)
{
	static struct ovmf_info info;
	uint8_t out[LD_SHA384_LEN];
	char got[2 * LD_SHA384_LEN + 1];
	size_t len;
	uint8_t *img = load_fixture(fixture, &len);
	struct ld_snp_launch p;

	if (!img)
		skip();
	assert_int_equal(ovmf_info_parse(img, len, &info), OVMF_META_OK);
	p = (struct ld_snp_launch){.ovmf = img,
				   .ovmf_len = len,
				   .info = &info,
				   .vcpus = 1,
				   .vcpu_sig = SIG_EPYC_V4,
				   .guest_features = features};
	assert_int_equal(launch_digest_snp(&ld_hash_mbedtls, &p, out), LD_OK);
	hex(out, sizeof(out), got);
	assert_string_equal(got, expect);
	free(img);
}

/* sev-snp-measure tests/test_guest.py, via fixtures/snp/README.md. */
static void test_vector_amdsev(void **state)
{
	vector("ovmf-amdsev-last4k.bin", 0x21,
	       "e1e1ca029dd7973ab9513295be68198472dcd4fc834bd9af9b63f6e8a1674dbf281a9278a4a2ebe0eed"
	       "9f22adbcd0e2b");
}

static void test_vector_ovmfx64(void **state)
{
	vector("ovmf-ovmfx64-last4k.bin", 0x21,
	       "28797ae0afaba4005a81e629acebfb59e6687949d6be44007cd5506823b0dd66f146aaae26ff291eed7"
	       "b493d8a64c385");
}

static void test_sha384_kat(void **state)
{
	/* FIPS 180-2 SHA-384("abc"). */
	static const char *abc = "cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed8"
				 "086072ba1e7cc2358baeca134c825a7";
	uint8_t out[LD_SHA384_LEN];
	char got[2 * LD_SHA384_LEN + 1];

	ld_hash_mbedtls.sha384("abc", 3, out);
	hex(out, sizeof(out), got);
	assert_string_equal(got, abc);
}

static void test_page_info_layout(void **state)
{
	struct launch_digest ld;
	uint8_t contents[LD_SHA384_LEN], pi[LD_PAGE_INFO_LEN], expect[LD_SHA384_LEN];

	for (int i = 0; i < LD_SHA384_LEN; i++)
		contents[i] = (uint8_t)i;
	launch_digest_init(&ld, &ld_hash_mbedtls, NULL);
	launch_digest_update(&ld, LD_PAGE_SECRETS, 0x1122334455667000ULL, contents);
	/* gctx.py _update, written out by hand. */
	memset(pi, 0, sizeof(pi));
	memcpy(pi + 0x30, contents, 48);
	pi[0x60] = 0x70;
	pi[0x62] = LD_PAGE_SECRETS;
	for (int i = 0; i < 8; i++)
		pi[0x68 + i] = (uint8_t)(0x1122334455667000ULL >> (8 * i));
	ld_hash_mbedtls.sha384(pi, sizeof(pi), expect);
	assert_memory_equal(ld.ld, expect, 48);
}

static void test_vmsa_bsp_layout(void **state)
{
	static uint8_t page[PAGE_SIZE];
	size_t nonzero = 0;

	launch_digest_build_vmsa(page, LD_BSP_EIP, 0x21, SIG_EPYC_V4);
	/* CS: sel 0xF000, attr 0x9B, limit 0xFFFF, base 0xFFFF0000. */
	assert_int_equal(page[0x10] | page[0x11] << 8, 0xF000);
	assert_int_equal(page[0x12] | page[0x13] << 8, 0x9B);
	assert_int_equal(rd64(page + 0x18), 0xFFFF0000ULL);
	assert_int_equal(page[0x02] | page[0x03] << 8, 0x93); /* ES */
	assert_int_equal(page[0x72] | page[0x73] << 8, 0x82); /* LDTR */
	assert_int_equal(page[0x92] | page[0x93] << 8, 0x8B); /* TR */
	assert_int_equal(rd64(page + 0xD0), 0x1000);	      /* EFER */
	assert_int_equal(rd64(page + 0x148), 0x40);	      /* CR4 */
	assert_int_equal(rd64(page + 0x158), 0x10);	      /* CR0 */
	assert_int_equal(rd64(page + 0x160), 0x400);	      /* DR7 */
	assert_int_equal(rd64(page + 0x168), 0xFFFF0FF0ULL);  /* DR6 */
	assert_int_equal(rd64(page + 0x170), 0x2);	      /* RFLAGS */
	assert_int_equal(rd64(page + 0x178), 0xFFF0);	      /* RIP */
	assert_int_equal(rd64(page + 0x268), 0x0007040600070406ULL);
	assert_int_equal(rd64(page + 0x310), SIG_EPYC_V4);	  /* RDX */
	assert_int_equal(rd64(page + 0x3B0), 0x21);		  /* SEV_FEATURES */
	assert_int_equal(rd64(page + 0x3E8), 1);		  /* XCR0 */
	assert_int_equal(page[0x408] | page[0x409] << 8, 0x1F80); /* MXCSR */
	assert_int_equal(page[0x410] | page[0x411] << 8, 0x37F);  /* FCW */
	for (size_t i = 0x420; i < PAGE_SIZE; i++)
		nonzero += page[i] != 0;
	assert_int_equal(nonzero, 0);
}

static void test_vmsa_ap(void **state)
{
	static uint8_t page[PAGE_SIZE];

	launch_digest_build_vmsa(page, 0x80B004, 1, SIG_EPYC_V4);
	assert_int_equal(rd64(page + 0x18), 0x800000);
	assert_int_equal(rd64(page + 0x178), 0xB004);
	launch_digest_build_vmsa_svsm(page, 0xFFC01234, 1, SIG_EPYC_V4);
	assert_int_equal(page[0x10], 8);
	assert_int_equal(page[0x12] | page[0x13] << 8, 0xC9B);
	assert_int_equal(rd64(page + 0x178), 0xFFC01234);
	assert_int_equal(rd64(page + 0x158), 0x11);
	assert_int_equal(page[0x410] | page[0x411] << 8, 0); /* §8 quirk: FCW 0 */
}

static void test_hashes_page(void **state)
{
	static uint8_t page[PAGE_SIZE];
	uint8_t k[32], i[32], c[32];

	memset(k, 0x11, 32);
	memset(i, 0x22, 32);
	memset(c, 0x33, 32);
	assert_int_equal(launch_digest_hashes_page(page, 0xC00, k, i, c), LD_OK);
	/* Header GUID 9438d606-... in EFI order, then u16 168. */
	assert_int_equal(page[0xC00], 0x06);
	assert_int_equal(page[0xC03], 0x94);
	assert_int_equal(page[0xC10] | page[0xC11] << 8, 168);
	/* cmdline entry first: GUID 97d02dd8, length 50, hash. */
	assert_int_equal(page[0xC12], 0xd8);
	assert_int_equal(page[0xC22] | page[0xC23] << 8, 50);
	assert_int_equal(page[0xC24], 0x33);
	assert_int_equal(page[0xC12 + 50], 0x31); /* initrd GUID 44baf731 */
	assert_int_equal(page[0xC12 + 50 + 18], 0x22);
	assert_int_equal(page[0xC12 + 100], 0x37); /* kernel GUID 4de79437 */
	assert_int_equal(page[0xC12 + 100 + 18], 0x11);
	assert_int_equal(page[0xC12 + 150 - 1], 0x11);
	assert_int_equal(page[0xBFF], 0);
	assert_int_equal(page[0xC00 + 168], 0);
	/* Does not fit the page. */
	assert_int_equal(launch_digest_hashes_page(page, PAGE_SIZE - 175, k, i, c), LD_ERR_RANGE);
	assert_int_equal(launch_digest_hashes_page(page, PAGE_SIZE - 176, k, i, c), LD_OK);
}

static void test_seed_mode(void **state)
{
	static struct ovmf_info info;
	uint8_t seed[48], a[48], b[48];
	size_t len;
	uint8_t *img = load_fixture("ovmf-amdsev-last4k.bin", &len);
	struct ld_snp_launch p;

	if (!img)
		skip();
	assert_int_equal(ovmf_info_parse(img, len, &info), OVMF_META_OK);
	assert_int_equal(launch_digest_ovmf_hash(&ld_hash_mbedtls, img, len, seed), LD_OK);
	p = (struct ld_snp_launch){.ovmf = img,
				   .ovmf_len = len,
				   .info = &info,
				   .vcpus = 4,
				   .vcpu_sig = SIG_EPYC_V4,
				   .guest_features = 1};
	assert_int_equal(launch_digest_snp(&ld_hash_mbedtls, &p, a), LD_OK);
	p.seed = seed;
	p.ovmf = NULL; /* the seed replaces the OVMF pages */
	assert_int_equal(launch_digest_snp(&ld_hash_mbedtls, &p, b), LD_OK);
	assert_memory_equal(a, b, 48);
	free(img);
}

static void test_kernel_hashes(void **state)
{
	static struct ovmf_info info;
	static uint8_t page[PAGE_SIZE];
	uint8_t k[32] = {1}, a[48], b[48];
	size_t len;
	uint8_t *img = load_fixture("ovmf-amdsev-last4k.bin", &len);
	struct ld_snp_launch p;

	if (!img)
		skip();
	assert_int_equal(ovmf_info_parse(img, len, &info), OVMF_META_OK);
	assert_true(info.has_hash_table);
	assert_int_equal(launch_digest_hashes_page(page, info.hash_table_gpa & 0xFFF, k, k, k),
			 LD_OK);
	p = (struct ld_snp_launch){.ovmf = img,
				   .ovmf_len = len,
				   .info = &info,
				   .vcpus = 1,
				   .vcpu_sig = SIG_EPYC_V4,
				   .guest_features = 1};
	assert_int_equal(launch_digest_snp(&ld_hash_mbedtls, &p, a), LD_OK);
	p.hashes_page = page;
	assert_int_equal(launch_digest_snp(&ld_hash_mbedtls, &p, b), LD_OK);
	assert_memory_not_equal(a, b, 48);
	free(img);

	/* OvmfPkgX64 has no SNP_KERNEL_HASHES section: asking for a kernel fails. */
	img = load_fixture("ovmf-ovmfx64-last4k.bin", &len);
	if (!img)
		skip();
	assert_int_equal(ovmf_info_parse(img, len, &info), OVMF_META_OK);
	p = (struct ld_snp_launch){.ovmf = img,
				   .ovmf_len = len,
				   .info = &info,
				   .vcpus = 1,
				   .vcpu_sig = SIG_EPYC_V4,
				   .guest_features = 1,
				   .hashes_page = page};
	assert_int_equal(launch_digest_snp(&ld_hash_mbedtls, &p, a), LD_ERR_NO_HASHES);
	free(img);
}

static void test_debian_ovmf_stable(void **state)
{
	static struct ovmf_info info;
	uint8_t a[48], b[48];
	size_t len;
	uint8_t *img = load("/usr/share/ovmf/OVMF.fd", &len);
	struct ld_snp_launch p;

	if (!img) {
		print_message("/usr/share/ovmf/OVMF.fd not found: skipping\n");
		skip();
	}
	assert_int_equal(ovmf_info_parse(img, len, &info), OVMF_META_OK);
	p = (struct ld_snp_launch){.ovmf = img,
				   .ovmf_len = len,
				   .info = &info,
				   .vcpus = 2,
				   .vcpu_sig = SIG_EPYC_V4,
				   .guest_features = 1};
	assert_int_equal(launch_digest_snp(&ld_hash_mbedtls, &p, a), LD_OK);
	assert_int_equal(launch_digest_snp(&ld_hash_mbedtls, &p, b), LD_OK);
	assert_memory_equal(a, b, 48);
	p.vcpus = 1;
	assert_int_equal(launch_digest_snp(&ld_hash_mbedtls, &p, b), LD_OK);
	assert_memory_not_equal(a, b, 48);
	free(img);
}

static void test_errors(void **state)
{
	static struct ovmf_info info;
	static uint8_t img[PAGE_SIZE];
	struct launch_digest ld;
	uint8_t out[48];
	struct ld_snp_launch p = {.ovmf = img, .ovmf_len = sizeof(img), .info = &info, .vcpus = 1};

	memset(&info, 0, sizeof(info));
	/* No reset block. */
	assert_int_equal(launch_digest_snp(&ld_hash_mbedtls, &p, out), LD_ERR_NO_RESET);
	info.has_reset_eip = true;
	assert_int_equal(launch_digest_snp(&ld_hash_mbedtls, &p, out), LD_OK);
	p.vcpus = 0;
	assert_int_equal(launch_digest_snp(&ld_hash_mbedtls, &p, out), LD_ERR_INVAL);
	p.vcpus = 1;
	p.ovmf_len = 100;
	assert_int_equal(launch_digest_snp(&ld_hash_mbedtls, &p, out), LD_ERR_ALIGN);
	p.ovmf_len = sizeof(img);
	/* Metadata items: unaligned, unknown type, overflowing. */
	info.has_sev_meta = true;
	info.meta.n_items = 1;
	info.meta.items[0] = (struct ovmf_sev_meta_item){0x800000, 0x1001, 1};
	assert_int_equal(launch_digest_snp(&ld_hash_mbedtls, &p, out), LD_ERR_ALIGN);
	info.meta.items[0] = (struct ovmf_sev_meta_item){0x800800, 0x1000, 2};
	assert_int_equal(launch_digest_snp(&ld_hash_mbedtls, &p, out), LD_ERR_ALIGN);
	info.meta.items[0] = (struct ovmf_sev_meta_item){0x800000, 0x1000, 7};
	assert_int_equal(launch_digest_snp(&ld_hash_mbedtls, &p, out), LD_ERR_SECTION);
	info.meta.items[0] = (struct ovmf_sev_meta_item){0x800000, 0x1000, 1};
	assert_int_equal(launch_digest_snp(&ld_hash_mbedtls, &p, out), LD_OK);
	launch_digest_init(&ld, &ld_hash_mbedtls, NULL);
	assert_int_equal(launch_digest_zero_pages(&ld, 0xFFFFFFFFFFFFF000ULL, 0x2000),
			 LD_ERR_RANGE);
	assert_int_equal(launch_digest_normal_pages(&ld, 0x1000, img, 10), LD_ERR_ALIGN);
}

static void test_svsm_chain(void **state)
{
	static struct ovmf_info info;
	static uint8_t ovmf[2 * PAGE_SIZE], svsm[3 * PAGE_SIZE], vmsa[PAGE_SIZE];
	struct launch_digest ld;
	uint8_t out[48];
	struct ld_svsm_launch p = {.ovmf = ovmf,
				   .ovmf_len = sizeof(ovmf),
				   .svsm = svsm,
				   .svsm_len = sizeof(svsm),
				   .svsm_info = &info,
				   .vars_size = 0x10000,
				   .vcpus = 2,
				   .vcpu_sig = SIG_EPYC_V4,
				   .guest_features = 1};
	uint64_t svsm_gpa = LD_FOUR_GB - sizeof(ovmf) - 0x10000 - sizeof(svsm);

	memset(ovmf, 0x5A, sizeof(ovmf));
	memset(svsm, 0xA5, sizeof(svsm));
	memset(&info, 0, sizeof(info));
	assert_int_equal(launch_digest_svsm(&ld_hash_mbedtls, &p, out), LD_ERR_NO_SVSM_INFO);
	info.has_svsm_info = true;
	info.svsm_entry_off = 0x1234;
	info.has_sev_meta = true;
	info.meta.n_items = 2;
	info.meta.items[0] =
	    (struct ovmf_sev_meta_item){0x900000, 0x2000, OVMF_SECTION_SNP_SEC_MEM};
	info.meta.items[1] = (struct ovmf_sev_meta_item){0x902000, 0x1000, OVMF_SECTION_SVSM_CAA};
	assert_int_equal(launch_digest_svsm(&ld_hash_mbedtls, &p, out), LD_OK);

	launch_digest_init(&ld, &ld_hash_mbedtls, NULL);
	assert_int_equal(
	    launch_digest_normal_pages(&ld, LD_FOUR_GB - sizeof(ovmf), ovmf, sizeof(ovmf)), LD_OK);
	assert_int_equal(launch_digest_normal_pages(&ld, svsm_gpa, svsm, sizeof(svsm)), LD_OK);
	assert_int_equal(launch_digest_zero_pages(&ld, 0x900000, 0x2000), LD_OK);
	assert_int_equal(launch_digest_zero_pages(&ld, 0x902000, 0x1000), LD_OK);
	launch_digest_build_vmsa_svsm(vmsa, svsm_gpa + 0x1234, 1, SIG_EPYC_V4);
	launch_digest_vmsa_page(&ld, vmsa);
	launch_digest_vmsa_page(&ld, vmsa);
	assert_memory_equal(out, ld.ld, 48);

	p.vars_size = LD_FOUR_GB;
	assert_int_equal(launch_digest_svsm(&ld_hash_mbedtls, &p, out), LD_ERR_RANGE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_vector_amdsev),   cmocka_unit_test(test_vector_ovmfx64),
	    cmocka_unit_test(test_sha384_kat),	    cmocka_unit_test(test_page_info_layout),
	    cmocka_unit_test(test_vmsa_bsp_layout), cmocka_unit_test(test_vmsa_ap),
	    cmocka_unit_test(test_hashes_page),	    cmocka_unit_test(test_seed_mode),
	    cmocka_unit_test(test_kernel_hashes),   cmocka_unit_test(test_debian_ovmf_stable),
	    cmocka_unit_test(test_errors),	    cmocka_unit_test(test_svsm_chain),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
