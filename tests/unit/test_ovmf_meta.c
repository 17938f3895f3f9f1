/*
 * OVMF footer table / SEV metadata parser (attest/ovmf_meta.c): the real
 * images (sev-snp-measure fixtures, Debian's OVMF.fd) and hand-made
 * malformed ones. Fixtures come from $SHARED/fixtures/snp/measure
 * (default ../shared); a test that cannot find them skips.
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
#include <attest/ovmf_meta.h>

#define DEBIAN_OVMF "/usr/share/ovmf/OVMF.fd"

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

static void test_fixture_amdsev(void **state)
{
	static struct ovmf_info info;
	size_t len;
	uint8_t *img = load_fixture("ovmf-amdsev-last4k.bin", &len);

	if (!img)
		skip();
	assert_int_equal(ovmf_info_parse(img, len, &info), OVMF_META_OK);
	assert_true(info.has_reset_eip);
	assert_true(info.has_sev_meta);
	assert_true(info.has_hash_table);
	assert_int_equal(info.meta.version, 1);
	assert_true(info.meta.n_items >= 3);
	assert_true(ovmf_info_has_section(&info, OVMF_SECTION_SNP_SEC_MEM));
	assert_true(ovmf_info_has_section(&info, OVMF_SECTION_SNP_SECRETS));
	assert_true(ovmf_info_has_section(&info, OVMF_SECTION_CPUID));
	assert_true(ovmf_info_has_section(&info, OVMF_SECTION_SNP_KERNEL_HASHES));
	/* The AP reset EIP is in the firmware's low-memory SEC area (0x80xxxx). */
	assert_true(info.reset_eip > 0x800000 && info.reset_eip < 0x900000);
	for (uint32_t i = 0; i < info.meta.n_items; i++)
		print_message("amdsev item %u: gpa 0x%x size 0x%x type %u\n", i,
			      info.meta.items[i].gpa, info.meta.items[i].size,
			      info.meta.items[i].type);
	free(img);
}

static void test_fixture_ovmfx64(void **state)
{
	static struct ovmf_info info;
	size_t len;
	uint8_t *img = load_fixture("ovmf-ovmfx64-last4k.bin", &len);

	if (!img)
		skip();
	assert_int_equal(ovmf_info_parse(img, len, &info), OVMF_META_OK);
	assert_true(info.has_reset_eip);
	assert_true(info.has_sev_meta);
	assert_true(ovmf_info_has_section(&info, OVMF_SECTION_SNP_SECRETS));
	assert_true(ovmf_info_has_section(&info, OVMF_SECTION_CPUID));
	free(img);
}

static void test_debian_ovmf(void **state)
{
	static struct ovmf_info info;
	size_t len;
	uint8_t *img = load(DEBIAN_OVMF, &len);

	if (!img) {
		print_message("%s not found (package ovmf): skipping\n", DEBIAN_OVMF);
		skip();
	}
	assert_int_equal(ovmf_info_parse(img, len, &info), OVMF_META_OK);
	assert_true(info.footer.n_entries >= 3);
	assert_true(info.has_reset_eip);
	assert_true(info.has_sev_meta);
	assert_true(info.meta.n_items > 0);
	for (uint32_t i = 0; i < info.meta.n_items; i++) {
		const struct ovmf_sev_meta_item *it = &info.meta.items[i];

		print_message("Debian OVMF item %u: gpa 0x%x size 0x%x type %u\n", i, it->gpa,
			      it->size, it->type);
		assert_true(it->type >= 1 && it->type <= 0x10);
	}
	print_message("Debian OVMF: %zu footer entries, AP reset EIP 0x%x\n", info.footer.n_entries,
		      info.reset_eip);
	free(img);
}

/* ---- hand-made images ---- */

#define IMG_LEN 4096

struct ent {
	const uint8_t *guid;
	const uint8_t *data;
	size_t dlen;
	int size_override; /* >= 0: write this entry_size instead */
};

/* Build a footer table with ents[0] next to the footer. Returns table start. */
static size_t build(uint8_t *img, const struct ent *ents, int n, int full_override)
{
	size_t cur = IMG_LEN - 50;

	memset(img, 0, IMG_LEN);
	memcpy(img + IMG_LEN - 48, ovmf_guid_footer_table, 16);
	for (int i = 0; i < n; i++) {
		size_t esz = ents[i].dlen + 18;
		uint16_t w =
		    ents[i].size_override >= 0 ? (uint16_t)ents[i].size_override : (uint16_t)esz;

		memcpy(img + cur - 16, ents[i].guid, 16);
		img[cur - 18] = (uint8_t)w;
		img[cur - 17] = (uint8_t)(w >> 8);
		if (ents[i].dlen)
			memcpy(img + cur - esz, ents[i].data, ents[i].dlen);
		cur -= esz;
	}
	{
		size_t full =
		    full_override >= 0 ? (size_t)full_override : (IMG_LEN - 50 - cur) + 18;

		img[IMG_LEN - 50] = (uint8_t)full;
		img[IMG_LEN - 49] = (uint8_t)(full >> 8);
	}
	return cur;
}

static void le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

/* An image with reset block + metadata (2 items at image offset 0x800). */
static void good_image(uint8_t *img, uint32_t meta_off, uint32_t meta_len, uint32_t nitems,
		       uint32_t version)
{
	static uint8_t reset[4], metaoff[4];
	struct ent e[2] = {
	    {ovmf_guid_sev_es_reset_block, reset, 4, -1},
	    {ovmf_guid_sev_metadata, metaoff, 4, -1},
	};

	le32(reset, 0xFFFFB004);
	le32(metaoff, meta_off);
	build(img, e, 2, -1);
	if (meta_off <= IMG_LEN && meta_off >= 16) {
		uint8_t *h = img + IMG_LEN - meta_off;

		memcpy(h, "ASEV", 4);
		le32(h + 4, meta_len);
		le32(h + 8, version);
		le32(h + 12, nitems);
		if (meta_off >= 16 + 24) {
			le32(h + 16, 0x800000);
			le32(h + 20, 0x1000);
			le32(h + 24, OVMF_SECTION_SNP_SEC_MEM);
			le32(h + 28, 0x801000);
			le32(h + 32, 0x1000);
			le32(h + 36, OVMF_SECTION_SNP_SECRETS);
		}
	}
}

static void test_synthetic_good(void **state)
{
	static uint8_t img[IMG_LEN];
	static struct ovmf_info info;

	good_image(img, IMG_LEN - 0x800, 16 + 24, 2, 1);
	assert_int_equal(ovmf_info_parse(img, IMG_LEN, &info), OVMF_META_OK);
	assert_int_equal(info.footer.n_entries, 2);
	assert_true(info.has_reset_eip);
	assert_int_equal(info.reset_eip, 0xFFFFB004);
	assert_int_equal(info.meta.n_items, 2);
	assert_int_equal(info.meta.items[1].gpa, 0x801000);
	assert_int_equal(info.meta.items[1].type, OVMF_SECTION_SNP_SECRETS);
	assert_false(info.has_svsm_info);
}

static void test_truncated(void **state)
{
	static uint8_t img[IMG_LEN];
	static struct ovmf_footer f;

	good_image(img, IMG_LEN - 0x800, 16 + 24, 2, 1);
	/* Too small to hold a footer at all. */
	assert_int_equal(ovmf_footer_parse(img, 0, &f), OVMF_META_ERR_NO_FOOTER);
	assert_int_equal(ovmf_footer_parse(img + IMG_LEN - 49, 49, &f), OVMF_META_ERR_NO_FOOTER);
	/* The footer alone (50 bytes): the table claims entries before the start. */
	assert_int_equal(ovmf_footer_parse(img + IMG_LEN - 50, 50, &f), OVMF_META_ERR_BAD_TABLE);
	/* Every suffix of the image: an error or success, never a bad read. */
	for (size_t n = 0; n <= IMG_LEN; n++) {
		static struct ovmf_info info;
		uint8_t *copy = malloc(n ? n : 1);

		memcpy(copy, img + IMG_LEN - n, n);
		(void)ovmf_info_parse(copy, n, &info);
		free(copy);
	}
	/* Cut off the tail: the footer GUID moves, so no footer. */
	assert_int_equal(ovmf_footer_parse(img, IMG_LEN - 1, &f), OVMF_META_ERR_NO_FOOTER);
}

static void test_no_footer(void **state)
{
	static uint8_t img[IMG_LEN];
	static struct ovmf_info info;

	memset(img, 0xAA, sizeof(img));
	assert_int_equal(ovmf_info_parse(img, IMG_LEN, &info), OVMF_META_ERR_NO_FOOTER);
	assert_int_equal(ovmf_info_parse(NULL, IMG_LEN, &info), OVMF_META_ERR_INVAL);
}

static void test_table_size_bad(void **state)
{
	static uint8_t img[IMG_LEN];
	static struct ovmf_footer f;
	static uint8_t d[4];
	struct ent e = {ovmf_guid_sev_es_reset_block, d, 4, -1};

	/* Table size smaller than the footer itself. */
	build(img, &e, 1, 17);
	assert_int_equal(ovmf_footer_parse(img, IMG_LEN, &f), OVMF_META_ERR_BAD_TABLE);
	/* Table size pointing before the start of the image. */
	build(img, &e, 1, 0xFFFF);
	assert_int_equal(ovmf_footer_parse(img, IMG_LEN, &f), OVMF_META_ERR_BAD_TABLE);
	build(img, &e, 1, IMG_LEN - 32 + 1);
	assert_int_equal(ovmf_footer_parse(img, IMG_LEN, &f), OVMF_META_ERR_BAD_TABLE);
	/* Exactly the footer: an empty table is fine. */
	build(img, &e, 0, 18);
	assert_int_equal(ovmf_footer_parse(img, IMG_LEN, &f), OVMF_META_OK);
	assert_int_equal(f.n_entries, 0);
	/* Leftover bytes that cannot form an entry. */
	build(img, &e, 1, 18 + 22 + 5);
	assert_int_equal(ovmf_footer_parse(img, IMG_LEN, &f), OVMF_META_ERR_BAD_TABLE);
}

static void test_entry_size_bad(void **state)
{
	static uint8_t img[IMG_LEN];
	static struct ovmf_footer f;
	static uint8_t d[4];
	struct ent e[2] = {{ovmf_guid_sev_es_reset_block, d, 4, -1},
			   {ovmf_guid_sev_metadata, d, 4, -1}};

	/* Zero size: would never advance (a cycle); must be rejected. */
	e[0].size_override = 0;
	build(img, e, 2, -1);
	assert_int_equal(ovmf_footer_parse(img, IMG_LEN, &f), OVMF_META_ERR_BAD_TABLE);
	/* Below the 18-byte trailer. */
	e[0].size_override = 17;
	build(img, e, 2, -1);
	assert_int_equal(ovmf_footer_parse(img, IMG_LEN, &f), OVMF_META_ERR_BAD_TABLE);
	/* Larger than the table (points outside it / the image). */
	e[0].size_override = 0xFFFF;
	build(img, e, 2, -1);
	assert_int_equal(ovmf_footer_parse(img, IMG_LEN, &f), OVMF_META_ERR_BAD_TABLE);
	e[0].size_override = -1;
	e[1].size_override = 23;
	build(img, e, 2, -1);
	assert_int_equal(ovmf_footer_parse(img, IMG_LEN, &f), OVMF_META_ERR_BAD_TABLE);
	/* Duplicate GUID. */
	e[1].size_override = -1;
	e[1].guid = ovmf_guid_sev_es_reset_block;
	build(img, e, 2, -1);
	assert_int_equal(ovmf_footer_parse(img, IMG_LEN, &f), OVMF_META_ERR_BAD_TABLE);
}

static void test_too_many_entries(void **state)
{
	static uint8_t img[IMG_LEN];
	static uint8_t guids[OVMF_FOOTER_MAX_ENTRIES + 1][16];
	static struct ovmf_footer f;
	struct ent e[OVMF_FOOTER_MAX_ENTRIES + 1];

	for (int i = 0; i <= OVMF_FOOTER_MAX_ENTRIES; i++) {
		guids[i][0] = (uint8_t)i;
		e[i] = (struct ent){guids[i], NULL, 0, -1};
	}
	build(img, e, OVMF_FOOTER_MAX_ENTRIES, -1);
	assert_int_equal(ovmf_footer_parse(img, IMG_LEN, &f), OVMF_META_OK);
	assert_int_equal(f.n_entries, OVMF_FOOTER_MAX_ENTRIES);
	build(img, e, OVMF_FOOTER_MAX_ENTRIES + 1, -1);
	assert_int_equal(ovmf_footer_parse(img, IMG_LEN, &f), OVMF_META_ERR_TOO_MANY);
}

static void test_short_entries(void **state)
{
	static uint8_t img[IMG_LEN];
	static struct ovmf_info info;
	static uint8_t d[8];
	struct ent e = {ovmf_guid_sev_metadata, d, 3, -1};

	build(img, &e, 1, -1);
	assert_int_equal(ovmf_info_parse(img, IMG_LEN, &info), OVMF_META_ERR_SHORT_ENTRY);
	e.guid = ovmf_guid_sev_es_reset_block;
	build(img, &e, 1, -1);
	assert_int_equal(ovmf_info_parse(img, IMG_LEN, &info), OVMF_META_ERR_SHORT_ENTRY);
	e.guid = ovmf_guid_sev_hash_table;
	e.dlen = 7;
	build(img, &e, 1, -1);
	assert_int_equal(ovmf_info_parse(img, IMG_LEN, &info), OVMF_META_ERR_SHORT_ENTRY);
}

static void test_metadata_bad(void **state)
{
	static uint8_t img[IMG_LEN];
	static struct ovmf_info info;

	/* Offset beyond the image, huge, or too small for the header. */
	good_image(img, IMG_LEN + 1, 40, 2, 1);
	assert_int_equal(ovmf_info_parse(img, IMG_LEN, &info), OVMF_META_ERR_BAD_META);
	good_image(img, 0xFFFFFFFF, 40, 2, 1);
	assert_int_equal(ovmf_info_parse(img, IMG_LEN, &info), OVMF_META_ERR_BAD_META);
	good_image(img, 15, 40, 2, 1);
	assert_int_equal(ovmf_info_parse(img, IMG_LEN, &info), OVMF_META_ERR_BAD_META);
	good_image(img, 0, 40, 2, 1);
	assert_int_equal(ovmf_info_parse(img, IMG_LEN, &info), OVMF_META_ERR_BAD_META);
	/* Wrong signature. */
	good_image(img, IMG_LEN - 0x800, 40, 2, 1);
	img[0x800] = 'X';
	assert_int_equal(ovmf_info_parse(img, IMG_LEN, &info), OVMF_META_ERR_BAD_META);
	/* Length past the end of the image, or shorter than the header. */
	good_image(img, IMG_LEN - 0x800, IMG_LEN - 0x800 + 1, 2, 1);
	assert_int_equal(ovmf_info_parse(img, IMG_LEN, &info), OVMF_META_ERR_BAD_META);
	good_image(img, IMG_LEN - 0x800, 0xFFFFFFFF, 2, 1);
	assert_int_equal(ovmf_info_parse(img, IMG_LEN, &info), OVMF_META_ERR_BAD_META);
	good_image(img, IMG_LEN - 0x800, 15, 0, 1);
	assert_int_equal(ovmf_info_parse(img, IMG_LEN, &info), OVMF_META_ERR_BAD_META);
	/* num_items huge / past the stated length. */
	good_image(img, IMG_LEN - 0x800, 40, 0xFFFFFFFF, 1);
	assert_int_equal(ovmf_info_parse(img, IMG_LEN, &info), OVMF_META_ERR_TOO_MANY);
	good_image(img, IMG_LEN - 0x800, 40, 0x15555556, 1); /* n*12 wraps 32 bits */
	assert_int_equal(ovmf_info_parse(img, IMG_LEN, &info), OVMF_META_ERR_TOO_MANY);
	good_image(img, IMG_LEN - 0x800, 40, 3, 1);
	assert_int_equal(ovmf_info_parse(img, IMG_LEN, &info), OVMF_META_ERR_BAD_META);
	/* Header at the very end: items would run past the image. */
	good_image(img, 16, 16 + 12, 1, 1);
	assert_int_equal(ovmf_info_parse(img, IMG_LEN, &info), OVMF_META_ERR_BAD_META);
	/* Unknown version. */
	good_image(img, IMG_LEN - 0x800, 40, 2, 2);
	assert_int_equal(ovmf_info_parse(img, IMG_LEN, &info), OVMF_META_ERR_BAD_META);
	/* Zero items is well formed. */
	good_image(img, IMG_LEN - 0x800, 16, 0, 1);
	assert_int_equal(ovmf_info_parse(img, IMG_LEN, &info), OVMF_META_OK);
	assert_int_equal(info.meta.n_items, 0);
}

/* Deterministic mutation of the real fixture: no crash, ever (ASan/valgrind-clean). */
static void test_mutations(void **state)
{
	size_t len;
	uint8_t *orig = load_fixture("ovmf-amdsev-last4k.bin", &len);
	uint32_t x = 12345;

	if (!orig)
		skip();
	for (int round = 0; round < 20000; round++) {
		static struct ovmf_info info;
		uint8_t *img = malloc(len);

		memcpy(img, orig, len);
		for (int k = 0; k < 4; k++) {
			x = x * 1103515245u + 12345u;
			/* Bias mutations to the last 0x600 bytes (table + metadata). */
			size_t pos = len - 1 - ((x >> 8) % 0x600);

			x = x * 1103515245u + 12345u;
			img[pos] = (uint8_t)(x >> 16);
		}
		(void)ovmf_info_parse(img, len, &info);
		if (info.has_sev_meta)
			assert_true(info.meta.n_items <= OVMF_SEV_META_MAX_ITEMS);
		free(img);
	}
	free(orig);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fixture_amdsev),   cmocka_unit_test(test_fixture_ovmfx64),
	    cmocka_unit_test(test_debian_ovmf),	     cmocka_unit_test(test_synthetic_good),
	    cmocka_unit_test(test_truncated),	     cmocka_unit_test(test_no_footer),
	    cmocka_unit_test(test_table_size_bad),   cmocka_unit_test(test_entry_size_bad),
	    cmocka_unit_test(test_too_many_entries), cmocka_unit_test(test_short_entries),
	    cmocka_unit_test(test_metadata_bad),     cmocka_unit_test(test_mutations),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
