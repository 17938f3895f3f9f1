/*
 * SVSM vTPM protocol decoder (tpm/vtpm_proto.c): QUERY, good requests with
 * the response written in place, and every error code of reference §3.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "tpm/vtpm.h"
#include "tpm/vtpm_proto.h"

static uint8_t page[VTPM_PROTO_PAGE_SIZE];

static void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t le32(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3];
}

/* Linux svsm_vtpm_cmd_request_fill(): {u32 cmd, u8 locality, u32 size, bytes}, packed. */
static void fill(uint32_t cmd, uint8_t loc, uint32_t size, const void *tpm, size_t n)
{
	memset(page, 0xA5, sizeof(page));
	put_le32(page, cmd);
	page[4] = loc;
	put_le32(page + 5, size);
	if (n)
		memcpy(page + 9, tpm, n);
}

static int setup(void **state)
{
	vtpm_destroy();
	return vtpm_init(NULL);
}

static int teardown(void **state)
{
	vtpm_destroy();
	return 0;
}

static void query(void **state)
{
	uint64_t rcx = 7, rdx = 7;
	assert_int_equal(vtpm_proto_query(&rcx, &rdx), SVSM_SUCCESS);
	assert_int_equal(rcx, 0x100); /* Linux probes BIT(8) */
	assert_int_equal(rdx, 0);
}

static void get_random_in_place(void **state)
{
	static const uint8_t getrandom[] = {0x80, 0x01, 0, 0, 0, 12, 0, 0, 0x01, 0x7B, 0, 16};

	fill(8, 0, sizeof(getrandom), getrandom, sizeof(getrandom));
	assert_int_equal(vtpm_proto_cmd(page, sizeof(page)), SVSM_SUCCESS);
	uint32_t n = le32(page);
	assert_int_equal(n, 10 + 2 + 16);
	assert_int_equal(page[4], 0x80);
	assert_int_equal(page[5], 0x01);
	assert_int_equal(be32(page + 4 + 2), n);
	assert_int_equal(be32(page + 4 + 6), 0);
	assert_int_equal(page[4 + 10], 0);
	assert_int_equal(page[4 + 11], 16);
}

static void tpm_error_is_svsm_success(void **state)
{
	static const uint8_t startup[] = {0x80, 0x01, 0, 0, 0, 12, 0, 0, 0x01, 0x44, 0, 0};
	static const uint8_t junk[] = {0x12, 0x34, 0, 0, 0, 10, 0xde, 0xad, 0xbe, 0xef};

	fill(8, 0, sizeof(startup), startup, sizeof(startup));
	assert_int_equal(vtpm_proto_cmd(page, sizeof(page)), SVSM_SUCCESS);
	assert_int_equal(le32(page), 10);
	assert_int_equal(be32(page + 4 + 6), 0x100); /* TPM_RC_INITIALIZE: csvsm started the TPM */

	fill(8, 0, sizeof(junk), junk, sizeof(junk));
	assert_int_equal(vtpm_proto_cmd(page, sizeof(page)), SVSM_SUCCESS);
	assert_int_equal(le32(page), 10);
	assert_int_not_equal(be32(page + 4 + 6), 0);

	/* size 0: still a valid request, the TPM answers with an error */
	fill(8, 0, 0, NULL, 0);
	assert_int_equal(vtpm_proto_cmd(page, sizeof(page)), SVSM_SUCCESS);
	assert_true(le32(page) >= 10 && le32(page) <= 4092);
	assert_int_not_equal(be32(page + 4 + 6), 0);

	/* the largest legal size (4087 bytes of garbage) */
	fill(8, 0, 4087, NULL, 0);
	assert_int_equal(vtpm_proto_cmd(page, sizeof(page)), SVSM_SUCCESS);
	assert_true(le32(page) >= 10 && le32(page) <= 4092);
}

static void vtpm_down_gives_tpm_failure(void **state)
{
	static const uint8_t getrandom[] = {0x80, 0x01, 0, 0, 0, 12, 0, 0, 0x01, 0x7B, 0, 16};

	vtpm_power_off();
	fill(8, 0, sizeof(getrandom), getrandom, sizeof(getrandom));
	assert_int_equal(vtpm_proto_cmd(page, sizeof(page)), SVSM_SUCCESS);
	assert_int_equal(le32(page), 10);
	assert_int_equal(be32(page + 4 + 6), 0x101);
	assert_int_equal(vtpm_init(NULL), 0);
}

static void error_codes(void **state)
{
	struct vtpm_proto_req req;
	static const uint32_t unsupported[] = {1,  2,  3,  4,  5,  6,  7,  9,  10, 11, 12,
					       13, 14, 15, 16, 17, 18, 20, 21, 25, 30};
	static const uint32_t unknown[] = {0,  19, 22,	  23,	       24,	   26,
					   29, 31, 0x108, 0x80000008u, 0xFFFFFFFFu};

	for (size_t i = 0; i < sizeof(unsupported) / sizeof(unsupported[0]); i++) {
		fill(unsupported[i], 0, 12, NULL, 0);
		assert_int_equal(vtpm_proto_cmd(page, sizeof(page)), SVSM_ERR_UNSUPPORTED_CALL);
		assert_int_equal(page[0], (uint8_t)unsupported[i]); /* page untouched */
		assert_int_equal(page[9], 0xA5);
	}
	for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
		fill(unknown[i], 0, 12, NULL, 0);
		assert_int_equal(vtpm_proto_cmd(page, sizeof(page)), SVSM_ERR_INVALID_PARAMETER);
	}
	for (unsigned loc = 1; loc < 256; loc++) {
		fill(8, (uint8_t)loc, 12, NULL, 0);
		assert_int_equal(vtpm_proto_decode(page, sizeof(page), &req),
				 SVSM_ERR_INVALID_PARAMETER);
	}
	fill(8, 4, 12, NULL, 0);
	assert_int_equal(vtpm_proto_cmd(page, sizeof(page)), SVSM_ERR_INVALID_PARAMETER);
	assert_int_equal(page[4], 4); /* nothing written back */
	static const uint32_t sizes[] = {4088,	      4096,	   0x10000,
					 0x7FFFFFFFu, 0xFFFFFFF7u, 0xFFFFFFFFu};
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		fill(8, 0, sizes[i], NULL, 0);
		assert_int_equal(vtpm_proto_cmd(page, sizeof(page)), SVSM_ERR_INVALID_PARAMETER);
		assert_int_equal(le32(page), 8);
	}
	fill(8, 0, 4087, NULL, 0);
	assert_int_equal(vtpm_proto_decode(page, sizeof(page), &req), SVSM_SUCCESS);
	assert_ptr_equal(req.cmd, page + 9);
	assert_int_equal(req.len, 4087);
	/* a shorter copy than the stated size, or a copy too short for the header */
	assert_int_equal(vtpm_proto_decode(page, 100, &req), SVSM_ERR_INVALID_PARAMETER);
	fill(8, 0, 91, NULL, 0);
	assert_int_equal(vtpm_proto_decode(page, 100, &req), SVSM_SUCCESS);
	assert_int_equal(vtpm_proto_decode(page, 8, &req), SVSM_ERR_INVALID_PARAMETER);
	assert_int_equal(vtpm_proto_decode(page, 4097, &req), SVSM_ERR_INVALID_PARAMETER);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(query),
	    cmocka_unit_test(get_random_in_place),
	    cmocka_unit_test(tpm_error_is_svsm_success),
	    cmocka_unit_test(vtpm_down_gives_tpm_failure),
	    cmocka_unit_test(error_codes),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
