/*
 * Unit tests for the extended-request certificate table parser
 * (attest/certtable.c, interfaces §6.5): round trips through the builder,
 * the GUID byte order, and hostile tables (no terminator, out-of-bounds and
 * overflowing offsets, data over the entry array, duplicates, zero lengths).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include <attest/certtable.h>

static uint8_t tbl[4096];
static struct certtable_entry ent[CERTTABLE_MAX_ENTRIES];

static void put32(size_t off, uint32_t v)
{
	tbl[off] = (uint8_t)v;
	tbl[off + 1] = (uint8_t)(v >> 8);
	tbl[off + 2] = (uint8_t)(v >> 16);
	tbl[off + 3] = (uint8_t)(v >> 24);
}

/* ARK, ASK, VCEK with 3-, 4- and 5-byte bodies; returns the table size. */
static size_t make3(void)
{
	const uint8_t guids[3][CERTTABLE_GUID_LEN] = {0};
	uint8_t(*g)[CERTTABLE_GUID_LEN] = (uint8_t(*)[CERTTABLE_GUID_LEN])guids;
	memcpy(g[0], certtable_guid_ark, CERTTABLE_GUID_LEN);
	memcpy(g[1], certtable_guid_ask, CERTTABLE_GUID_LEN);
	memcpy(g[2], certtable_guid_vcek, CERTTABLE_GUID_LEN);
	const void *data[3] = {"ARK", "ASK!", "VCEK!"};
	const uint32_t lens[3] = {3, 4, 5};
	memset(tbl, 0xEE, sizeof(tbl));
	size_t n = certtable_build(tbl, sizeof(tbl), (const uint8_t(*)[CERTTABLE_GUID_LEN])g, data,
				   lens, 3);
	assert_int_equal(n, 4 * 24 + 12);
	return n;
}

static void test_round_trip(void **s)
{
	size_t count = 99, len = make3();
	assert_int_equal(certtable_parse(tbl, len, ent, CERTTABLE_MAX_ENTRIES, &count),
			 CERTTABLE_OK);
	assert_int_equal(count, 3);
	assert_int_equal(ent[0].kind, CERTTABLE_ARK);
	assert_int_equal(ent[1].kind, CERTTABLE_ASK);
	assert_int_equal(ent[2].kind, CERTTABLE_VCEK);
	assert_int_equal(ent[0].offset, 96);
	assert_int_equal(ent[2].length, 5);
	assert_memory_equal(ent[1].data, "ASK!", 4);
	assert_memory_equal(ent[2].data, "VCEK!", 5);
	assert_ptr_equal(certtable_find(ent, count, CERTTABLE_VCEK), &ent[2]);
	assert_null(certtable_find(ent, count, CERTTABLE_VLEK));
	/* Trailing bytes after the last certificate are allowed (page padding). */
	assert_int_equal(certtable_parse(tbl, sizeof(tbl), ent, CERTTABLE_MAX_ENTRIES, &count),
			 CERTTABLE_OK);
}

static void test_guid_byte_order(void **s)
{
	/* VCEK 63da758d-e664-4564-adc5-f4b93be8accd in RFC-4122 order. */
	const uint8_t vcek[16] = {0x63, 0xda, 0x75, 0x8d, 0xe6, 0x64, 0x45, 0x64,
				  0xad, 0xc5, 0xf4, 0xb9, 0x3b, 0xe8, 0xac, 0xcd};
	/* The same GUID in EFI mixed-endian order must NOT match. */
	const uint8_t mixed[16] = {0x8d, 0x75, 0xda, 0x63, 0x64, 0xe6, 0x64, 0x45,
				   0xad, 0xc5, 0xf4, 0xb9, 0x3b, 0xe8, 0xac, 0xcd};
	assert_int_equal(certtable_guid_kind(vcek), CERTTABLE_VCEK);
	assert_int_equal(certtable_guid_kind(mixed), CERTTABLE_OTHER);
	assert_int_equal(certtable_guid_kind(certtable_guid_vlek), CERTTABLE_VLEK);
	assert_int_equal(certtable_guid_kind(certtable_guid_ark), CERTTABLE_ARK);
	assert_int_equal(certtable_guid_kind(certtable_guid_ask), CERTTABLE_ASK);
	assert_int_equal(certtable_guid_ark[0], 0xc0);
	assert_int_equal(certtable_guid_ask[15], 0x82);
}

static void test_empty_table(void **s)
{
	size_t count = 99;
	memset(tbl, 0, 24);
	assert_int_equal(certtable_parse(tbl, 24, ent, CERTTABLE_MAX_ENTRIES, &count),
			 CERTTABLE_OK);
	assert_int_equal(count, 0);
	assert_int_equal(certtable_parse(tbl, 24, NULL, 0, &count), CERTTABLE_OK);
	assert_int_equal(certtable_parse(tbl, 23, ent, CERTTABLE_MAX_ENTRIES, &count),
			 CERTTABLE_ERR_NO_END);
	assert_int_equal(certtable_parse(tbl, 0, ent, CERTTABLE_MAX_ENTRIES, &count),
			 CERTTABLE_ERR_NO_END);
}

static void test_args(void **s)
{
	size_t count;
	assert_int_equal(certtable_parse(NULL, 24, ent, 1, &count), CERTTABLE_ERR_INVAL);
	assert_int_equal(certtable_parse(tbl, 24, ent, 1, NULL), CERTTABLE_ERR_INVAL);
	assert_int_equal(certtable_parse(tbl, 24, NULL, 1, &count), CERTTABLE_ERR_INVAL);
}

static void test_no_terminator(void **s)
{
	size_t count, len = make3();
	/* Cut inside the terminator and inside an entry. */
	assert_int_equal(certtable_parse(tbl, 3 * 24 + 23, ent, CERTTABLE_MAX_ENTRIES, &count),
			 CERTTABLE_ERR_NO_END);
	assert_int_equal(certtable_parse(tbl, 30, ent, CERTTABLE_MAX_ENTRIES, &count),
			 CERTTABLE_ERR_NO_END);
	/* Terminator overwritten: the next "entry" is certificate data. */
	tbl[3 * 24] = 1;
	assert_int_not_equal(certtable_parse(tbl, len, ent, CERTTABLE_MAX_ENTRIES, &count),
			     CERTTABLE_OK);
	/* A buffer of all-non-zero entries never ends. */
	memset(tbl, 0x41, sizeof(tbl));
	assert_int_not_equal(certtable_parse(tbl, sizeof(tbl), ent, CERTTABLE_MAX_ENTRIES, &count),
			     CERTTABLE_OK);
}

static void test_bounds(void **s)
{
	size_t count, len = make3();
	put32(2 * 24 + 20, 6); /* VCEK length one past the end */
	assert_int_equal(certtable_parse(tbl, len, ent, CERTTABLE_MAX_ENTRIES, &count),
			 CERTTABLE_ERR_BOUNDS);
	len = make3();
	put32(2 * 24 + 16, (uint32_t)len); /* offset at the end, length 5 */
	assert_int_equal(certtable_parse(tbl, len, ent, CERTTABLE_MAX_ENTRIES, &count),
			 CERTTABLE_ERR_BOUNDS);
	len = make3();
	put32(2 * 24 + 16, 0xFFFFFFFF);
	put32(2 * 24 + 20, 0xFFFFFFFF); /* offset + length wraps a u32 */
	assert_int_equal(certtable_parse(tbl, len, ent, CERTTABLE_MAX_ENTRIES, &count),
			 CERTTABLE_ERR_BOUNDS);
	len = make3();
	put32(0 * 24 + 16, 0xFFFFFFF0);
	put32(0 * 24 + 20, 0x20);
	assert_int_equal(certtable_parse(tbl, len, ent, CERTTABLE_MAX_ENTRIES, &count),
			 CERTTABLE_ERR_BOUNDS);
	assert_int_equal(count, 0); /* nothing reported on failure */
}

static void test_overlap(void **s)
{
	size_t count, len = make3();
	put32(1 * 24 + 16, 0); /* ASK "at" the table start */
	assert_int_equal(certtable_parse(tbl, len, ent, CERTTABLE_MAX_ENTRIES, &count),
			 CERTTABLE_ERR_OVERLAP);
	len = make3();
	put32(1 * 24 + 16, 4 * 24 - 1); /* one byte into the terminator */
	assert_int_equal(certtable_parse(tbl, len, ent, CERTTABLE_MAX_ENTRIES, &count),
			 CERTTABLE_ERR_OVERLAP);
}

static void test_empty_cert_and_zero_guid(void **s)
{
	size_t count, len = make3();
	put32(0 * 24 + 20, 0);
	assert_int_equal(certtable_parse(tbl, len, ent, CERTTABLE_MAX_ENTRIES, &count),
			 CERTTABLE_ERR_EMPTY_CERT);
	len = make3();
	memset(tbl + 24, 0, 16); /* zero GUID but an offset/length */
	assert_int_equal(certtable_parse(tbl, len, ent, CERTTABLE_MAX_ENTRIES, &count),
			 CERTTABLE_ERR_EMPTY_CERT);
}

static void test_duplicate(void **s)
{
	size_t count, len = make3();
	memcpy(tbl + 2 * 24, certtable_guid_ark, 16);
	assert_int_equal(certtable_parse(tbl, len, ent, CERTTABLE_MAX_ENTRIES, &count),
			 CERTTABLE_ERR_DUPLICATE);
}

static void test_too_many(void **s)
{
	size_t count, len = make3();
	assert_int_equal(certtable_parse(tbl, len, ent, 2, &count), CERTTABLE_ERR_TOO_MANY);
	assert_int_equal(certtable_parse(tbl, len, ent, 3, &count), CERTTABLE_OK);
	assert_int_equal(certtable_parse(tbl, len, NULL, 0, &count), CERTTABLE_ERR_TOO_MANY);
}

static void test_unknown_guid_kept(void **s)
{
	size_t count, len = make3();
	tbl[2 * 24] ^= 0xFF; /* VCEK GUID changed: an unknown entry */
	assert_int_equal(certtable_parse(tbl, len, ent, CERTTABLE_MAX_ENTRIES, &count),
			 CERTTABLE_OK);
	assert_int_equal(ent[2].kind, CERTTABLE_OTHER);
	assert_null(certtable_find(ent, count, CERTTABLE_VCEK));
}

static void test_build_limits(void **s)
{
	const uint8_t g[1][CERTTABLE_GUID_LEN] = {{1}};
	const void *d[1] = {"xyz"};
	const uint32_t l[1] = {3};
	assert_int_equal(certtable_build(tbl, 2 * 24 + 2, g, d, l, 1), 0);
	assert_int_equal(certtable_build(tbl, 2 * 24 + 3, g, d, l, 1), 51);
	assert_int_equal(certtable_build(NULL, 100, g, d, l, 1), 0);
	const uint32_t huge[1] = {0xFFFFFFFF};
	assert_int_equal(certtable_build(tbl, sizeof(tbl), g, d, huge, 1), 0);
}

static void test_strerror(void **s)
{
	for (int e = 0; e >= -7; e--)
		assert_string_not_equal(certtable_strerror(e), "unknown error");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_round_trip),
	    cmocka_unit_test(test_guid_byte_order),
	    cmocka_unit_test(test_empty_table),
	    cmocka_unit_test(test_args),
	    cmocka_unit_test(test_no_terminator),
	    cmocka_unit_test(test_bounds),
	    cmocka_unit_test(test_overlap),
	    cmocka_unit_test(test_empty_cert_and_zero_guid),
	    cmocka_unit_test(test_duplicate),
	    cmocka_unit_test(test_too_many),
	    cmocka_unit_test(test_unknown_guid_kept),
	    cmocka_unit_test(test_build_limits),
	    cmocka_unit_test(test_strerror),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
