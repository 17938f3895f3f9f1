/*
 * IGVM parser, iterator and SNP launch digest (attest/igvm.c), the writer
 * (attest/igvm_build.c) and csvsm's image layout (attest/igvm_csvsm.c):
 * hand-made files in memory that use every header type the parser takes,
 * one malformed file per rule (each must give its own error), every byte of
 * a valid file with one bit flipped (refused or measured differently), QEMU's
 * issue order, and the digest of a small file against two values derived
 * without igvm_snp_digest(): a constant from tests/tools/igvm_ref.py (an
 * independent Python model) and the PAGE_INFO chain written out by hand.
 *
 * CSVSM_IGVM_DUMP=DIR writes the small file to DIR/small.igvm, so the
 * constant can be recomputed: python3 tests/tools/igvm_ref.py measure FILE.
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
#include <attest/igvm.h>
#include <attest/igvm_build.h>
#include <attest/igvm_csvsm.h>

#define SNP	    1u
#define NATIVE	    2u
#define SIG_EPYC_V4 0x00800F12u

static struct igvm_file file;

static void hex(const uint8_t *d, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", d[i]);
}

static void wr32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void wr64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint8_t *finish(struct igvm_builder *b, size_t *len)
{
	uint8_t *f;

	assert_int_equal(igvm_builder_finish(b, &f, len), IGVM_OK);
	return f;
}

/* Re-seal a file after patching a header byte, so the check under test is
 * the one that fires and not the checksum. */
static void reseal(uint8_t *f, size_t len)
{
	uint32_t crc;

	assert_int_equal(igvm_compute_checksum(f, len, &crc), IGVM_OK);
	wr32(f + 20, crc);
}

static int parse(const uint8_t *f, size_t len)
{
	size_t n = igvm_scratch_entries(f, len);
	struct igvm_range *scratch = calloc(n ? n : 1, sizeof(*scratch));
	int rc;

	assert_non_null(scratch);
	rc = igvm_parse(&file, f, len, scratch, n);
	free(scratch);
	return rc;
}

static void vmsa_page(uint8_t page[IGVM_PAGE_SIZE], uint64_t rip, uint64_t features)
{
	struct vmsa v;

	igvm_csvsm_vmsa(&v, rip, features);
	memcpy(page, &v, IGVM_PAGE_SIZE);
}

/* ---- the small file: one of each kind of page, an insert, the VMSA ---- */

static uint8_t *make_small(size_t *len)
{
	struct igvm_builder b;
	uint8_t data[IGVM_PAGE_SIZE], vmsa[IGVM_PAGE_SIZE];

	memset(data, 0xAB, sizeof(data));
	vmsa_page(vmsa, 0x1000, SEV_FEAT_SNP_ACTIVE);
	igvm_builder_init(&b);
	igvm_builder_platform(&b, SNP, IGVM_PLATFORM_SEV_SNP, 2, 0);
	igvm_builder_policy(&b, 0x30000, SNP);
	igvm_builder_param_area(&b, 0, IGVM_PAGE_SIZE);
	igvm_builder_param(&b, IGVM_VHT_VP_COUNT_PARAMETER, 0, 0);
	igvm_builder_insert(&b, 0x10000, SNP, 0);
	igvm_builder_page(&b, 0x1000, SNP, 0, IGVM_PAGE_DATA_NORMAL, data);
	igvm_builder_page(&b, 0x2000, SNP, 0, IGVM_PAGE_DATA_NORMAL, NULL);
	igvm_builder_page(&b, 0x3000, SNP, 0, IGVM_PAGE_DATA_SECRETS, NULL);
	igvm_builder_page(&b, 0x4000, SNP, 0, IGVM_PAGE_DATA_CPUID_DATA, NULL);
	igvm_builder_page(&b, 0x5000, SNP, IGVM_PAGE_FLAG_UNMEASURED, IGVM_PAGE_DATA_NORMAL, NULL);
	igvm_builder_vp_context(&b, IGVM_VMSA_GPA, SNP, 0, vmsa);
	return finish(&b, len);
}

/* python3 tests/tools/igvm_ref.py measure small.igvm [...] */
static const char small_ld_1[] = /* measure FILE (no-data page: NORMAL zeros, QEMU/KVM) */
    "003ab6895193a66755fbd1c50e10aae3b3d27be27d3e11c6efa942af9595664d878883f9dab6d87e1f3a73c7bd7bfe"
    "bb";
static const char small_ld_2_epyc[] = /* --vcpus 2 --vcpu-sig 0x800f12 */
    "d60c1fe9bb33904e610588422cc11d43675284bab07023e6d6904473539888ae5b2d6f0b541ff3b6f61e6d5a01c5ae"
    "2a";
static const char small_ld_native_zero[] = /* --native-zero (PSP ZERO page type) */
    "55b78a077ff147669149f3b86c92d175b3f60e32fd98f42b92572754ff13a5ea69d75b14717579682d5690a6db6a15"
    "15";

static void test_crc32(void **state)
{
	/* CRC-32/ISO-HDLC check value (what crc32fast and zlib compute). */
	assert_int_equal(igvm_crc32(0, "123456789", 9), 0xCBF43926u);
	assert_int_equal(igvm_crc32(igvm_crc32(0, "1234", 4), "56789", 5), 0xCBF43926u);
	assert_int_equal(igvm_crc32(0, "", 0), 0);
}

static void test_small_digest(void **state)
{
	size_t len;
	uint8_t *f = make_small(&len), d[LD_SHA384_LEN];
	char h[2 * LD_SHA384_LEN + 1];
	struct igvm_snp_opts o = {.vcpus = 1};
	const char *dump = getenv("CSVSM_IGVM_DUMP");

	if (dump) {
		char path[1024];
		FILE *out;

		snprintf(path, sizeof(path), "%s/small.igvm", dump);
		out = fopen(path, "wb");
		assert_non_null(out);
		assert_int_equal(fwrite(f, 1, len, out), len);
		fclose(out);
	}
	assert_int_equal(parse(f, len), IGVM_OK);
	assert_int_equal(file.n_headers, 11);
	assert_int_equal(file.snp_mask, SNP);
	assert_true(file.has_policy);
	assert_int_equal(file.policy, 0x30000);
	assert_int_equal(file.n_vp, 1);

	assert_int_equal(igvm_snp_digest(&file, &ld_hash_mbedtls, &o, d, NULL, NULL), IGVM_OK);
	hex(d, sizeof(d), h);
	assert_string_equal(h, small_ld_1);
	o = (struct igvm_snp_opts){.vcpus = 2, .vcpu_sig = SIG_EPYC_V4, .have_sig = true};
	assert_int_equal(igvm_snp_digest(&file, &ld_hash_mbedtls, &o, d, NULL, NULL), IGVM_OK);
	hex(d, sizeof(d), h);
	assert_string_equal(h, small_ld_2_epyc);
	o = (struct igvm_snp_opts){.vcpus = 1, .native_zero = true};
	assert_int_equal(igvm_snp_digest(&file, &ld_hash_mbedtls, &o, d, NULL, NULL), IGVM_OK);
	hex(d, sizeof(d), h);
	assert_string_equal(h, small_ld_native_zero);
	free(f);
}

/*
 * The same digest written out as the PSP would chain it (SNP ABI 56860
 * table 67): the insert first (QEMU issues it at once), then the pages in
 * file order with their SNP page types, then the one VMSA at the VMSA GPA.
 * The page without data is NORMAL with CONTENTS = SHA-384 of 4096 zero
 * bytes (QEMU sev.c cgs_set_guest_state(): CGS_PAGE_TYPE_ZERO ->
 * launch_update_data -> KVM_SEV_SNP_PAGE_TYPE_NORMAL); with native_zero it
 * is the PSP ZERO type with CONTENTS zero.
 */
static void test_small_digest_by_hand(void **state)
{
	static const uint8_t zeros[LD_SHA384_LEN];
	struct launch_digest ld;
	static const uint8_t zero_page[IGVM_PAGE_SIZE];
	uint8_t data[IGVM_PAGE_SIZE], vmsa[IGVM_PAGE_SIZE], h[LD_SHA384_LEN], d[LD_SHA384_LEN];
	size_t len;
	uint8_t *f = make_small(&len);

	memset(data, 0xAB, sizeof(data));
	vmsa_page(vmsa, 0x1000, SEV_FEAT_SNP_ACTIVE);
	assert_int_equal(parse(f, len), IGVM_OK);
	for (int native_zero = 0; native_zero <= 1; native_zero++) {
		struct igvm_snp_opts o = {.vcpus = 1, .native_zero = native_zero};

		launch_digest_init(&ld, &ld_hash_mbedtls, NULL);
		launch_digest_update(&ld, LD_PAGE_UNMEASURED, 0x10000, zeros);
		ld_hash_mbedtls.sha384(data, sizeof(data), h);
		launch_digest_update(&ld, LD_PAGE_NORMAL, 0x1000, h);
		if (native_zero) {
			launch_digest_update(&ld, LD_PAGE_ZERO, 0x2000, zeros);
		} else {
			ld_hash_mbedtls.sha384(zero_page, sizeof(zero_page), h);
			launch_digest_update(&ld, LD_PAGE_NORMAL, 0x2000, h);
		}
		launch_digest_update(&ld, LD_PAGE_SECRETS, 0x3000, zeros);
		launch_digest_update(&ld, LD_PAGE_CPUID, 0x4000, zeros);
		launch_digest_update(&ld, LD_PAGE_UNMEASURED, 0x5000, zeros);
		ld_hash_mbedtls.sha384(vmsa, sizeof(vmsa), h);
		launch_digest_update(&ld, LD_PAGE_VMSA, LD_VMSA_GPA, h);

		assert_int_equal(igvm_snp_digest(&file, &ld_hash_mbedtls, &o, d, NULL, NULL),
				 IGVM_OK);
		assert_memory_equal(d, ld.ld, LD_SHA384_LEN);
	}
	free(f);
}

/* ---- every header type QEMU takes, iterated back ---- */

static uint8_t *make_all(size_t *len)
{
	struct igvm_builder b;
	uint8_t data[IGVM_PAGE_SIZE], vmsa[IGVM_PAGE_SIZE], id[696] = {0};

	memset(data, 0x5A, sizeof(data));
	vmsa_page(vmsa, 0x1000, SEV_FEAT_SNP_ACTIVE | SEV_FEAT_RESTRICTED_INJECTION);
	wr32(id, SNP);
	for (int i = 0; i < 48; i++)
		id[8 + i] = (uint8_t)i;
	igvm_builder_init(&b);
	igvm_builder_platform(&b, SNP, IGVM_PLATFORM_SEV_SNP, 2, 0);
	igvm_builder_platform(&b, NATIVE, IGVM_PLATFORM_NATIVE, 0, 0);
	igvm_builder_policy(&b, 0x30000, SNP);
	igvm_builder_param_area(&b, 5, IGVM_PAGE_SIZE);
	igvm_builder_param(&b, IGVM_VHT_VP_COUNT_PARAMETER, 5, 0);
	igvm_builder_param(&b, IGVM_VHT_ENVIRONMENT_INFO_PARAMETER, 5, 4);
	igvm_builder_param_area(&b, 6, 2 * IGVM_PAGE_SIZE);
	igvm_builder_param(&b, IGVM_VHT_MEMORY_MAP, 6, 0);
	igvm_builder_param_area(&b, 7, IGVM_PAGE_SIZE);
	igvm_builder_param(&b, IGVM_VHT_MADT, 7, 0);
	igvm_builder_insert(&b, 0x20000, SNP, 5);
	igvm_builder_insert(&b, 0x22000, SNP | NATIVE, 6);
	igvm_builder_insert(&b, 0x24000, SNP, 7);
	igvm_builder_required(&b, 0x100000, SNP, 0x100000, 0);
	igvm_builder_page(&b, 0x100000, SNP, 0, IGVM_PAGE_DATA_NORMAL, data);
	igvm_builder_page(&b, 0x100000, NATIVE, 0, IGVM_PAGE_DATA_NORMAL,
			  data); /* other platform */
	igvm_builder_page(&b, 0x101000, SNP, 0, IGVM_PAGE_DATA_CPUID_XF, NULL);
	igvm_builder_page(&b, 0x200000, SNP, IGVM_PAGE_FLAG_2MB, IGVM_PAGE_DATA_NORMAL, NULL);
	igvm_builder_header(&b, IGVM_VHT_SNP_ID_BLOCK, id, sizeof(id), NULL, 0, 0);
	igvm_builder_vp_context(&b, IGVM_VMSA_GPA, SNP, 0, vmsa);
	return finish(&b, len);
}

static void test_every_header_type(void **state)
{
	static const uint32_t want[] = {
	    IGVM_VHT_SUPPORTED_PLATFORM, IGVM_VHT_SUPPORTED_PLATFORM,
	    IGVM_VHT_GUEST_POLICY,	 IGVM_VHT_PARAMETER_AREA,
	    IGVM_VHT_VP_COUNT_PARAMETER, IGVM_VHT_ENVIRONMENT_INFO_PARAMETER,
	    IGVM_VHT_PARAMETER_AREA,	 IGVM_VHT_MEMORY_MAP,
	    IGVM_VHT_PARAMETER_AREA,	 IGVM_VHT_MADT,
	    IGVM_VHT_PARAMETER_INSERT,	 IGVM_VHT_PARAMETER_INSERT,
	    IGVM_VHT_PARAMETER_INSERT,	 IGVM_VHT_REQUIRED_MEMORY,
	    IGVM_VHT_PAGE_DATA,		 IGVM_VHT_PAGE_DATA,
	    IGVM_VHT_PAGE_DATA,		 IGVM_VHT_PAGE_DATA,
	    IGVM_VHT_SNP_ID_BLOCK,	 IGVM_VHT_VP_CONTEXT,
	};
	struct igvm_snp_opts o = {.vcpus = 4, .vcpu_sig = SIG_EPYC_V4, .have_sig = true};
	uint8_t d[LD_SHA384_LEN];
	struct igvm_iter it;
	struct igvm_header h;
	size_t len, i = 0;
	uint8_t *f = make_all(&len);

	assert_int_equal(parse(f, len), IGVM_OK);
	assert_int_equal(file.n_platforms, 2);
	assert_int_equal(file.n_areas, 3);
	assert_true(file.has_id_block);
	assert_int_equal(file.id_block_ld[47], 47);
	igvm_iter_init(&it, &file);
	while (igvm_iter_next(&it, &h)) {
		assert_true(i < ARRAY_SIZE(want));
		assert_int_equal(h.type, want[i]);
		assert_int_equal(h.index, i);
		assert_string_not_equal(igvm_header_name(h.type), "UNKNOWN");
		if (h.type == IGVM_VHT_PAGE_DATA && h.u.page.data_type == IGVM_PAGE_DATA_NORMAL &&
		    !(h.u.page.flags & IGVM_PAGE_FLAG_2MB)) {
			assert_non_null(h.data);
			assert_int_equal(h.data[0], 0x5A);
		}
		if (h.type == IGVM_VHT_VP_CONTEXT) {
			assert_int_equal(h.data_len, IGVM_PAGE_SIZE);
			assert_int_equal(h.u.vp.gpa, IGVM_VMSA_GPA);
		}
		i++;
	}
	assert_int_equal(i, ARRAY_SIZE(want));
	/* 4 vCPUs: the BSP from the file, three reset VMSAs. */
	assert_int_equal(igvm_snp_digest(&file, &ld_hash_mbedtls, &o, d, NULL, NULL), IGVM_OK);
	free(f);
}

/* ---- QEMU's issue order ---- */

struct order {
	uint8_t type[64];
	uint64_t gpa[64];
	int n;
};

static void record(void *ctx, uint8_t type, uint64_t gpa)
{
	struct order *o = ctx;

	if (o->n < 64) {
		o->type[o->n] = type;
		o->gpa[o->n] = gpa;
	}
	o->n++;
}

static void test_issue_order(void **state)
{
	struct igvm_builder b;
	uint8_t data[IGVM_PAGE_SIZE], d[LD_SHA384_LEN];
	struct igvm_snp_opts o = {.vcpus = 2, .vcpu_sig = SIG_EPYC_V4, .have_sig = true};
	struct order rec = {0};
	size_t len;
	uint8_t *f;

	memset(data, 1, sizeof(data));
	igvm_builder_init(&b);
	igvm_builder_platform(&b, SNP, IGVM_PLATFORM_SEV_SNP, 0, 0);
	igvm_builder_platform(&b, NATIVE, IGVM_PLATFORM_NATIVE, 0, 0);
	igvm_builder_param_area(&b, 1, 2 * IGVM_PAGE_SIZE);
	igvm_builder_page(&b, 0x1000, SNP, 0, IGVM_PAGE_DATA_NORMAL, data);
	igvm_builder_page(&b, 0x2000, SNP, 0, IGVM_PAGE_DATA_NORMAL, data);
	igvm_builder_insert(&b, 0x8000, SNP, 1); /* issued before the run above */
	igvm_builder_page(&b, 0x3000, SNP, 0, IGVM_PAGE_DATA_NORMAL, data);
	igvm_builder_page(&b, 0x9000, NATIVE, 0, IGVM_PAGE_DATA_NORMAL, data);
	igvm_builder_page(&b, 0x4000, SNP, 0, IGVM_PAGE_DATA_NORMAL, NULL);
	f = finish(&b, &len);
	assert_int_equal(parse(f, len), IGVM_OK);
	assert_int_equal(igvm_snp_digest(&file, &ld_hash_mbedtls, &o, d, record, &rec), IGVM_OK);
	assert_int_equal(rec.n, 8);
	assert_int_equal(rec.type[0], LD_PAGE_UNMEASURED);
	assert_int_equal(rec.gpa[0], 0x8000);
	assert_int_equal(rec.gpa[1], 0x9000);
	assert_int_equal(rec.gpa[2], 0x1000);
	assert_int_equal(rec.gpa[3], 0x2000);
	assert_int_equal(rec.gpa[4], 0x3000);
	assert_int_equal(rec.type[5], LD_PAGE_NORMAL); /* no data: NORMAL zeros (QEMU/KVM) */
	assert_int_equal(rec.gpa[5], 0x4000);
	assert_int_equal(rec.type[6], LD_PAGE_VMSA);
	assert_int_equal(rec.type[7], LD_PAGE_VMSA);
	assert_int_equal(rec.gpa[7], LD_VMSA_GPA);
	/* No VP context: vCPUs need a signature; none at all is refused. */
	o.have_sig = false;
	assert_int_equal(igvm_snp_digest(&file, &ld_hash_mbedtls, &o, d, NULL, NULL),
			 IGVM_ERR_VCPUS);
	o.vcpus = 0;
	assert_int_equal(igvm_snp_digest(&file, &ld_hash_mbedtls, &o, d, NULL, NULL),
			 IGVM_ERR_VCPUS);
	free(f);
}

/* ---- malformed files: one rule each ---- */

struct bad {
	const char *name;
	void (*build)(struct igvm_builder *b);
	void (*patch)(uint8_t *f, size_t len); /* after build; resealed */
	int err;
};

static uint8_t good_vmsa[IGVM_PAGE_SIZE];
static uint8_t page_a[IGVM_PAGE_SIZE];

static void base(struct igvm_builder *b)
{
	igvm_builder_platform(b, SNP, IGVM_PLATFORM_SEV_SNP, 2, 0);
	igvm_builder_policy(b, 0x30000, SNP);
}

static void raw(struct igvm_builder *b, uint32_t type, uint32_t len)
{
	uint8_t body[64] = {0};

	igvm_builder_header(b, type, body, len, NULL, 0, 0);
}

static void b_page_ok(struct igvm_builder *b)
{
	base(b);
	igvm_builder_page(b, 0x1000, SNP, 0, IGVM_PAGE_DATA_NORMAL, page_a);
}
static void b_unknown(struct igvm_builder *b)
{
	b_page_ok(b);
	raw(b, 0x399, 8);
}
static void b_optional_bit(struct igvm_builder *b)
{
	b_page_ok(b);
	raw(b, IGVM_VHT_VP_COUNT_PARAMETER | IGVM_VHT_OPTIONAL_BIT, 8);
}
static void b_reserved_type(struct igvm_builder *b)
{
	b_page_ok(b);
	raw(b, IGVM_VHT_RESERVED_DO_NOT_USE, 8);
}
static void b_cmdline(struct igvm_builder *b)
{
	b_page_ok(b);
	igvm_builder_param_area(b, 0, IGVM_PAGE_SIZE);
	igvm_builder_param(b, IGVM_VHT_COMMAND_LINE, 0, 0);
}
static void b_reloc(struct igvm_builder *b)
{
	base(b);
	raw(b, IGVM_VHT_RELOCATABLE_REGION, 48);
	igvm_builder_page(b, 0x1000, SNP, 0, IGVM_PAGE_DATA_NORMAL, page_a);
}
static void b_page_len(struct igvm_builder *b)
{
	b_page_ok(b);
	igvm_builder_header(b, IGVM_VHT_PAGE_DATA, page_a, 20, NULL, 0, 0);
}
static void b_order(struct igvm_builder *b)
{
	b_page_ok(b);
	igvm_builder_policy(b, 0x30000, SNP);
}
static void b_no_platform(struct igvm_builder *b)
{
	igvm_builder_param_area(b, 3, IGVM_PAGE_SIZE);
	igvm_builder_param(b, IGVM_VHT_VP_COUNT_PARAMETER, 3, 0);
}
static void p_no_directive(uint8_t *f, size_t len)
{
	wr32(f + 12, 48); /* the headers end after platform + policy: the page is data */
}
static void b_vp_padding(struct igvm_builder *b)
{
	b_page_ok(b);
	igvm_builder_vp_context(b, IGVM_VMSA_GPA, SNP, 0, good_vmsa);
}
static void p_vp_padding(uint8_t *f, size_t len)
{
	/* the 4 padding bytes after the 20-byte VP context body */
	size_t off = 24 + 8 + 16 + 8 + 16 + 8 + 24 + 8 + 20;

	f[off] = 1;
}
static void p_page_reserved(uint8_t *f, size_t len)
{
	f[24 + 8 + 16 + 8 + 16 + 8 + 22] = 1;
}
static void b_unaligned(struct igvm_builder *b)
{
	base(b);
	igvm_builder_page(b, 0x1800, SNP, 0, IGVM_PAGE_DATA_NORMAL, page_a);
}
static void p_data_outside(uint8_t *f, size_t len)
{
	wr32(f + 24 + 8 + 16 + 8 + 16 + 8 + 12, (uint32_t)len - 100);
}
static void p_data_in_headers(uint8_t *f, size_t len)
{
	wr32(f + 24 + 8 + 16 + 8 + 16 + 8 + 12, 24);
}
static void b_trailing(struct igvm_builder *b)
{
	b_page_ok(b);
	igvm_builder_page(b, 0x2000, SNP, 0, IGVM_PAGE_DATA_NORMAL, page_a);
}
static void p_trailing(uint8_t *f, size_t len)
{
	/* the second page shares the first one's data: its own 4 KiB is orphaned */
	memcpy(f + 104 + 8 + 12, f + 72 + 8 + 12, 4);
}
static void b_two_bit_mask(struct igvm_builder *b)
{
	igvm_builder_platform(b, 3, IGVM_PLATFORM_SEV_SNP, 2, 0);
	igvm_builder_page(b, 0x1000, 1, 0, IGVM_PAGE_DATA_NORMAL, page_a);
}
static void b_dup_platform(struct igvm_builder *b)
{
	igvm_builder_platform(b, 1, IGVM_PLATFORM_SEV_SNP, 2, 0);
	igvm_builder_platform(b, 2, IGVM_PLATFORM_SEV_SNP, 2, 0);
	igvm_builder_page(b, 0x1000, 1, 0, IGVM_PAGE_DATA_NORMAL, page_a);
}
static void b_vtl1(struct igvm_builder *b)
{
	igvm_builder_platform(b, 1, IGVM_PLATFORM_SEV_SNP, 1, 0);
	igvm_builder_page(b, 0x1000, 1, 0, IGVM_PAGE_DATA_NORMAL, page_a);
}
static void b_bad_platform(struct igvm_builder *b)
{
	igvm_builder_platform(b, 1, 9, 0, 0);
	igvm_builder_page(b, 0x1000, 1, 0, IGVM_PAGE_DATA_NORMAL, page_a);
}
static void b_undeclared_mask(struct igvm_builder *b)
{
	base(b);
	igvm_builder_page(b, 0x1000, 4, 0, IGVM_PAGE_DATA_NORMAL, page_a);
}
static void b_insert_undeclared(struct igvm_builder *b)
{
	b_page_ok(b);
	igvm_builder_insert(b, 0x8000, SNP, 3);
}
static void b_param_after_insert(struct igvm_builder *b)
{
	b_page_ok(b);
	igvm_builder_param_area(b, 3, IGVM_PAGE_SIZE);
	igvm_builder_insert(b, 0x8000, SNP, 3);
	igvm_builder_param(b, IGVM_VHT_VP_COUNT_PARAMETER, 3, 0);
}
static void b_vpcount_offset(struct igvm_builder *b)
{
	b_page_ok(b);
	igvm_builder_param_area(b, 3, IGVM_PAGE_SIZE);
	igvm_builder_param(b, IGVM_VHT_VP_COUNT_PARAMETER, 3, IGVM_PAGE_SIZE - 2);
}
static void b_memmap_offset(struct igvm_builder *b)
{
	b_page_ok(b);
	igvm_builder_param_area(b, 3, IGVM_PAGE_SIZE);
	igvm_builder_param(b, IGVM_VHT_MEMORY_MAP, 3, 8);
}
static void b_area_twice(struct igvm_builder *b)
{
	b_page_ok(b);
	igvm_builder_param_area(b, 3, IGVM_PAGE_SIZE);
	igvm_builder_param_area(b, 3, IGVM_PAGE_SIZE);
}
static void b_area_size(struct igvm_builder *b)
{
	b_page_ok(b);
	igvm_builder_param_area(b, 3, 100);
}
static void b_area_data(struct igvm_builder *b)
{
	uint8_t body[16] = {0};

	b_page_ok(b);
	wr64(body, IGVM_PAGE_SIZE);
	igvm_builder_header(b, IGVM_VHT_PARAMETER_AREA, body, 16, page_a, IGVM_PAGE_SIZE, 12);
}
static void b_shared(struct igvm_builder *b)
{
	base(b);
	igvm_builder_page(b, 0x1000, SNP, IGVM_PAGE_FLAG_SHARED, IGVM_PAGE_DATA_NORMAL, page_a);
}
static void b_flag_bits(struct igvm_builder *b)
{
	base(b);
	igvm_builder_page(b, 0x1000, SNP, 1u << 5, IGVM_PAGE_DATA_NORMAL, page_a);
}
static void b_data_type(struct igvm_builder *b)
{
	base(b);
	igvm_builder_page(b, 0x1000, SNP, 0, 7, page_a);
}
static void b_2m_data(struct igvm_builder *b)
{
	base(b);
	igvm_builder_page(b, 0x200000, SNP, IGVM_PAGE_FLAG_2MB, IGVM_PAGE_DATA_NORMAL, page_a);
}
static void b_2m_unaligned(struct igvm_builder *b)
{
	base(b);
	igvm_builder_page(b, 0x201000, SNP, IGVM_PAGE_FLAG_2MB, IGVM_PAGE_DATA_NORMAL, NULL);
	igvm_builder_page(b, 0x1000, SNP, 0, IGVM_PAGE_DATA_NORMAL, page_a);
}
static void b_wrap(struct igvm_builder *b)
{
	base(b);
	igvm_builder_page(b, 0xFFFFFFFFFFFFF000ULL, SNP, 0, IGVM_PAGE_DATA_NORMAL, page_a);
}
static void b_above_52(struct igvm_builder *b)
{
	base(b);
	igvm_builder_page(b, 1ULL << 52, SNP, 0, IGVM_PAGE_DATA_NORMAL, page_a);
}
static void b_required_wrap(struct igvm_builder *b)
{
	b_page_ok(b);
	igvm_builder_required(b, 0xFFFFFFFFFFFFF000ULL, SNP, 0x2000, 0);
}
static void b_overlap_pages(struct igvm_builder *b)
{
	b_page_ok(b);
	igvm_builder_page(b, 0x1000, SNP, 0, IGVM_PAGE_DATA_NORMAL, NULL);
}
static void b_overlap_insert(struct igvm_builder *b)
{
	b_page_ok(b);
	igvm_builder_param_area(b, 3, 2 * IGVM_PAGE_SIZE);
	igvm_builder_insert(b, 0x0, SNP, 3);
}
static void b_vmsa_gpa(struct igvm_builder *b)
{
	b_page_ok(b);
	igvm_builder_vp_context(b, 0x7000, SNP, 0, good_vmsa);
}
static uint8_t vmsa_x[IGVM_PAGE_SIZE];
static void vp_x(struct igvm_builder *b)
{
	b_page_ok(b);
	igvm_builder_vp_context(b, IGVM_VMSA_GPA, SNP, 0, vmsa_x);
}
static void b_vmsa_field(struct igvm_builder *b)
{
	memcpy(vmsa_x, good_vmsa, sizeof(vmsa_x));
	wr64(vmsa_x + 0x3C8, 1ULL << 40); /* virtual_tom: not passed to KVM */
	vp_x(b);
}
static void b_vmsa_vmpl(struct igvm_builder *b)
{
	memcpy(vmsa_x, good_vmsa, sizeof(vmsa_x));
	vmsa_x[0xCA] = 1;
	vp_x(b);
}
static void b_vmsa_no_snp(struct igvm_builder *b)
{
	memcpy(vmsa_x, good_vmsa, sizeof(vmsa_x));
	wr64(vmsa_x + 0x3B0, SEV_FEAT_RESTRICTED_INJECTION);
	vp_x(b);
}
static void b_vmsa_dr7(struct igvm_builder *b)
{
	memcpy(vmsa_x, good_vmsa, sizeof(vmsa_x));
	wr64(vmsa_x + 0x160, 0x401);
	vp_x(b);
}
static void b_vmsa_svme(struct igvm_builder *b)
{
	memcpy(vmsa_x, good_vmsa, sizeof(vmsa_x));
	wr64(vmsa_x + 0xD0, 0);
	vp_x(b);
}
static void b_vmsa_mce(struct igvm_builder *b)
{
	memcpy(vmsa_x, good_vmsa, sizeof(vmsa_x));
	wr64(vmsa_x + 0x148, 0);
	vp_x(b);
}
static void b_vmsa_cd(struct igvm_builder *b)
{
	memcpy(vmsa_x, good_vmsa, sizeof(vmsa_x));
	wr64(vmsa_x + 0x158, 0x60000031);
	vp_x(b);
}
static void b_vp_twice(struct igvm_builder *b)
{
	b_page_ok(b);
	igvm_builder_vp_context(b, IGVM_VMSA_GPA, SNP, 0, good_vmsa);
	igvm_builder_vp_context(b, IGVM_VMSA_GPA, SNP, 0, good_vmsa);
}
static void b_vp_features_differ(struct igvm_builder *b)
{
	memcpy(vmsa_x, good_vmsa, sizeof(vmsa_x));
	wr64(vmsa_x + 0x3B0, SEV_FEAT_SNP_ACTIVE | SEV_FEAT_DEBUG_SWAP);
	b_page_ok(b);
	igvm_builder_vp_context(b, IGVM_VMSA_GPA, SNP, 0, good_vmsa);
	igvm_builder_vp_context(b, IGVM_VMSA_GPA, SNP, 1, vmsa_x);
}
static void b_vp_native(struct igvm_builder *b)
{
	b_page_ok(b);
	igvm_builder_platform(b, NATIVE, IGVM_PLATFORM_NATIVE, 0, 0);
}
static void b_vp_other_platform(struct igvm_builder *b)
{
	igvm_builder_platform(b, SNP, IGVM_PLATFORM_SEV_SNP, 2, 0);
	igvm_builder_platform(b, NATIVE, IGVM_PLATFORM_NATIVE, 0, 0);
	igvm_builder_page(b, 0x1000, SNP, 0, IGVM_PAGE_DATA_NORMAL, page_a);
	igvm_builder_vp_context(b, IGVM_VMSA_GPA, NATIVE, 0, good_vmsa);
}
static void b_policy_mbo(struct igvm_builder *b)
{
	igvm_builder_platform(b, SNP, IGVM_PLATFORM_SEV_SNP, 2, 0);
	igvm_builder_policy(b, 0x10000, SNP);
	igvm_builder_page(b, 0x1000, SNP, 0, IGVM_PAGE_DATA_NORMAL, page_a);
}
static void b_policy_rsvd(struct igvm_builder *b)
{
	igvm_builder_platform(b, SNP, IGVM_PLATFORM_SEV_SNP, 2, 0);
	igvm_builder_policy(b, 0x30000 | (1ULL << 40), SNP);
	igvm_builder_page(b, 0x1000, SNP, 0, IGVM_PAGE_DATA_NORMAL, page_a);
}
static void b_policy_twice(struct igvm_builder *b)
{
	base(b);
	igvm_builder_policy(b, 0x30000, SNP);
	igvm_builder_page(b, 0x1000, SNP, 0, IGVM_PAGE_DATA_NORMAL, page_a);
}
static void b_id_twice(struct igvm_builder *b)
{
	uint8_t id[696] = {0};

	wr32(id, SNP);
	b_page_ok(b);
	igvm_builder_header(b, IGVM_VHT_SNP_ID_BLOCK, id, sizeof(id), NULL, 0, 0);
	igvm_builder_header(b, IGVM_VHT_SNP_ID_BLOCK, id, sizeof(id), NULL, 0, 0);
}
static void b_id_reserved(struct igvm_builder *b)
{
	uint8_t id[696] = {0};

	wr32(id, SNP);
	id[5] = 1;
	b_page_ok(b);
	igvm_builder_header(b, IGVM_VHT_SNP_ID_BLOCK, id, sizeof(id), NULL, 0, 0);
}
static void b_runs_past(struct igvm_builder *b)
{
	b_page_ok(b);
}
static void p_runs_past(uint8_t *f, size_t len)
{
	wr32(f + 24 + 8 + 16 + 8 + 16 + 4, 4096); /* PAGE_DATA length */
}
static void p_vh_not_aligned(uint8_t *f, size_t len)
{
	wr32(f + 12, 20);
}
static void p_gap_after_fixed(uint8_t *f, size_t len)
{
	/* shift the variable headers by 8 with a non-zero gap byte */
	memmove(f + 32, f + 24, len - 32);
	wr32(f + 8, 32);
	f[24] = 1;
}

static const struct bad bad_files[] = {
    {"unknown type", b_unknown, NULL, IGVM_ERR_UNKNOWN_HEADER},
    {"optional bit set", b_optional_bit, NULL, IGVM_ERR_UNKNOWN_HEADER},
    {"0x306 do-not-use", b_reserved_type, NULL, IGVM_ERR_UNKNOWN_HEADER},
    {"COMMAND_LINE (QEMU has no handler)", b_cmdline, NULL, IGVM_ERR_UNSUPPORTED},
    {"RELOCATABLE_REGION", b_reloc, NULL, IGVM_ERR_UNSUPPORTED},
    {"PAGE_DATA length 20", b_page_len, NULL, IGVM_ERR_HEADER_LENGTH},
    {"init after directive", b_order, NULL, IGVM_ERR_SECTION_ORDER},
    {"no platform header", b_no_platform, NULL, IGVM_ERR_EMPTY},
    {"no directive", b_page_ok, p_no_directive, IGVM_ERR_EMPTY},
    {"VP context padding", b_vp_padding, p_vp_padding, IGVM_ERR_PADDING},
    {"PAGE_DATA reserved", b_page_ok, p_page_reserved, IGVM_ERR_PADDING},
    {"unaligned page", b_unaligned, NULL, IGVM_ERR_ALIGN},
    {"page data past the end", b_page_ok, p_data_outside, IGVM_ERR_FILE_DATA},
    {"page data in the headers", b_page_ok, p_data_in_headers, IGVM_ERR_FILE_DATA},
    {"unreferenced file data", b_trailing, p_trailing, IGVM_ERR_COVERAGE},
    {"platform mask of two bits", b_two_bit_mask, NULL, IGVM_ERR_PLATFORM},
    {"platform type twice", b_dup_platform, NULL, IGVM_ERR_PLATFORM},
    {"highest VTL 1", b_vtl1, NULL, IGVM_ERR_PLATFORM},
    {"platform type 9", b_bad_platform, NULL, IGVM_ERR_PLATFORM},
    {"undeclared mask", b_undeclared_mask, NULL, IGVM_ERR_MASK},
    {"insert of an undeclared area", b_insert_undeclared, NULL, IGVM_ERR_PARAM},
    {"parameter after its insert", b_param_after_insert, NULL, IGVM_ERR_PARAM},
    {"VP count past its area", b_vpcount_offset, NULL, IGVM_ERR_PARAM},
    {"MEMORY_MAP byte_offset 8", b_memmap_offset, NULL, IGVM_ERR_PARAM},
    {"area index twice", b_area_twice, NULL, IGVM_ERR_PARAM},
    {"area size 100", b_area_size, NULL, IGVM_ERR_ALIGN},
    {"area initial data", b_area_data, NULL, IGVM_ERR_UNSUPPORTED},
    {"SHARED page", b_shared, NULL, IGVM_ERR_UNSUPPORTED},
    {"reserved page flag", b_flag_bits, NULL, IGVM_ERR_PAGE},
    {"page data type 7", b_data_type, NULL, IGVM_ERR_PAGE},
    {"2 MiB page with data", b_2m_data, NULL, IGVM_ERR_UNSUPPORTED},
    {"2 MiB page unaligned", b_2m_unaligned, NULL, IGVM_ERR_ALIGN},
    {"page wraps 2^64", b_wrap, NULL, IGVM_ERR_RANGE},
    {"page above 2^52", b_above_52, NULL, IGVM_ERR_RANGE},
    {"required memory wraps", b_required_wrap, NULL, IGVM_ERR_RANGE},
    {"two pages at one GPA", b_overlap_pages, NULL, IGVM_ERR_OVERLAP},
    {"insert over a page", b_overlap_insert, NULL, IGVM_ERR_OVERLAP},
    {"VMSA gpa", b_vmsa_gpa, NULL, IGVM_ERR_VMSA},
    {"VMSA virtual_tom", b_vmsa_field, NULL, IGVM_ERR_VMSA},
    {"VMSA vmpl", b_vmsa_vmpl, NULL, IGVM_ERR_VMSA},
    {"VMSA without SNPActive", b_vmsa_no_snp, NULL, IGVM_ERR_VMSA},
    {"VMSA DR7", b_vmsa_dr7, NULL, IGVM_ERR_VMSA},
    {"VMSA without EFER.SVME", b_vmsa_svme, NULL, IGVM_ERR_VMSA},
    {"VMSA without CR4.MCE", b_vmsa_mce, NULL, IGVM_ERR_VMSA},
    {"VMSA with CR0.CD/NW", b_vmsa_cd, NULL, IGVM_ERR_VMSA},
    {"two VP contexts for vp 0", b_vp_twice, NULL, IGVM_ERR_VMSA},
    {"VP contexts with different features", b_vp_features_differ, NULL, IGVM_ERR_VMSA},
    {"platform after a directive", b_vp_native, NULL, IGVM_ERR_SECTION_ORDER},
    {"VP context for NATIVE", b_vp_other_platform, NULL, IGVM_ERR_UNSUPPORTED},
    {"policy bit 17 clear", b_policy_mbo, NULL, IGVM_ERR_POLICY},
    {"policy reserved bit", b_policy_rsvd, NULL, IGVM_ERR_POLICY},
    {"two policies", b_policy_twice, NULL, IGVM_ERR_POLICY},
    {"two ID blocks", b_id_twice, NULL, IGVM_ERR_POLICY},
    {"ID block reserved", b_id_reserved, NULL, IGVM_ERR_PADDING},
    {"header runs past the section", b_runs_past, p_runs_past, IGVM_ERR_TRUNCATED},
    {"variable header size not 8-aligned", b_page_ok, p_vh_not_aligned, IGVM_ERR_FIXED_HEADER},
    {"non-zero gap after the fixed header", b_page_ok, p_gap_after_fixed, IGVM_ERR_PADDING},
};

static void test_malformed(void **state)
{
	memset(page_a, 0xA5, sizeof(page_a));
	vmsa_page(good_vmsa, 0x1000, SEV_FEAT_SNP_ACTIVE);
	for (size_t i = 0; i < ARRAY_SIZE(bad_files); i++) {
		struct igvm_builder b;
		size_t len;
		uint8_t *f;
		int rc;

		igvm_builder_init(&b);
		bad_files[i].build(&b);
		f = finish(&b, &len);
		if (bad_files[i].patch) {
			bad_files[i].patch(f, len);
			reseal(f, len);
		}
		rc = parse(f, len);
		if (rc != bad_files[i].err)
			fail_msg("%s: got %d (%s: %s), want %d (%s)", bad_files[i].name, rc,
				 igvm_strerror(rc), file.err_detail ? file.err_detail : "",
				 bad_files[i].err, igvm_strerror(bad_files[i].err));
		assert_non_null(file.err_detail);
		free(f);
	}
}

static void test_fixed_header(void **state)
{
	size_t len;
	uint8_t *f = make_small(&len), *g = malloc(len + 8);

	assert_non_null(g);
	assert_int_equal(parse(f, 23), IGVM_ERR_TRUNCATED);
	assert_int_equal(igvm_parse(&file, NULL, len, NULL, 0), IGVM_ERR_INVAL);
	memcpy(g, f, len);
	g[0] ^= 1;
	assert_int_equal(parse(g, len), IGVM_ERR_MAGIC);
	memcpy(g, f, len);
	wr32(g + 4, 2);
	assert_int_equal(parse(g, len), IGVM_ERR_VERSION);
	memcpy(g, f, len);
	assert_int_equal(parse(g, len - 1), IGVM_ERR_FIXED_HEADER); /* total_file_size */
	wr32(g + 8, (uint32_t)len);				    /* headers past the end */
	assert_int_equal(parse(g, len), IGVM_ERR_FIXED_HEADER);
	memcpy(g, f, len);
	wr32(g + 20, 0);
	assert_int_equal(parse(g, len), IGVM_ERR_CHECKSUM);
	/* a file with headers only (no file data) */
	memcpy(g, f, len);
	wr32(g + 12, (uint32_t)len - 24);
	wr32(g + 16, (uint32_t)len);
	assert_int_equal(parse(g, len), IGVM_ERR_EMPTY);
	/* too small a scratch array */
	{
		struct igvm_range r[2];

		assert_int_equal(igvm_parse(&file, f, len, r, 2), IGVM_ERR_TOO_MANY);
	}
	free(g);
	free(f);
}

/* One bit of every byte of a valid file flipped in turn (the bit rotates
 * with the position): refused, or another digest. */
static void test_every_bit(void **state)
{
	size_t len;
	uint8_t *f = make_all(&len), *g = malloc(len), ref[LD_SHA384_LEN], d[LD_SHA384_LEN];
	struct igvm_snp_opts o = {.vcpus = 1};
	size_t accepted = 0;

	assert_non_null(g);
	assert_int_equal(parse(f, len), IGVM_OK);
	assert_int_equal(igvm_snp_digest(&file, &ld_hash_mbedtls, &o, ref, NULL, NULL), IGVM_OK);
	for (size_t pos = 0; pos < len; pos++) {
		for (int bit = (int)(pos % 8); bit == (int)(pos % 8); bit++) {
			memcpy(g, f, len);
			g[pos] ^= (uint8_t)(1u << bit);
			if (parse(g, len) != IGVM_OK)
				continue;
			accepted++;
			if (igvm_snp_digest(&file, &ld_hash_mbedtls, &o, d, NULL, NULL) != IGVM_OK)
				continue;
			/* The NATIVE-only page's data is not SEV-SNP's: its bits may not
			 * change the SNP digest; every other accepted flip must. */
			if (!memcmp(d, ref, sizeof(d))) {
				struct igvm_iter it;
				struct igvm_header h;
				bool native_data = false;

				igvm_iter_init(&it, &file);
				while (igvm_iter_next(&it, &h))
					if (h.type == IGVM_VHT_PAGE_DATA &&
					    h.u.page.compatibility_mask == NATIVE && h.data &&
					    pos >= (size_t)(h.data - g) &&
					    pos < (size_t)(h.data - g) + IGVM_PAGE_SIZE)
						native_data = true;
				if (!native_data)
					fail_msg("flip at %#zx bit %d: accepted, same digest", pos,
						 bit);
			}
		}
	}
	assert_true(accepted > 0); /* the page data flips are accepted, and differ */
	free(g);
	free(f);
}

/* ---- csvsm's image layout ---- */

static uint8_t *fixture_fw(size_t *len)
{
	return host_load_fixture("measure/ovmf-ovmfx64-last4k.bin", len);
}

static void test_csvsm_image(void **state)
{
	static struct ovmf_info info;
	static uint8_t text[0x3000], dat[0x800];
	struct ld_segment segs[2] = {
	    {CSVSM_IGVM_REGION_BASE, text, sizeof(text), sizeof(text)},
	    {CSVSM_IGVM_REGION_BASE + 0x3000, dat, sizeof(dat), 0x5000}, /* .bss tail */
	};
	struct igvm_csvsm_params p = {
	    .segs = segs,
	    .n_segs = 2,
	    .entry = CSVSM_IGVM_REGION_BASE + 0x10,
	    .policy = CSVSM_IGVM_POLICY,
	    .sev_features = CSVSM_IGVM_SEV_FEATURES,
	    .madt = true,
	    .cmdline = "csvsm.guest_vmpl=2",
	};
	struct igvm_csvsm_image img;
	struct csvsm_igvm_boot_block bb;
	struct igvm_snp_opts o = {.vcpus = 1};
	uint8_t d[LD_SHA384_LEN];
	struct igvm_iter it;
	struct igvm_header h;
	char err[256];
	size_t fw_len;
	uint8_t *fw = fixture_fw(&fw_len);
	int zero = 0, normal = 0, secrets = 0, cpuid = 0, vp = 0;

	if (!fw)
		skip();
	memset(text, 0x90, sizeof(text));
	memset(dat, 0x11, sizeof(dat));
	assert_int_equal(ovmf_info_parse(fw, fw_len, &info), OVMF_META_OK);
	p.fw = fw;
	p.fw_len = fw_len;
	p.fw_info = &info;
	if (igvm_csvsm_build(&p, &img, err, sizeof(err)))
		fail_msg("build: %s", err);
	assert_int_equal(parse(img.file, img.len), IGVM_OK);
	assert_int_equal(igvm_snp_digest(&file, &ld_hash_mbedtls, &o, d, NULL, NULL), IGVM_OK);
	assert_true(file.has_policy);
	assert_int_equal(file.policy, CSVSM_IGVM_POLICY);

	igvm_iter_init(&it, &file);
	while (igvm_iter_next(&it, &h)) {
		if (h.type == IGVM_VHT_PAGE_DATA && h.u.page.gpa == CSVSM_IGVM_BOOT_BLOCK_GPA)
			memcpy(&bb, h.data, sizeof(bb));
		if (h.type == IGVM_VHT_PAGE_DATA) {
			/* native_zero: tell the pages without data (ZERO) from the rest */
			uint8_t t = igvm_snp_page_type(&h.u.page, h.data, true);

			zero += t == LD_PAGE_ZERO;
			normal += t == LD_PAGE_NORMAL;
			secrets += t == LD_PAGE_SECRETS;
			cpuid += t == LD_PAGE_CPUID;
		}
		if (h.type == IGVM_VHT_VP_CONTEXT) {
			const struct vmsa *v = (const struct vmsa *)h.data;

			vp++;
			assert_int_equal(v->rip, p.entry);
			assert_int_equal(v->rsi, CSVSM_IGVM_BOOT_BLOCK_GPA);
			assert_int_equal(v->cr0, 0x31);
			assert_int_equal(v->cs.attrib, 0xC9B);
			assert_int_equal(v->sev_features, CSVSM_IGVM_SEV_FEATURES);
		}
	}
	assert_int_equal(vp, 1);
	assert_int_equal(secrets, 1);
	assert_int_equal(cpuid, 1);
	/* text 3 + .data 1 + boot block 1 + firmware 1 NORMAL pages */
	assert_int_equal(normal, 3 + 1 + 1 + 1);
	assert_true(zero >= 4); /* .bss pages + the firmware's SNP_SEC_MEM */
	assert_memory_equal(&bb, &img.boot, sizeof(bb));
	assert_int_equal(bb.magic, CSVSM_IGVM_BOOT_MAGIC);
	assert_int_equal(bb.version, CSVSM_IGVM_BOOT_VERSION);
	assert_int_equal(bb.region_start, CSVSM_IGVM_REGION_BASE);
	assert_int_equal(bb.region_end, CSVSM_IGVM_REGION_BASE + CSVSM_IGVM_REGION_SIZE);
	assert_int_equal(bb.image_end, CSVSM_IGVM_REGION_BASE + 0x8000);
	assert_int_equal(bb.fw_gpa, (4ULL << 30) - fw_len);
	assert_true(bb.flags & CSVSM_IGVM_F_SECRETS_IN_FW);
	assert_true(bb.flags & CSVSM_IGVM_F_CPUID_IN_FW);
	assert_true(bb.flags & CSVSM_IGVM_F_MADT);
	assert_false(bb.flags & CSVSM_IGVM_F_REGION_IN_RAM);
	assert_int_equal(bb.memory_map.gpa, CSVSM_IGVM_MEMMAP_GPA);
	assert_int_equal(bb.vp_count.gpa, CSVSM_IGVM_GENERAL_GPA);
	assert_string_equal(bb.cmdline, "csvsm.guest_vmpl=2");
	assert_true(bb.n_ranges >= 6);
	for (uint32_t i = 0; i < bb.n_ranges; i++)
		for (uint32_t j = 0; j < i; j++)
			assert_false(bb.ranges[i].gpa < bb.ranges[j].gpa + bb.ranges[j].size &&
				     bb.ranges[j].gpa < bb.ranges[i].gpa + bb.ranges[i].size);
	free(img.file);

	/* The sim-linked ELF's address is flagged; bad inputs are refused. */
	segs[0].paddr = 0x4000000;
	segs[1].paddr = 0x4003000;
	p.entry = 0x4000010;
	assert_int_equal(igvm_csvsm_build(&p, &img, err, sizeof(err)), 0);
	assert_true(img.boot.flags & CSVSM_IGVM_F_REGION_IN_RAM);
	free(img.file);
	p.entry = 0x3000000;
	assert_int_equal(igvm_csvsm_build(&p, &img, err, sizeof(err)), -1);
	p.entry = 0x4000010;
	p.region_size = 0x4000;
	assert_int_equal(igvm_csvsm_build(&p, &img, err, sizeof(err)), -1);
	p.region_size = 0;
	segs[1].paddr = 0x4002000; /* overlaps the first segment */
	assert_int_equal(igvm_csvsm_build(&p, &img, err, sizeof(err)), -1);
	segs[1].paddr = 0x4003000;
	info.has_sev_meta = false;
	assert_int_equal(igvm_csvsm_build(&p, &img, err, sizeof(err)), -1);
	free(fw);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_crc32),
	    cmocka_unit_test(test_small_digest),
	    cmocka_unit_test(test_small_digest_by_hand),
	    cmocka_unit_test(test_every_header_type),
	    cmocka_unit_test(test_issue_order),
	    cmocka_unit_test(test_malformed),
	    cmocka_unit_test(test_fixed_header),
	    cmocka_unit_test(test_every_bit),
	    cmocka_unit_test(test_csvsm_image),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
